import HTTPTypes
import LookoutIO
import LookoutModel

/// An answer whose head is not known yet when a stage gives it (`StageVerdict.answerLater`): a
/// collapsed cache miss follows another exchange's fetch and sends its head and body as they come.
/// The exchange drives it on its loop and goes upstream itself when it withdraws.
package protocol DeferredAnswer: AnyObject, Sendable {
    /// What an operator sees while it answers (`/exchanges`).
    var phase: String { get }
    /// Why the exchange breaks off when `advance` returns `.failed`.
    var failure: ProxyError { get }
    /// Starts following; `progress` is called on `loop` whenever there may be more to send.
    func start(on loop: EventLoop, progress: @escaping @Sendable () -> Void)
    /// Sends what can be sent now. `sendHead` puts the head through the exchange's response stages
    /// and writes it; false when the exchange will not take the head from here (nothing of the
    /// body follows then).
    func advance(client: ClientResponseWriter, afterDrain: Bool, observe: (UnsafeRawBufferPointer) -> Void,
                 sendHead: (_ status: Int, _ reason: String, _ fields: inout HTTPFields, _ framing: ClientFraming) -> Bool)
        -> DeferredProgress
    /// It is given up: nothing more is sent from it.
    func stop()
    /// Nothing usable came: the exchange fetches upstream instead (the answer records why).
    func withdraw(exchange: StageContext)
}

package enum DeferredProgress {
    /// Waiting for more (or for the client); `advance` is called again.
    case waiting
    case done
    /// It broke off after bytes went out.
    case failed
    /// Nothing usable: fetch upstream instead.
    case goUpstream
}
