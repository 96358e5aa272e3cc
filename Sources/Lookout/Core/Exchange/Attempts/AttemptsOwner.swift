import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutModel
import LookoutUpstream

/// What an exchange's upstream attempts (`UpstreamAttempts`) tell their exchange and ask of it:
/// the one boundary from the upstream side back up. The exchange implements it, is each task's
/// delegate (it hands the reports to its attempts), and is the `StageContext` the attempts hand
/// the stages that decide about an attempt.
protocol AttemptsOwner: StageContext, UpstreamTaskDelegate {
    /// The exchange's stages, in plan order (the attempts run their attempt points).
    var stageList: [any ExchangeStage] { get }
    /// Calls `body` with each stage in order, lent rather than copied out of the list.
    func forEachStage(_ body: (borrowing any ExchangeStage) -> Void)
    /// The record the attempts count in: attempts, redirects, the trace, the transactions.
    var summary: ExchangeSummary { get set }
    /// Where the response stands for the client: its head sent, held by a stage, the exchange over.
    var responseState: AttemptsOwnerResponseState { get }

    // MARK: The request body, toward each attempt

    /// An attempt starts: the request body (if any) is sent again from its start, or goes on.
    func attemptStarts()
    /// The attempt's head is on its way: it takes the body now.
    func attemptIsReadyForBody(_ task: UpstreamTask)
    /// The attempt sent what it had of the body: more may come from the client.
    func attemptDrainedBody(_ task: UpstreamTask)
    /// Whether the body can be sent again (kept whole, or none).
    var requestBodyIsReplayable: Bool { get }
    /// Nothing goes upstream any more (a redirect turned into a GET): the client's body is dropped.
    func dropRequestBody()

    // MARK: The response, from each attempt

    /// A 1xx from the origin.
    func attemptInformational(_ head: ResponseHead)
    /// The final response head the stages let through (`location`: a redirect rule's rewrite).
    /// `.refused` holds it back and fails the exchange once the attempt ends.
    func attemptResponse(_ head: consuming ResponseHead, location: String?) -> AttemptResponseOutcome
    /// Body bytes; false asks the attempt to stop reading until the client drains.
    func attemptBody(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// The end of the origin's body, with its trailers.
    func attemptResponseEnded(trailers: HTTPFields?)

    // MARK: How the attempts end

    /// The last attempt's response is complete.
    func attemptsFinished()
    /// The attempts gave up (or a plan fails the exchange): the error goes to the client.
    func attemptsFailed(_ error: ProxyError)
    /// A stage answers instead of the held-back response (a stored response a 304 validated).
    func attemptsAnswer(_ answer: StageAnswer)
    /// The attempt ended while a stage held its response: with an error, the exchange fails.
    func attemptEndedWhileHeld(error: ProxyError?)
    /// The origin switched protocols: the exchange becomes a tunnel over both connections.
    func attemptSwitchedProtocols(_ task: UpstreamTask, upstream: ByteStream, leftover: [UInt8])
}

/// Where an exchange's response stands, as its attempts need to know.
struct AttemptsOwnerResponseState {
    /// Its head (and maybe bytes of its body) reached the client: nothing can be tried again.
    var headSent: Bool
    /// A stage holds the response head.
    var held: Bool
    /// The exchange is over.
    var finished: Bool
}

/// What became of a response head the attempts passed on.
enum AttemptResponseOutcome {
    /// Relayed to the client, or held by a stage: the attempt goes on reading.
    case relayed
    /// A response stage refused it: held back, and the exchange fails once the attempt ends.
    case refused(ProxyError)
}
