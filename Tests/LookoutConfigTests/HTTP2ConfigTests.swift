import Testing
@testable import LookoutConfig

@Suite struct HTTP2ConfigTests {
    @Test func defaultsOfferH2WithBoundedStreams() {
        let http2 = LookoutConfiguration().http2
        #expect(http2.client && http2.upstream && http2.upstreamH2CHosts.isEmpty)
        #expect(http2.maxConcurrentStreams == 128 && http2.maxHeaderListBytes == 65536)
    }

    @Test func readsTheIssueShape() throws {
        let config = try load("""
        http2:
          client: true
          upstream: false
          upstream_h2c_hosts: ["grpc.internal", "*.svc.local"]
          max_concurrent_streams: 64
          max_header_list_bytes: 32768
        """)
        #expect(config.http2.client && !config.http2.upstream)
        #expect(config.http2.upstreamH2CHosts.map(\.text) == ["grpc.internal", "*.svc.local"])
        #expect(config.http2.maxConcurrentStreams == 64 && config.http2.maxHeaderListBytes == 32768)
    }

    @Test func errorsNameTheKey() {
        #expect(error("http2:\n  client: maybe") == "2:11 http2.client: expected true or false, got \"maybe\"")
        #expect(error("http2:\n  max_concurrent_streams: 0")?.contains("http2.max_concurrent_streams: must be between 1 and 10000") == true)
        #expect(error("http2:\n  max_header_list_bytes: 100")?.contains("http2.max_header_list_bytes: must be between 1024 and 16777216") == true)
        #expect(error("http2:\n  upstream_h2c_hosts: [\"a.*.com\"]")?.contains("http2.upstream_h2c_hosts[0]") == true)
        #expect(error("http2:\n  streams: 5")?.contains("http2.streams") == true)
    }
}
