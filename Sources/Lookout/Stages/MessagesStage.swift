import HTTPTypes
import LookoutMessages
import LookoutModel

/// `messages`: event streams and gRPC calls split into their messages as they pass. One stage for
/// every exchange, holding nothing: an exchange whose request or response is one of the formats
/// gets a `StreamWatch` of its own; for the rest this stage only reads a `Content-Type`.
final class MessagesStage: ExchangeStage, @unchecked Sendable {  // immutable
    private let settings: MessagesSettings

    init(settings: MessagesSettings) {
        self.settings = settings
    }

    func requestHead(_ exchange: StageContext) -> StageVerdict {
        // A gRPC call's own messages (client and bidirectional streaming) are read too; gRPC calls
        // are POSTs (gRPC over HTTP/2, "Requests"), so nothing else pays for the field lookup.
        guard exchange.head.method == .post else { return .proceed }
        if let format = StreamFormat.of(contentType: exchange.head.headerFields.value(for: .contentType)),
           format == .grpc || format == .grpcWeb {
            exchange.watchStream(format, settings: settings).watchRequest()
        }
        return .proceed
    }

    func requestBody(_ bytes: UnsafeRawBufferPointer, exchange: StageContext) {
        exchange.streamWatch?.clientBytes(bytes)
    }

    func requestEnd(exchange: StageContext) {
        exchange.streamWatch?.requestEnded(at: nil)
    }

    func responseHead(_ response: inout StageResponseHead, exchange: StageContext) -> ResponseVerdict {
        guard response.status != 101, let format = StreamFormat.of(contentType: response.fields.value(for: .contentType)) else {
            return .proceed
        }
        let watch = exchange.watchStream(format, settings: settings)
        watch.requestEnded(at: exchange.requestSentAt)
        watch.watchResponse()
        // A gRPC "Trailers-Only" answer carries its status in the head.
        if format == .grpc { watch.grpcStatus(from: response.fields) }
        return .proceed
    }

    func responseBody(_ bytes: UnsafeRawBufferPointer, exchange: StageContext) {
        exchange.streamWatch?.upstreamBytes(bytes)
    }
}
