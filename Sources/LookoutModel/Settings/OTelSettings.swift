/// `otel`: exchanges as OpenTelemetry traces and records as OTLP logs, sent to a Collector.
public struct OTelSettings: Sendable, Equatable {
    public enum WireProtocol: String, Sendable {
        case protobuf = "http/protobuf"
        case json = "http/json"
    }

    /// `endpoint`: the OTLP/HTTP base URL; `/v1/traces` and `/v1/logs` are appended. Empty: off.
    public var endpoint = ""
    public var wireProtocol = WireProtocol.protobuf
    /// `headers`, sent with every export (secrets: never logged).
    public var headers: [(String, String)] = []
    public var gzip = true
    public var traces = true
    public var logs = true
    public var sampleRatio = 1.0
    /// `propagate`: continue an incoming `traceparent` and send one to the origin.
    public var propagate = true
    /// `resource` attributes, `service.name` among them.
    public var resource: [(String, String)] = [("service.name", "lookout")]
    public var maxBatchRecords = 512
    public var maxDelayMilliseconds = 1000
    public var maxQueue = 65536
    public var timeoutMilliseconds = 10_000

    public init() {}

    /// Exporting is on (an endpoint is set and a signal is asked for).
    public var isEnabled: Bool { !endpoint.isEmpty && (traces || logs) }

    public static func == (a: OTelSettings, b: OTelSettings) -> Bool {
        a.endpoint == b.endpoint && a.wireProtocol == b.wireProtocol && a.headers.elementsEqual(b.headers, by: ==)
            && a.gzip == b.gzip && a.traces == b.traces && a.logs == b.logs && a.sampleRatio == b.sampleRatio
            && a.propagate == b.propagate && a.resource.elementsEqual(b.resource, by: ==)
            && a.maxBatchRecords == b.maxBatchRecords && a.maxDelayMilliseconds == b.maxDelayMilliseconds
            && a.maxQueue == b.maxQueue && a.timeoutMilliseconds == b.timeoutMilliseconds
    }

    /// The standard variables win over the file (OpenTelemetry "Environment Variable
    /// Specification" and the OTLP exporter's): `OTEL_EXPORTER_OTLP_ENDPOINT`,
    /// `OTEL_EXPORTER_OTLP_HEADERS` (`k=v,k2=v2`, percent-encoded), `OTEL_SERVICE_NAME` and
    /// `OTEL_RESOURCE_ATTRIBUTES` (`k=v,…`; `OTEL_SERVICE_NAME` wins for `service.name`).
    public mutating func applyEnvironment(_ environment: [String: String]) {
        if let endpoint = environment["OTEL_EXPORTER_OTLP_ENDPOINT"], !endpoint.isEmpty { self.endpoint = endpoint }
        if let headers = environment["OTEL_EXPORTER_OTLP_HEADERS"] {
            for (key, value) in Self.pairs(headers) {
                self.headers.removeAll { $0.0.lowercased() == key.lowercased() }
                self.headers.append((key, value))
            }
        }
        if let attributes = environment["OTEL_RESOURCE_ATTRIBUTES"] {
            for (key, value) in Self.pairs(attributes) { setResource(key, value) }
        }
        if let name = environment["OTEL_SERVICE_NAME"], !name.isEmpty { setResource("service.name", name) }
    }

    private mutating func setResource(_ key: String, _ value: String) {
        resource.removeAll { $0.0 == key }
        resource.append((key, value))
    }

    /// `k=v,k2=v2` with percent-encoded keys and values (W3C Baggage's octets, as the spec says).
    static func pairs(_ text: String) -> [(String, String)] {
        text.split(separator: ",").compactMap { item in
            guard let equals = item.firstIndex(of: "=") else { return nil }
            let key = percentDecoded(item[..<equals]).trimmingSpaces, value = percentDecoded(item[item.index(after: equals)...]).trimmingSpaces
            return key.isEmpty ? nil : (key, value)
        }
    }

    static func percentDecoded(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%"), let high = iterator.next(), let low = iterator.next(),
               let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) {
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}

extension OTelSettings {
    /// Why `text` is not an endpoint Lookout can send to, or nil.
    public static func endpointProblem(_ text: String) -> String? {
        guard !text.isEmpty else { return nil }
        guard OTLPEndpoint(text) != nil else { return "expected http[s]://HOST[:PORT][/PATH], got \(text)" }
        return nil
    }
}
