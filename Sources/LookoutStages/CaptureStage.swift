import Lookout
import HTTPTypes
import LookoutModel
import LookoutUpstream
/// `capture.rules`: the exchange's bodies written to files as they pass (`ExchangeCapture`). One
/// per exchange whose host has a rule.
final class CaptureStage: ExchangeStage, @unchecked Sendable {  // confined to the exchange's loop queue
    private let capture: ExchangeCapture

    init(store: BodyCaptureStore, rule: CaptureRule, requestID: UInt64) {
        capture = ExchangeCapture(store: store, rule: rule, requestID: requestID)
    }

    func requestBody(_ bytes: UnsafeRawBufferPointer, exchange: StageContext) {
        if let failure = capture.requestBytes(bytes) { exchange.emit(failure) }
    }

    func requestEnd(exchange: StageContext) {
        capture.requestEnded()
    }

    func responseBody(_ bytes: UnsafeRawBufferPointer, exchange: StageContext) {
        if let failure = capture.responseBytes(bytes) { exchange.emit(failure) }
    }

    func responseEnd(trailers: HTTPFields?, exchange: StageContext) {
        capture.responseEnded()
    }

    func exchangeEnd(_ exchange: StageContext) {
        capture.finish()
        exchange.record(.capture(capture.summary))
    }
}
