/// A value of an OTLP attribute (`AnyValue`).
enum OTelValue: Sendable, Equatable {
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case strings([String])
}

typealias OTelAttributes = [(String, OTelValue)]

/// One span as OTLP carries it (`opentelemetry/proto/trace/v1/trace.proto`): what OTLP/JSON is
/// written from.
struct SpanRecord: Sendable {
    enum Kind: UInt64 { case internalSpan = 1, server = 2, client = 3 }
    struct Event: Sendable {
        var time: UInt64
        var name: String
        var attributes: OTelAttributes
    }

    var head: SpanHead
    var attributes: OTelAttributes = []
    var events: [Event] = []
    /// `Status`: 0 unset, 2 error (Lookout never claims OK: the semantic conventions leave it unset).
    var statusCode: UInt64 = 0
    var statusMessage: String = ""
}

/// One log record as OTLP carries it (`opentelemetry/proto/logs/v1/logs.proto`).
struct LogRecordData: Sendable {
    var time: UInt64
    var observed: UInt64
    /// SeverityNumber: 9 INFO, 13 WARN, 17 ERROR.
    var severity: UInt64
    var severityText: String
    /// The record's JSON line, as the log writes it: UTF-8 by construction (it is encoded from
    /// Swift strings), so it goes into the protobuf `string_value` as it is, never decoded.
    var body: [UInt8]
    var eventName: String
    var attributes: OTelAttributes
    /// An exchange's record: its attributes, written from these fields in place of `attributes`.
    var exchange: ExchangeLogAttributes?
    var traceIDHigh: UInt64 = 0
    var traceIDLow: UInt64 = 0
    var spanID: UInt64 = 0
    var sampled = false
}

/// The attributes of an exchange's log record, as fields: written straight into the record, where
/// an array of pairs would cost two allocations per exchange and a copy of each pair.
struct ExchangeLogAttributes: Sendable {
    var kind: String
    var id: UInt64
    var method: String
    /// Redacted.
    var url: String
    var status: Int?
    var errorCode: String?

    /// Each attribute in order: the one list both wire protocols write. Values go to `writer`
    /// as the fields hold them, with no `OTelValue` made around each (that retained its string).
    @inline(__always)
    func forEach<Writer: AttributeWriter>(_ writer: inout Writer) {
        writer.string("lookout.kind", kind)
        writer.int("lookout.id", Int64(id))
        writer.string("http.request.method", method)
        writer.string("url.full", url)
        if let status { writer.int("http.response.status_code", Int64(status)) }
        if let errorCode { writer.string("error.type", errorCode) }
    }

    /// As a list (OTLP/JSON).
    var list: OTelAttributes {
        var list = AttributeList()
        forEach(&list)
        return list.attributes
    }

    /// Each as a `KeyValue` in field `field` (protobuf), with no list made.
    func write(_ out: inout ProtobufWriter, _ field: Int) {
        withUnsafeMutablePointer(to: &out) { out in
            var writer = ProtobufAttributes(out: out, field: field)
            forEach(&writer)
        }
    }
}

/// Where `ExchangeLogAttributes.forEach` writes.
protocol AttributeWriter: ~Copyable {
    mutating func string(_ key: String, _ value: String)
    mutating func int(_ key: String, _ value: Int64)
}

/// The attributes as a list of pairs.
struct AttributeList: AttributeWriter {
    var attributes: OTelAttributes = []
    mutating func string(_ key: String, _ value: String) { attributes.append((key, .string(value))) }
    mutating func int(_ key: String, _ value: Int64) { attributes.append((key, .int(value))) }
}

/// The attributes as protobuf `KeyValue`s in field `field` of the writer at `out` (valid for
/// `ExchangeLogAttributes.write`'s call).
struct ProtobufAttributes: AttributeWriter {
    let out: UnsafeMutablePointer<ProtobufWriter>
    let field: Int
    mutating func string(_ key: String, _ value: String) { OTLPProtobuf.writeAttribute(&out.pointee, field, key, string: value) }
    mutating func int(_ key: String, _ value: Int64) { OTLPProtobuf.writeAttribute(&out.pointee, field, key, int: value) }
}
