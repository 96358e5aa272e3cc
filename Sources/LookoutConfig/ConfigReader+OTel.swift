import LookoutModel
import Yams

/// The `otel` section: where traces and logs go, and how they are batched. The standard
/// `OTEL_*` variables are applied after the file (they win), in `ConfigurationLoader`.
extension ConfigReader {
    func readOTel(_ section: [String: Node], into otel: inout OTelSettings) {
        if let node = section["endpoint"] {
            if case .text(let text, _) = scalarValue(node) {
                if let problem = OTelSettings.endpointProblem(text) { fail(node, "otel.endpoint", problem) } else { otel.endpoint = text }
            } else {
                fail(node, "otel.endpoint", "expected an http:// URL, \(got(node))")
            }
        }
        if let node = section["protocol"] {
            guard case .text(let text, _) = scalarValue(node), let value = OTelSettings.WireProtocol(rawValue: text) else {
                fail(node, "otel.protocol", "expected http/protobuf or http/json, \(got(node))")
                return
            }
            otel.wireProtocol = value
        }
        if let node = section["headers"] { otel.headers = stringMap(node, path: "otel.headers") ?? otel.headers }
        if let node = section["resource"] { otel.resource = stringMap(node, path: "otel.resource") ?? otel.resource }
        if let node = section["compression"] {
            guard case .text(let text, _) = scalarValue(node), text == "gzip" || text == "none" else {
                fail(node, "otel.compression", "expected gzip or none, \(got(node))")
                return
            }
            otel.gzip = text == "gzip"
        }
        if let node = section["traces"] { otel.traces = boolean(node, "otel.traces") ?? otel.traces }
        if let node = section["logs"] { otel.logs = boolean(node, "otel.logs") ?? otel.logs }
        if let node = section["propagate"] { otel.propagate = boolean(node, "otel.propagate") ?? otel.propagate }
        if let node = section["sample_ratio"] {
            guard case .text(let text, plain: true) = scalarValue(node), let ratio = Double(text), (0...1).contains(ratio) else {
                fail(node, "otel.sample_ratio", "expected a number from 0 to 1, \(got(node))")
                return
            }
            otel.sampleRatio = ratio
        }
        if let node = section["timeout_ms"] {
            otel.timeoutMilliseconds = integer(node, "otel.timeout_ms", in: 1...600_000, rangeMessage: "must be between 1 and 600000")
                ?? otel.timeoutMilliseconds
        }
        if let node = section["batch"], let batch = fields(of: node, path: "otel.batch", known: Schema.otelBatch) {
            if let node = batch["max_records"] {
                otel.maxBatchRecords = integer(node, "otel.batch.max_records", in: 1...100_000,
                                               rangeMessage: "must be between 1 and 100000") ?? otel.maxBatchRecords
            }
            if let node = batch["max_delay_ms"] {
                otel.maxDelayMilliseconds = integer(node, "otel.batch.max_delay_ms", in: 1...600_000,
                                                    rangeMessage: "must be between 1 and 600000") ?? otel.maxDelayMilliseconds
            }
            if let node = batch["max_queue"] {
                otel.maxQueue = integer(node, "otel.batch.max_queue", in: 1...10_000_000,
                                        rangeMessage: "must be between 1 and 10000000") ?? otel.maxQueue
            }
        }
    }

    /// `{key: value, …}` of strings, in the order written.
    private func stringMap(_ node: Node, path: String) -> [(String, String)]? {
        if isNull(node) { return [] }
        guard case .mapping(let mapping) = node else {
            fail(node, path, "expected a mapping of names to strings, \(got(node))")
            return nil
        }
        var result: [(String, String)] = []
        for (keyNode, valueNode) in mapping {
            guard case .text(let key, _) = scalarValue(keyNode), !key.isEmpty else {
                fail(keyNode, path, "expected a name, \(got(keyNode))")
                continue
            }
            guard case .text(let value, _) = scalarValue(valueNode) else {
                fail(valueNode, "\(path).\(key)", "expected a string, \(got(valueNode))")
                continue
            }
            result.append((key, value))
        }
        return result
    }
}
