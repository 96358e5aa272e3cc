import LookoutModel

/// Encodes an exchange's spans and the log records on the OTel monitor's queue, in the exporter's
/// wire protocol, into buffers kept from record to record; the exporter's queues take the bytes.
/// So the records are never kept as values, and the exporter's thread only wraps, compresses and
/// sends whole batches.
struct OTLPRecordEncoder: ~Copyable {
    let json: Bool
    private var spans = ProtobufSpanSink()
    private var scratch = ProtobufWriter()
    private var ends: [Int] = []

    init(json: Bool) { self.json = json }

    /// The exchange's spans, handed to `deliver` as bytes and where each span ends.
    /// `target`: what was read from the summary's URL (`SpanBuilder.URLParts`).
    mutating func spans(_ s: borrowing ExchangeSummary, trace: TraceContext, target: SpanBuilder.URLParts,
                        _ deliver: (UnsafeRawBufferPointer, [Int]) -> Void) {
        if json {
            var text: [UInt8] = []
            ends.removeAll(keepingCapacity: true)
            for span in SpanBuilder.spans(s, trace: trace, target: target) {
                text += OTLPJSON.spanJSON(span).utf8
                ends.append(text.count)
            }
            text.withUnsafeBytes { deliver($0, ends) }
            return
        }
        spans.removeAll()
        SpanBuilder.write(s, trace: trace, target: target, into: &spans)
        spans.out.withBytes { deliver($0, spans.ends) }
    }

    /// One log record's bytes.
    mutating func log(_ record: LogRecordData, _ deliver: (UnsafeRawBufferPointer, [Int]) -> Void) {
        if json {
            let text = Array(OTLPJSON.logJSON(record).utf8)
            text.withUnsafeBytes { deliver($0, [text.count]) }
            return
        }
        scratch.removeAll()
        OTLPProtobuf.writeLogField(&scratch, record)
        ends.removeAll(keepingCapacity: true)
        ends.append(scratch.count)
        scratch.withBytes { deliver($0, ends) }
    }
}
