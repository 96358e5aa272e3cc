import Lookout
import HTTPTypes
import LookoutHTTP
import LookoutModel

/// `otel`: the exchange's W3C Trace Context (https://www.w3.org/TR/trace-context/), made when its
/// request head arrives — continuing the client's `traceparent` (with `propagate`) or starting a
/// trace, sampled by `sample_ratio` — into `summary.trace`, where the OpenTelemetry monitor finds
/// it. Each attempt then carries a `traceparent` naming its own span (`Exchange.startAttempt`);
/// the client's `tracestate` goes on as it came. Shared by every exchange; holds nothing.
final class TraceStage: ExchangeStage, @unchecked Sendable {  // immutable
    private let propagate: Bool
    private let sampleRatio: Double

    init(propagate: Bool, sampleRatio: Double) {
        self.propagate = propagate
        self.sampleRatio = sampleRatio
    }

    func requestHead(_ exchange: StageContext) -> StageVerdict {
        var parent: (traceHigh: UInt64, traceLow: UInt64, span: UInt64, sampled: Bool)?
        var state: String?
        if propagate, let value = exchange.requestHead.headerFields.value(for: TraceFields.parent) {
            // An invalid traceparent is ignored: a new trace starts (Trace Context §3.2.2.1).
            parent = TraceContext.parse(traceparent: value.trimmingOWSString)
            if parent != nil { state = exchange.requestHead.headerFields.value(for: TraceFields.state) }
        }
        exchange.record(.trace(TraceContext.start(parent: parent, traceState: state, sampleRatio: sampleRatio)))
        return .proceed
    }
}

extension String {
    fileprivate var trimmingOWSString: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
