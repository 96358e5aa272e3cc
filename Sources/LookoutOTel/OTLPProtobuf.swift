/// ExportTraceServiceRequest and ExportLogsServiceRequest in protobuf (OTLP/HTTP's
/// `application/x-protobuf`), with the field numbers of opentelemetry-proto v1.
enum OTLPProtobuf {
    static func traces(_ spans: [SpanRecord], resource: [(String, String)], scope: (String, String)) -> [UInt8] {
        var out = ProtobufWriter()
        out.message(1) { resourceSpans in                            // ExportTraceServiceRequest.resource_spans
            resourceSpans.message(1) { writeResource(&$0, resource) }  // ResourceSpans.resource
            resourceSpans.message(2) { scopeSpans in                 // ResourceSpans.scope_spans
                scopeSpans.message(1) { writeScope(&$0, scope) }     // ScopeSpans.scope
                for span in spans {
                    scopeSpans.message(2) { writeSpan(&$0, span) }   // ScopeSpans.spans
                }
            }
        }
        return out.bytes
    }

    static func logs(_ records: [LogRecordData], resource: [(String, String)], scope: (String, String)) -> [UInt8] {
        var out = ProtobufWriter()
        out.message(1) { resourceLogs in                             // ExportLogsServiceRequest.resource_logs
            resourceLogs.message(1) { writeResource(&$0, resource) }
            resourceLogs.message(2) { scopeLogs in                   // ResourceLogs.scope_logs
                scopeLogs.message(1) { writeScope(&$0, scope) }
                for record in records {
                    scopeLogs.message(2) { writeLog(&$0, record) }   // ScopeLogs.log_records
                }
            }
        }
        return out.bytes
    }

    private static func writeResource(_ out: inout ProtobufWriter, _ resource: [(String, String)]) {
        for (key, value) in resource { writeAttribute(&out, 1, key, .string(value)) }  // Resource.attributes
    }

    private static func writeScope(_ out: inout ProtobufWriter, _ scope: (String, String)) {
        out.string(1, scope.0)  // InstrumentationScope.name
        out.string(2, scope.1)  // .version
    }

    static func id(_ high: UInt64, _ low: UInt64) -> [UInt8] {
        withUnsafeBytes(of: high.bigEndian) { Array($0) } + withUnsafeBytes(of: low.bigEndian) { Array($0) }
    }

    static func id(_ value: UInt64) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }

    private static func writeSpan(_ out: inout ProtobufWriter, _ span: SpanRecord) {
        out.data(1, id(span.traceIDHigh, span.traceIDLow))           // trace_id
        out.data(2, id(span.spanID))                                  // span_id
        if let state = span.traceState { out.string(3, state) }      // trace_state
        if let parent = span.parentSpanID { out.data(4, id(parent)) } // parent_span_id
        out.string(5, span.name)                                      // name
        out.number(6, span.kind.rawValue)                             // kind
        out.fixed64(7, span.start)                                    // start_time_unix_nano
        out.fixed64(8, span.end)                                      // end_time_unix_nano
        for (key, value) in span.attributes { writeAttribute(&out, 9, key, value) }
        for event in span.events {
            out.message(11) { e in                                    // events
                e.fixed64(1, event.time)                              // Event.time_unix_nano
                e.string(2, event.name)                               // Event.name
                for (key, value) in event.attributes { writeAttribute(&e, 3, key, value) }
            }
        }
        if span.statusCode != 0 {
            out.message(15) { status in                               // status
                status.string(2, span.statusMessage)                  // Status.message
                status.number(3, span.statusCode)                     // Status.code
            }
        }
        // flags (SpanFlags): the W3C trace flags (sampled), and whether the parent is remote.
        out.fixed32(16, 0x100 | (span.parentIsRemote ? 0x200 : 0) | 1)
    }

    private static func writeLog(_ out: inout ProtobufWriter, _ record: LogRecordData) {
        out.fixed64(1, record.time)                                   // time_unix_nano
        out.number(2, record.severity)                                // severity_number
        out.string(3, record.severityText)                            // severity_text
        out.message(5) { $0.string(1, record.body) }                  // body: AnyValue.string_value
        for (key, value) in record.attributes { writeAttribute(&out, 6, key, value) }
        out.fixed32(8, record.sampled ? 1 : 0)                        // flags
        if record.traceIDHigh != 0 || record.traceIDLow != 0 {
            out.data(9, id(record.traceIDHigh, record.traceIDLow))   // trace_id
            out.data(10, id(record.spanID))                           // span_id
        }
        out.fixed64(11, record.observed)                              // observed_time_unix_nano
        out.string(12, record.eventName)                              // event_name
    }

    /// A `KeyValue` as field `field` of the enclosing message.
    private static func writeAttribute(_ out: inout ProtobufWriter, _ field: Int, _ key: String, _ value: OTelValue) {
        out.message(field) { kv in
            kv.string(1, key)                                         // KeyValue.key
            kv.message(2) { writeValue(&$0, value) }                  // KeyValue.value
        }
    }

    /// A oneof member is written even when it is the default (empty, 0, false): its presence is
    /// what says which member it is.
    private static func writeValue(_ out: inout ProtobufWriter, _ value: OTelValue) {
        switch value {
        case .string(let text): out.present(1, text: text)                  // AnyValue.string_value
        case .bool(let flag): out.present(2, varint: flag ? 1 : 0)          // .bool_value
        case .int(let number): out.present(3, varint: UInt64(bitPattern: number))  // .int_value
        case .double(let number): out.double(4, number)                     // .double_value
        case .strings(let list):
            out.message(5) { array in                                        // .array_value: ArrayValue.values
                for item in list { array.message(1) { writeValue(&$0, .string(item)) } }
            }
        }
    }
}
