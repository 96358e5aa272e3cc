import LookoutHTTP
import LookoutModel

/// The same requests in OTLP/JSON (the OTLP specification's JSON Protobuf Encoding): lowerCamelCase
/// names, trace and span ids as hex, 64-bit integers as decimal strings, enums as numbers.
enum OTLPJSON {
    /// A request's text before its records (joined by commas), and after them.
    static func requestPrefix(traces: Bool, resource: [(String, String)], scope: (String, String)) -> String {
        traces ? "{\"resourceSpans\":[{\"resource\":\(resourceJSON(resource)),\"scopeSpans\":[{\"scope\":\(scopeJSON(scope)),\"spans\":["
               : "{\"resourceLogs\":[{\"resource\":\(resourceJSON(resource)),\"scopeLogs\":[{\"scope\":\(scopeJSON(scope)),\"logRecords\":["
    }

    static let requestSuffix = "]}]}]}"

    static func logJSON(_ record: LogRecordData) -> String {
        var out = "{\"timeUnixNano\":\"\(record.time)\",\"observedTimeUnixNano\":\"\(record.observed)\""
        out += ",\"severityNumber\":\(record.severity),\"severityText\":\(JSONText.quoted(record.severityText))"
        out += ",\"body\":{\"stringValue\":\(JSONText.quoted(String(decoding: record.body, as: UTF8.self)))},\"attributes\":\(attributesJSON(record.exchange?.list ?? record.attributes))"
        out += ",\"eventName\":\(JSONText.quoted(record.eventName)),\"flags\":\(record.sampled ? 1 : 0)"
        if record.traceIDHigh != 0 || record.traceIDLow != 0 {
            out += ",\"traceId\":\"\(TraceContext.hex(record.traceIDHigh))\(TraceContext.hex(record.traceIDLow))\""
            out += ",\"spanId\":\"\(TraceContext.hex(record.spanID))\""
        }
        return out + "}"
    }

    static func spanJSON(_ span: SpanRecord) -> String {
        let head = span.head
        var out = "{\"traceId\":\"\(TraceContext.hex(head.traceIDHigh))\(TraceContext.hex(head.traceIDLow))\""
        out += ",\"spanId\":\"\(TraceContext.hex(head.spanID))\""
        if let parent = head.parentSpanID { out += ",\"parentSpanId\":\"\(TraceContext.hex(parent))\"" }
        if let state = head.traceState { out += ",\"traceState\":\(JSONText.quoted(state))" }
        out += ",\"name\":\(JSONText.quoted(head.name)),\"kind\":\(head.kind.rawValue)"
        out += ",\"startTimeUnixNano\":\"\(head.start)\",\"endTimeUnixNano\":\"\(head.end)\""
        out += ",\"attributes\":\(attributesJSON(span.attributes)),\"events\":["
        for (index, event) in span.events.enumerated() {
            if index > 0 { out += "," }
            out += "{\"timeUnixNano\":\"\(event.time)\",\"name\":\(JSONText.quoted(event.name)),\"attributes\":\(attributesJSON(event.attributes))}"
        }
        out += "],\"flags\":\(0x100 | (head.parentIsRemote ? 0x200 : 0) | 1)"
        if span.statusCode != 0 { out += ",\"status\":{\"code\":\(span.statusCode),\"message\":\(JSONText.quoted(span.statusMessage))}" }
        return out + "}"
    }

    private static func resourceJSON(_ resource: [(String, String)]) -> String {
        "{\"attributes\":\(attributesJSON(resource.map { ($0.0, .string($0.1)) }))}"
    }

    private static func scopeJSON(_ scope: (String, String)) -> String {
        "{\"name\":\(JSONText.quoted(scope.0)),\"version\":\(JSONText.quoted(scope.1))}"
    }

    static func attributesJSON(_ attributes: OTelAttributes) -> String {
        "[" + attributes.map { "{\"key\":\(JSONText.quoted($0.0)),\"value\":\(valueJSON($0.1))}" }.joined(separator: ",") + "]"
    }

    private static func valueJSON(_ value: OTelValue) -> String {
        switch value {
        case .string(let text): "{\"stringValue\":\(JSONText.quoted(text))}"
        case .bool(let flag): "{\"boolValue\":\(flag)}"
        case .int(let number): "{\"intValue\":\"\(number)\"}"
        case .double(let number): "{\"doubleValue\":\(number.isFinite ? String(number) : "0")}"
        case .strings(let list): "{\"arrayValue\":{\"values\":[" + list.map { "{\"stringValue\":\(JSONText.quoted($0))}" }.joined(separator: ",") + "]}}"
        }
    }
}
