import Lookout
import LookoutModel
import LookoutUpstream
/// The embedder's own `RequestAdapter`s (`Session(adapters:)`), run on every hop's request in the
/// order given. Shared by every exchange.
final class RequestAdapterStage: ExchangeStage, Sendable {
    private let adapters: [any RequestAdapter]

    init(adapters: [any RequestAdapter]) {
        self.adapters = adapters
    }

    func upstreamRequest(_ request: inout UpstreamAdaptation, exchange: StageContext) {
        for adapter in adapters { adapter.adapt(&request.head) }
    }
}
