import Lookout
import HTTPTypes
import LookoutHTTP
import LookoutModel
import LookoutUpstream

/// `headers.forwarded`: each hop's request says whom Lookout forwards for (RFC 7239). Shared by
/// every exchange.
final class ForwardedStage: ExchangeStage, Sendable {
    func upstreamRequest(_ request: inout UpstreamAdaptation, exchange: StageContext) {
        // RFC 7239 §4: a proxy appends its element, after any the client sent.
        request.head.headerFields.appendField(HTTPField(name: ForwardedElement.name, value: ForwardedElement.value(
            clientAddress: exchange.facts.clientAddress, scheme: request.origin.scheme)))
    }
}
