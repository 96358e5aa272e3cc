import LookoutModel
import Testing
@testable import LookoutConfig

@Suite struct OTelConfigTests {
    @Test func readsTheIssueShape() throws {
        let config = try load("""
        otel:
          endpoint: "http://127.0.0.1:4318"
          protocol: http/json
          headers: {"Authorization": "Bearer abc"}
          compression: none
          traces: true
          logs: false
          sample_ratio: 0.5
          propagate: false
          resource: {"service.name": "edge", "deployment.environment": "dev"}
          batch: {max_records: 100, max_delay_ms: 250, max_queue: 5000}
          timeout_ms: 3000
        """)
        let otel = config.otel
        #expect(otel.endpoint == "http://127.0.0.1:4318" && otel.wireProtocol == .json && !otel.gzip && !otel.logs)
        #expect(otel.headers.map { "\($0.0)=\($0.1)" } == ["Authorization=Bearer abc"] && otel.sampleRatio == 0.5 && !otel.propagate)
        #expect(otel.resource.map(\.0) == ["service.name", "deployment.environment"])
        #expect(otel.maxBatchRecords == 100 && otel.maxDelayMilliseconds == 250 && otel.maxQueue == 5000 && otel.timeoutMilliseconds == 3000)
        #expect(!LookoutConfiguration().otel.isEnabled, "off unless an endpoint is given")
    }

    @Test func errorsNameTheKey() {
        #expect(error("otel:\n  endpoint: \"c:4318\"")?.contains("otel.endpoint: expected http[s]://HOST") == true)
        #expect(error("otel:\n  endpoint: \"ftp://c\"")?.contains("otel.endpoint") == true)
        #expect(error("otel:\n  protocol: grpc")?.contains("expected http/protobuf or http/json") == true)
        #expect(error("otel:\n  compression: zstd")?.contains("otel.compression") == true)
        #expect(error("otel:\n  sample_ratio: 1.5")?.contains("otel.sample_ratio") == true)
        #expect(error("otel:\n  batch: {max_queue: 0}")?.contains("otel.batch.max_queue") == true)
        #expect(error("otel:\n  batch: {size: 1}")?.contains("otel.batch.size") == true)
        #expect(error("otel:\n  headers: [a]")?.contains("otel.headers") == true)
    }
}
