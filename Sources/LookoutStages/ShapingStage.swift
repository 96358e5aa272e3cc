import Lookout
import LookoutModel
import LookoutUpstream
/// `shaping.rules`: the host's latency (a hold of the exchange), its injected status, and its
/// pacing and cuts (`StageContext.shape`, applied by the exchange's writers). One per exchange
/// whose host has a rule.
final class ShapingStage: ExchangeStage, Sendable {
    private let rule: ShapingRule

    init(rule: ShapingRule) {
        self.rule = rule
    }

    var heldPhase: String { "shaping_latency" }

    func requestHead(_ exchange: StageContext) -> StageVerdict {
        let shaping = exchange.shape(with: rule)
        exchange.record(.shaping(shaping.applied))
        exchange.emit(RequestDidShape(shaping: shaping.applied))
        let latency = shaping.latency
        guard latency > 0 else { return faultVerdict(exchange) }
        // Dispatch's own timer: the loop's deadline list is only good to 50 ms.
        exchange.facts.loop.execute(after: latency) { [weak exchange, self] in
            guard let exchange else { return }
            exchange.resume(faultVerdict(exchange), from: self)
        }
        return .hold(deadline: nil)
    }

    /// `faults.status`, drawn once per request after the latency.
    private func faultVerdict(_ exchange: StageContext) -> StageVerdict {
        guard let code = rule.faultStatus, rule.drawsFaultStatus() else { return .proceed }
        ExchangeShaping.record(.status(code), rule: rule, exchange: exchange)
        return .fail(.injectedFault(reason: .status(code: code, rule: rule.name)))
    }
}
