import Dispatch
import LookoutModel
import LookoutMonitors

/// Turns records into OpenTelemetry: each finished exchange into its spans (when its trace is
/// sampled) and every summary record — with `log.verbose`, every lifecycle record too — into an
/// OTLP log record whose body is the record's JSON line and whose trace and span ids are the
/// exchange's. The spans and log records go to the `OTLPExporter`'s queues; this runs on the
/// monitor's own queue, after the exchange has finished, so traffic never waits for it.
public final class OTelMonitor: EventMonitor, @unchecked Sendable {  // `encoder` and `wire` are confined to `queue`
    public let queue: DispatchQueue
    public let interest: EventInterest
    private let settings: OTelSettings
    public let exporter: OTLPExporter
    private var encoder: LogLineEncoder
    /// The spans and log records in OTLP, as the exporter sends them.
    private var wire: OTLPRecordEncoder

    /// `verbose`: lifecycle records are exported as log records too (`log.verbose`).
    /// `sharesSummaryRecords`: the log (or the live view) encodes the same line; one encoding serves both.
    /// `sharedQueue`: the log monitor's queue, to run on instead of one of its own: monitors on one
    /// queue are handed each event in turn (`CompositeEventMonitor`), so this one reads each
    /// summary right after the log did, while it is still in cache, and finds its line encoded.
    public init(settings: OTelSettings, exporter: OTLPExporter, verbose: Bool, revealSecrets: Bool, includeHeaders: Bool,
                sharesSummaryRecords: Bool = false, sharedQueue: DispatchQueue? = nil) {
        queue = sharedQueue ?? DispatchQueue(label: "lookout.otel")
        self.settings = settings
        self.exporter = exporter
        interest = settings.logs && verbose ? .all : .summaries
        encoder = LogLineEncoder(revealSecrets: revealSecrets, includeHeaders: includeHeaders, sharesSummaryRecords: sharesSummaryRecords)
        wire = OTLPRecordEncoder(json: settings.wireProtocol == .json)
    }

    public func receive(_ event: LookoutEvent) {
        let handled: Void? = event.withSummary { (summary: borrowing ExchangeSummary) in
            let trace = summary.trace ?? (summary.kind == .admin ? nil
                : TraceContext.start(parent: nil, traceState: nil, sampleRatio: settings.sampleRatio))
            // The URL's parts are read once, for the spans and the log record both.
            var url: String?
            if settings.traces, let trace, trace.sampled {
                let target = SpanBuilder.URLParts(summary.url, kind: summary.kind)
                url = target.redacted
                wire.spans(summary, trace: trace, target: target) { exporter.enqueue(.traces, $0, ends: $1) }
            }
            if settings.logs, let line = encoder.summaryRecord(of: event) {
                let record = Self.logRecord(summary, line: line, trace: trace, url: url ?? SpanBuilder.redacted(summary.url))
                wire.log(record) { exporter.enqueue(.logs, $0, ends: $1) }
            }
        }
        guard handled == nil, settings.logs else { return }
        let line = encoder.eventRecord(event)
        let now = Instant.now().unixNanoseconds
        let record = LogRecordData(time: event.context.time.unixNanoseconds, observed: now, severity: 9, severityText: "INFO",
                                   body: line, eventName: event.name,
                                   attributes: Self.eventAttributes(event))
        wire.log(record) { exporter.enqueue(.logs, $0, ends: $1) }
    }

    /// `url`: the summary's URL, redacted.
    private static func logRecord(_ s: borrowing ExchangeSummary, line: [UInt8], trace: TraceContext?, url: String) -> LogRecordData {
        let failed = s.error != nil || (s.status ?? 0) >= 500
        let warned = !failed && (s.status ?? 0) >= 400
        // Made whole in one expression: a record set up field by field after `init` is copied
        // on return, each of its strings retained and released.
        return LogRecordData(time: s.end.unixNanoseconds, observed: Instant.now().unixNanoseconds,
                             severity: failed ? 17 : warned ? 13 : 9, severityText: failed ? "ERROR" : warned ? "WARN" : "INFO",
                             body: line, eventName: "lookout.exchange", attributes: [],
                             exchange: ExchangeLogAttributes(kind: s.kind.rawValue, id: s.requestID, method: s.method, url: url,
                                                             status: s.status, errorCode: s.error?.code),
                             traceIDHigh: trace?.traceIDHigh ?? 0, traceIDLow: trace?.traceIDLow ?? 0,
                             spanID: trace?.spanID ?? 0, sampled: trace?.sampled ?? false)
    }

    private static func eventAttributes(_ event: LookoutEvent) -> OTelAttributes {
        var attributes: OTelAttributes = [("lookout.conn", .int(Int64(event.context.connectionID)))]
        if let id = event.context.requestID { attributes.append(("lookout.id", .int(Int64(id)))) }
        return attributes
    }
}
