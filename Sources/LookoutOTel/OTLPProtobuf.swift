/// ExportTraceServiceRequest and ExportLogsServiceRequest in protobuf (OTLP/HTTP's
/// `application/x-protobuf`), with the field numbers of opentelemetry-proto v1.
enum OTLPProtobuf {
    /// The part of a request before its records, for a batch of `recordsLength` bytes of records
    /// already encoded as repeated field 2 of ScopeSpans / ScopeLogs (`spans`, `log_records`). Both
    /// requests are laid out alike: Export*ServiceRequest.resource_* (1) { Resource* .resource (1),
    /// .scope_* (2) { Scope* .scope (1), records } } — so the lengths are known up front, and the
    /// records are copied once, behind this prefix.
    static func requestPrefix(recordsLength: Int, resourceAndScope: ResourceAndScope) -> [UInt8] {
        let scopeLength = resourceAndScope.scope.count + recordsLength
        var scoped = ProtobufWriter()
        scoped.append(encoded: resourceAndScope.resource)
        scoped.lengthPrefix(2, scopeLength)
        var out = ProtobufWriter()
        out.lengthPrefix(1, scoped.bytes.count + scopeLength)
        out.append(encoded: scoped.bytes)
        out.append(encoded: resourceAndScope.scope)
        return out.bytes
    }

    /// The `resource` (1) and `scope` (1) fields every request of a run carries, encoded once.
    struct ResourceAndScope {
        let resource: [UInt8]
        let scope: [UInt8]

        init(resource: [(String, String)], scope: (String, String)) {
            var r = ProtobufWriter()
            r.message(1) { for (key, value) in resource { writeAttribute(&$0, 1, key, .string(value)) } }  // Resource.attributes
            var s = ProtobufWriter()
            s.message(1) { $0.string(1, scope.0); $0.string(2, scope.1) }  // InstrumentationScope.name, .version
            self.resource = r.bytes
            self.scope = s.bytes
        }
    }

    /// One log record as a `ScopeLogs.log_records` field (2).
    static func writeLogField(_ out: inout ProtobufWriter, _ record: borrowing LogRecordData) {
        // Opened and closed around the call rather than in a closure: captured, the record is
        // copied, a retain and a release of each of its strings.
        let lengthAt = out.open(2)
        writeLog(&out, record)
        out.close(lengthAt)
    }

    /// The record is read in place: nothing here binds or captures it, or a part of it.
    private static func writeLog(_ out: inout ProtobufWriter, _ record: borrowing LogRecordData) {
        out.fixed64(1, record.time)                                   // time_unix_nano
        out.number(2, record.severity)                                // severity_number
        out.string(3, record.severityText)                            // severity_text
        let body = out.open(5)                                        // body: AnyValue
        out.string(1, utf8: record.body)                              //   .string_value
        out.close(body)
        if record.exchange != nil {
            record.exchange?.write(&out, 6)
        } else {
            for (key, value) in record.attributes { writeAttribute(&out, 6, key, value) }
        }
        out.fixed32(8, record.sampled ? 1 : 0)                        // flags
        if record.traceIDHigh != 0 || record.traceIDLow != 0 {
            out.id(9, high: record.traceIDHigh, record.traceIDLow)   // trace_id
            out.id(10, record.spanID)                                 // span_id
        }
        out.fixed64(11, record.observed)                              // observed_time_unix_nano
        out.string(12, record.eventName)                              // event_name
    }

    /// A `KeyValue` as field `field` of the enclosing message.
    static func writeAttribute(_ out: inout ProtobufWriter, _ field: Int, _ key: String, _ value: OTelValue) {
        switch value {
        case .string(let text): if out.shortKeyValue(field, key, string: text) { return }
        case .int(let number): if out.shortKeyValue(field, key, int: number) { return }
        default: break
        }
        out.message(field) { kv in
            kv.string(1, key)                                         // KeyValue.key
            kv.message(2) { writeValue(&$0, value) }                  // KeyValue.value
        }
    }

    /// `writeAttribute` for a string value the caller holds: no `OTelValue` is made around it
    /// (making one retains the string, and matching it again).
    static func writeAttribute(_ out: inout ProtobufWriter, _ field: Int, _ key: String, string text: String) {
        if !out.shortKeyValue(field, key, string: text) { writeAttribute(&out, field, key, .string(text)) }
    }

    /// `writeAttribute` for an integer value.
    static func writeAttribute(_ out: inout ProtobufWriter, _ field: Int, _ key: String, int number: Int64) {
        if !out.shortKeyValue(field, key, int: number) { writeAttribute(&out, field, key, .int(number)) }
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
