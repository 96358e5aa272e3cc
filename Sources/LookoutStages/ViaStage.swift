import Lookout
import HTTPTypes
import LookoutHTTP
import LookoutModel
import LookoutUpstream

/// `headers.via`: Lookout names itself in `Via` on every hop's request and every response
/// (RFC 9110 §7.6.3). Shared by every exchange.
final class ViaStage: ExchangeStage, Sendable {
    private let adapter = ViaHeaderAdapter()

    func upstreamRequest(_ request: inout UpstreamAdaptation, exchange: StageContext) {
        adapter.adapt(&request.head)
    }

    func responseHead(_ response: inout StageResponseHead, exchange: StageContext) -> ResponseVerdict {
        response.fields.appendField(HTTPField(name: .via, value: ViaHeaderAdapter.value))
        return .proceed
    }
}
