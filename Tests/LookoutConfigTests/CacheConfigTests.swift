import Testing
@testable import LookoutConfig

@Suite struct CacheConfigTests {
    @Test func defaultsAreOffAndBounded() {
        let cache = LookoutConfiguration().cache
        #expect(!cache.enabled && cache.path == "" && cache.rules.isEmpty)
        #expect(cache.maxSizeBytes == 1_073_741_824 && cache.maxObjectBytes == 67_108_864 && cache.memoryBytes == 67_108_864)
    }

    @Test func readsTheIssueShape() throws {
        let config = try load("""
        cache:
          enabled: true
          path: /var/cache/lookout
          max_size_bytes: 2000000
          max_object_bytes: 100000
          memory_bytes: 0
          rules:
            - hosts: ["**.example.com"]
              store: true
              default_ttl: 30
            - hosts: ["private.example.org"]
              store: false
              cdn_cache_control: false
        """)
        #expect(config.cache.enabled && config.cache.path == "/var/cache/lookout")
        #expect(config.cache.maxSizeBytes == 2_000_000 && config.cache.maxObjectBytes == 100_000 && config.cache.memoryBytes == 0)
        #expect(config.cache.rules.count == 2)
        #expect(config.cache.rules[0].store && config.cache.rules[0].defaultTTL == 30)
        #expect(config.cache.rules[0].hosts.map(\.text) == ["**.example.com"])
        #expect(!config.cache.rules[1].store && config.cache.rules[1].defaultTTL == 0)
        #expect(config.cache.rules[0].cdnCacheControl && !config.cache.rules[1].cdnCacheControl)
    }

    @Test func homeIsExpandedAndEmptyMeansStateDir() throws {
        #expect(try load("cache:\n  path: \"~/c\"").cache.path == testHome + "/c")
        #expect(try load("cache:\n  path: \"\"").cache.path == "")
    }

    @Test func errorsNameTheKey() {
        #expect(error("cache:\n  enabled: yes please") == "2:12 cache.enabled: expected true or false, got \"yes please\"")
        #expect(error("cache:\n  max_size_bytes: 0") == "2:19 cache.max_size_bytes: must be at least 1")
        #expect(error("cache:\n  memory_bytes: -1")?.contains("cache.memory_bytes: must not be negative") == true)
        #expect(error("cache:\n  max_size_bytes: 10\n  max_object_bytes: 20")?
            .contains("cache.max_object_bytes: cache.max_object_bytes (20) must not exceed cache.max_size_bytes (10)") == true)
        #expect(error("cache:\n  rules:\n    - hosts: [\"a.com\"]\n      default_ttl: -5")?
            .contains("cache.rules[0].default_ttl: must be between 0") == true)
        #expect(error("cache:\n  rules:\n    - hosts: [\"a.com\"]\n      stor: false")?.contains("cache.rules[0]") == true)
        #expect(error("cache:\n  rules:\n    - store: false")?.contains("cache.rules[0].hosts: a rule needs hosts") == true)
        #expect(error("cache:\n  rules:\n    - hosts: [\"a.com\"]\n      cdn_cache_control: sometimes")?
            .contains("cache.rules[0].cdn_cache_control: expected true or false") == true)
        #expect(error("cache:\n  sise: 3")?.contains("cache.sise") == true)
    }
}

@Suite struct CaptureConfigTests {
    @Test func defaultsCaptureNothing() {
        let capture = LookoutConfiguration().capture
        #expect(capture.path == "" && capture.maxTotalBytes == 1_073_741_824 && capture.rules.isEmpty)
    }

    @Test func readsTheIssueShape() throws {
        let config = try load("""
        capture:
          path: /var/lib/lookout/capture
          max_total_bytes: 5000000
          rules:
            - hosts: ["api.example.com"]
              request_bodies: true
              response_bodies: false
              max_body_bytes: 1048576
        """)
        #expect(config.capture.path == "/var/lib/lookout/capture" && config.capture.maxTotalBytes == 5_000_000)
        let rule = try #require(config.capture.rules.first)
        #expect(rule.hosts.map(\.text) == ["api.example.com"] && rule.requestBodies && !rule.responseBodies)
        #expect(rule.maxBodyBytes == 1_048_576)
    }

    @Test func errorsNameTheKey() {
        #expect(error("capture:\n  max_total_bytes: 0") == "2:20 capture.max_total_bytes: must be at least 1")
        #expect(error("capture:\n  rules:\n    - hosts: [\"a.com\"]\n      max_body_bytes: 0")?
            .contains("capture.rules[0].max_body_bytes: must be at least 1") == true)
        #expect(error("capture:\n  rules:\n    - hosts: [\"a.com\"]\n      response_bodies: maybe")?
            .contains("capture.rules[0].response_bodies: expected true or false") == true)
        #expect(error("capture:\n  enabled: true")?.contains("capture.enabled") == true)
    }
}
