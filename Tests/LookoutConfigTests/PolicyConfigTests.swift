import Testing
@testable import LookoutConfig

/// `redirects` and `retry`: the shapes the issue names, their defaults, and every mistake with its place.
@Suite("Redirect and retry rules") struct PolicyConfigTests {
    @Test func theIssueShapeLoads() throws {
        let config = try load("""
        redirects:
          rules:
            - hosts: ["**.example.com"]
              follow: true
              max_hops: 5
              allow_downgrade: false
              allow_cross_host: true
              rewrite:
                - from: "http://old.example.com/"
                  to: "https://new.example.com/"
        retry:
          rules:
            - hosts: ["**"]
              limit: 2
              methods: [GET, HEAD, OPTIONS, PUT, DELETE]
              statuses: [502, 503, 504]
              errors: [upstream_connect_failed, upstream_connect_timeout, upstream_closed]
              backoff: {base: 0.2, multiplier: 2, max: 5, jitter: true}
              retry_after: true
              max_retry_after: 30
              replay_body_bytes: 10485760
              resume: true
              max_resumes: 5
        """)
        let redirect = try #require(config.redirects.rules.first)
        #expect(redirect.hosts.map(\.text) == ["**.example.com"])
        #expect(redirect.follow && redirect.maxHops == 5 && !redirect.allowDowngrade && redirect.allowCrossHost)
        #expect(redirect.rewrites == [.init(from: "http://old.example.com/", to: "https://new.example.com/")])
        let retry = try #require(config.retry.rules.first)
        #expect(retry.limit == 2)
        #expect(retry.methods == ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"])
        #expect(retry.statuses == [502, 503, 504])
        #expect(retry.errors == ["upstream_connect_failed", "upstream_connect_timeout", "upstream_closed"])
        #expect(retry.backoffBase == 0.2 && retry.backoffMultiplier == 2 && retry.backoffMax == 5 && retry.jitter)
        #expect(retry.retryAfter && retry.maxRetryAfter == 30 && retry.replayBodyBytes == 10_485_760)
        #expect(retry.resume && retry.maxResumes == 5)
    }

    @Test func defaultsOfARuleAndOfTheSections() throws {
        #expect(defaults.redirects.rules.isEmpty && defaults.retry.rules.isEmpty)
        let config = try load("""
        redirects:
          rules: [{hosts: ["a.example"]}]
        retry:
          rules: [{hosts: ["a.example"]}]
        """)
        let redirect = try #require(config.redirects.rules.first)
        #expect(!redirect.follow && redirect.maxHops == 10 && !redirect.allowDowngrade && redirect.allowCrossHost)
        let retry = try #require(config.retry.rules.first)
        #expect(retry.limit == 0 && retry.statuses == [502, 503, 504] && retry.methods.contains("DELETE"))
        #expect(!retry.methods.contains("POST") && retry.replayBodyBytes == 10_485_760)
        #expect(!retry.resume && retry.maxResumes == 3)
    }

    @Test func mistakesNameTheirPlace() {
        #expect(error("retry:\n  rules:\n    - hosts: [\"a\"]\n      max_resumes: 0\n")?
            .contains("retry.rules[0].max_resumes: must be between 1 and 100") == true)
        #expect(error("retry:\n  rules:\n    - hosts: [\"a\"]\n      resume: often\n")?
            .contains("retry.rules[0].resume: expected true or false") == true)
        #expect(error("redirects:\n  rules:\n    - follow: true\n") == "3:7 redirects.rules[0].hosts: a rule needs hosts (\"**\" for every host)")
        #expect(error("redirects:\n  rules:\n    - hosts: [\"a.example\"]\n      follow: maybe\n")
                == "4:15 redirects.rules[0].follow: expected true or false, got \"maybe\"")
        #expect(error("redirects:\n  rules:\n    - hosts: [\"a.example\"]\n      max_hops: 1000\n")
                == "4:17 redirects.rules[0].max_hops: must be between 0 and 100")
        #expect(error("redirects:\n  rules:\n    - hosts: [\"a.example\"]\n      folow: true\n")
                == "4:7 redirects.rules[0].folow: unknown key 'folow'; did you mean 'follow'?")
        #expect(error("redirects:\n  rules:\n    - hosts: [\"a.example\"]\n      rewrite:\n        - from: \"old/\"\n          to: \"https://n/\"\n")
                == "5:17 redirects.rules[0].rewrite[0].from: expected an absolute http:// or https:// URL prefix, got the quoted string \"old/\"")
        #expect(error("redirects:\n  rules:\n    - hosts: [\"a.example\"]\n    - hosts: [\"A.example\"]\n")?
                .hasPrefix("4:14 redirects.rules[1].hosts: \"A.example\" is already covered by redirects.rules[0]") == true)
        #expect(error("retry:\n  rules:\n    - hosts: [\"**\"]\n      statuses: [200]\n")
                == "4:18 retry.rules[0].statuses[0]: only 4xx and 5xx responses can be retried")
        #expect(error("retry:\n  rules:\n    - hosts: [\"**\"]\n      errors: [upstream_conect_failed]\n")
                == "4:16 retry.rules[0].errors[0]: \"upstream_conect_failed\" is not a retryable error code; did you mean 'upstream_connect_failed'?")
        #expect(error("retry:\n  rules:\n    - hosts: [\"**\"]\n      methods: [get]\n")
                == "4:17 retry.rules[0].methods[0]: \"get\" is not a request method (methods are case-sensitive tokens, e.g. GET)")
        #expect(error("retry:\n  rules:\n    - hosts: [\"**\"]\n      limit: 11\n")
                == "4:14 retry.rules[0].limit: must be between 0 and 10 (extra attempts after the first)")
        #expect(error("retry:\n  rules:\n    - hosts: [\"**\"]\n      backoff: {base: -1}\n")
                == "4:23 retry.rules[0].backoff.base: must not be negative (0 = disabled)")
        #expect(error("retry:\n  rules:\n    - hosts: [\"**\"]\n      backoff: {multiplier: 0.5}\n")
                == "4:29 retry.rules[0].backoff.multiplier: expected a number from 1 to 100, got \"0.5\"")
        #expect(error("retry:\n  rules:\n    - hosts: [\"**\"]\n      backof: {}\n")
                == "4:7 retry.rules[0].backof: unknown key 'backof'; did you mean 'backoff'?")
        #expect(error("retry:\n  rules: {}\n") == "2:10 retry.rules: expected a list of retry rules (each a mapping with hosts), got a mapping")
    }
}
