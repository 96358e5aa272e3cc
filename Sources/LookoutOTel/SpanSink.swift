/// The fields of a span known when it begins.
struct SpanHead: Sendable {
    var traceIDHigh: UInt64
    var traceIDLow: UInt64
    var spanID: UInt64
    var parentSpanID: UInt64?
    /// The parent is the client's span (from its `traceparent`), not one of Lookout's.
    var parentIsRemote = false
    var traceState: String?
    var name: String
    var kind: SpanRecord.Kind
    var start: UInt64
    var end: UInt64
}

/// Where `SpanBuilder` writes an exchange's spans, one after the other: each begins, takes its
/// attributes, events and status, and ends.
protocol SpanSink: ~Copyable {
    mutating func begin(_ head: SpanHead)
    mutating func attribute(_ key: String, _ value: OTelValue)
    mutating func event(time: UInt64, name: String, attributes: OTelAttributes)
    /// `code` 2 is an error (the semantic conventions leave a success's status unset).
    mutating func status(code: UInt64, message: String)
    mutating func end()
}

/// Spans as values: what OTLP/JSON is written from.
struct SpanRecordSink: SpanSink {
    private(set) var spans: [SpanRecord] = []

    mutating func begin(_ h: SpanHead) {
        spans.append(SpanRecord(head: h))
    }

    mutating func attribute(_ key: String, _ value: OTelValue) { spans[spans.count - 1].attributes.append((key, value)) }

    mutating func event(time: UInt64, name: String, attributes: OTelAttributes) {
        spans[spans.count - 1].events.append(SpanRecord.Event(time: time, name: name, attributes: attributes))
    }

    mutating func status(code: UInt64, message: String) {
        spans[spans.count - 1].statusCode = code
        spans[spans.count - 1].statusMessage = message
    }

    mutating func end() {}
}

/// Spans written straight into OTLP protobuf as they are built, each one `ScopeSpans.spans` field
/// (2), with field numbers from `opentelemetry/proto/trace/v1/trace.proto`: no span value and no
/// attribute list is made on the way. `ends` says where each span's bytes end; `removeAll` keeps
/// the storage for the next exchange.
struct ProtobufSpanSink: SpanSink, ~Copyable {
    private(set) var out = ProtobufWriter()
    private(set) var ends: [Int] = []
    private var lengthAt = 0
    private var flags: UInt32 = 0

    mutating func begin(_ h: SpanHead) {
        lengthAt = out.open(2)
        out.id(1, high: h.traceIDHigh, h.traceIDLow)                        // trace_id
        out.id(2, h.spanID)                                                  // span_id
        if let state = h.traceState { out.string(3, state) }                // trace_state
        if let parent = h.parentSpanID { out.id(4, parent) }                // parent_span_id
        out.string(5, h.name)                                                // name
        out.number(6, h.kind.rawValue)                                       // kind
        out.fixed64(7, h.start)                                              // start_time_unix_nano
        out.fixed64(8, h.end)                                                // end_time_unix_nano
        // flags (SpanFlags): the W3C trace flags (sampled), and whether the parent is remote.
        flags = 0x100 | (h.parentIsRemote ? 0x200 : 0) | 1
    }

    mutating func attribute(_ key: String, _ value: OTelValue) {
        OTLPProtobuf.writeAttribute(&out, 9, key, value)                     // attributes
    }

    mutating func event(time: UInt64, name: String, attributes: OTelAttributes) {
        out.message(11) { e in                                               // events
            e.fixed64(1, time)                                               // Event.time_unix_nano
            e.string(2, name)                                                // Event.name
            for (key, value) in attributes { OTLPProtobuf.writeAttribute(&e, 3, key, value) }
        }
    }

    mutating func status(code: UInt64, message: String) {
        out.message(15) { status in                                          // status
            status.string(2, message)                                        // Status.message
            status.number(3, code)                                           // Status.code
        }
    }

    mutating func end() {
        out.fixed32(16, flags)
        out.close(lengthAt)
        ends.append(out.count)
    }

    mutating func removeAll() {
        out.removeAll()
        ends.removeAll(keepingCapacity: true)
    }
}
