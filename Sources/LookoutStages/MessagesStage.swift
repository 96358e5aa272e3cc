import Lookout
import HTTPTypes
import LookoutMessages
import LookoutModel
import LookoutTLS

/// `messages`: event streams and gRPC calls split into their messages as they pass. One shared
/// stage for every exchange, holding nothing: it only reads a `Content-Type`. An exchange whose
/// request or response is one of the formats gets a `StreamWatchStage` of its own, which takes
/// this stage's place in that exchange's list (`StageContext.attach`).
final class MessagesStage: ExchangeStage, @unchecked Sendable {  // immutable
    private let settings: MessagesSettings
    private let captureStore: BodyCaptureStore?
    private let capture: CaptureSettings?

    init(settings: MessagesSettings, captureStore: BodyCaptureStore?, capture: CaptureSettings?) {
        self.settings = settings
        self.captureStore = captureStore
        self.capture = capture
    }

    func requestHead(_ exchange: StageContext) -> StageVerdict {
        // A gRPC call's own messages (client and bidirectional streaming) are read too; gRPC calls
        // are POSTs (gRPC over HTTP/2, "Requests"), so nothing else pays for the field lookup.
        guard exchange.requestHead.method == .post else { return .proceed }
        if let format = StreamFormat.of(contentType: exchange.requestHead.headerFields.value(for: .contentType)),
           format == .grpc || format == .grpcWeb {
            watch(format, exchange).watch.watchRequest()
        }
        return .proceed
    }

    func responseHead(_ response: inout StageResponseHead, exchange: StageContext) -> ResponseVerdict {
        guard response.status != 101, let format = StreamFormat.of(contentType: response.fields.value(for: .contentType)) else {
            return .proceed
        }
        return watch(format, exchange).responseHead(&response, exchange: exchange)
    }

    /// The exchange's own stage, in this one's place from now on.
    private func watch(_ format: StreamFormat, _ exchange: StageContext) -> StreamWatchStage {
        let watch = StreamWatch(format: format, settings: settings, requestID: exchange.facts.requestID, start: exchange.facts.startedAt,
                                capture: MessageCapture.matching(exchange.facts.clientKey, store: captureStore, settings: capture))
        let stage = StreamWatchStage(watch: watch)
        exchange.attach(stage, replacing: self)
        return stage
    }
}
