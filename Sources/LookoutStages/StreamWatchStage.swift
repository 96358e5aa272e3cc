import Lookout
import HTTPTypes
import LookoutMessages
import LookoutModel

/// The messages of one exchange whose request or response is a stream format (`MessagesStage`
/// made it when it saw the format): its bodies go through the exchange's `StreamWatch` as they
/// pass, and its end writes the `messages` object (and the messages file's path).
final class StreamWatchStage: ExchangeStage, @unchecked Sendable {  // confined to the exchange's loop queue
    let watch: StreamWatch

    init(watch: StreamWatch) {
        self.watch = watch
    }

    func requestBody(_ bytes: UnsafeRawBufferPointer, exchange: StageContext) {
        watch.clientBytes(bytes, exchange: exchange)
    }

    func requestEnd(exchange: StageContext) {
        watch.requestEnded(at: nil)
    }

    func responseHead(_ response: inout StageResponseHead, exchange: StageContext) -> ResponseVerdict {
        // The watch keeps the format it was made for (a gRPC call's, from its request).
        guard response.status != 101, StreamFormat.of(contentType: response.fields.value(for: .contentType)) != nil else {
            return .proceed
        }
        watch.requestEnded(at: exchange.facts.requestSentAt)
        watch.watchResponse()
        // A gRPC "Trailers-Only" answer carries its status in the head.
        if watch.format == .grpc { watch.grpcStatus(from: response.fields) }
        return .proceed
    }

    func responseBody(_ bytes: UnsafeRawBufferPointer, exchange: StageContext) {
        watch.upstreamBytes(bytes, exchange: exchange)
    }

    func responseEnd(trailers: HTTPFields?, exchange: StageContext) {
        watch.responseEnded(trailers: trailers, exchange: exchange)
    }

    func inFlight(_ snapshot: inout ExchangeSummary) {
        snapshot.messages = watch.summary
    }

    func exchangeEnd(_ exchange: StageContext) {
        let (messages, path) = watch.finish()
        exchange.record(.messages(messages, capturePath: path))
    }
}
