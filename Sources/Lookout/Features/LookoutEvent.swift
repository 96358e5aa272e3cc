import HTTPTypes

/// Who an event is about and when it happened.
public struct EventContext: Sendable {
    public var time: Instant
    public var connectionID: UInt64
    public var requestID: UInt64?
    public var taskID: UInt64?

    public init(time: Instant = .now(), connectionID: UInt64, requestID: UInt64? = nil, taskID: UInt64? = nil) {
        self.time = time
        self.connectionID = connectionID
        self.requestID = requestID
        self.taskID = taskID
    }
}

/// A request as the client sent it, for `request.didCreateInitialRequest`.
public struct RequestDescription: Sendable {
    public var method: String
    public var url: String
    public var httpVersion: String
    public var headerFields: HTTPFields
    public var client: String

    public init(method: String, url: String, httpVersion: String, headerFields: HTTPFields, client: String) {
        self.method = method
        self.url = url
        self.httpVersion = httpVersion
        self.headerFields = headerFields
        self.client = client
    }
}

/// One step in the life of a connection, exchange, upstream task, tunnel or the session.
/// Each case matches one `EventMonitor` method; `name` is the event's name in the log.
public enum LookoutEvent: Sendable {
    // connection.*
    case connectionDidOpen(EventContext, client: String, listener: String)
    case connectionDidClose(EventContext, reason: String, requests: Int, bytesReceived: UInt64, bytesSent: UInt64)
    case connectionWasRejected(EventContext, client: String, error: ProxyError)
    case clientTLSHandshakeDidComplete(EventContext, serverName: String?, version: String, cipher: String, applicationProtocol: String?)
    case clientTLSHandshakeDidFail(EventContext, serverName: String?, error: ProxyError)
    // request.*
    case didCreateInitialRequest(EventContext, RequestDescription)
    case didFailToCreateRequest(EventContext, error: ProxyError)
    case didAuthorize(EventContext)
    case didRejectClient(EventContext, error: ProxyError)
    case didAdaptRequest(EventContext, upstreamTarget: String, headerFields: HTTPFields)
    case didLookUpCache(EventContext, result: String)
    case requestIsRetrying(EventContext, attempt: Int, reason: String)
    // Boxed: a summary is several hundred bytes, and copying it (with its dozen references)
    // into every mailbox cost more than one allocation. The other large payloads are boxed too.
    indirect case requestDidFinish(EventContext, ExchangeSummary)
    // task.*
    case didCreateTask(EventContext, origin: String, attempt: Int)
    case didResolve(EventContext, host: String, addresses: [String], milliseconds: Double, cached: Bool)
    case didConnect(EventContext, address: String, milliseconds: Double)
    case didReuseConnection(EventContext, address: String, upstreamConnectionID: UInt64)
    case didReceiveChallenge(EventContext, host: String, rule: String, evaluator: String)
    indirect case didEvaluateServerTrust(EventContext, TrustDecision)
    case didSendBodyData(EventContext, bytesSent: Int, totalBytesSent: UInt64)
    case didReceiveResponse(EventContext, status: Int, reasonPhrase: String, headerFields: HTTPFields)
    case willPerformRedirect(EventContext, status: Int, location: String, decision: String)
    case didReceiveData(EventContext, bytes: Int, totalBytes: UInt64)
    case didSuspendTask(EventContext)
    case didResumeTask(EventContext)
    case willCacheResponse(EventContext, decision: String)
    indirect case didGatherMetrics(EventContext, TaskMetrics)
    case didCompleteTask(EventContext, error: ProxyError?)
    // tunnel.*
    case tunnelDidOpen(EventContext, target: String, address: String)
    case tunnelDidClose(EventContext, clientToUpstream: UInt64, upstreamToClient: UInt64, milliseconds: Double, error: ProxyError?)
    // session.*
    case sessionDidStart(EventContext, listeners: [String])
    case sessionWillInvalidate(EventContext, inFlight: Int)
    case sessionDidBecomeInvalid(EventContext, droppedEvents: UInt64)

    /// The context every case carries.
    public var context: EventContext {
        switch self {
        case .connectionDidOpen(let c, _, _), .connectionDidClose(let c, _, _, _, _), .connectionWasRejected(let c, _, _),
             .clientTLSHandshakeDidComplete(let c, _, _, _, _), .clientTLSHandshakeDidFail(let c, _, _),
             .didReceiveChallenge(let c, _, _, _), .didEvaluateServerTrust(let c, _),
             .didCreateInitialRequest(let c, _), .didFailToCreateRequest(let c, _), .didAuthorize(let c),
             .didRejectClient(let c, _), .didAdaptRequest(let c, _, _), .didLookUpCache(let c, _),
             .requestIsRetrying(let c, _, _), .requestDidFinish(let c, _),
             .didCreateTask(let c, _, _), .didResolve(let c, _, _, _, _), .didConnect(let c, _, _),
             .didReuseConnection(let c, _, _), .didSendBodyData(let c, _, _), .didReceiveResponse(let c, _, _, _),
             .willPerformRedirect(let c, _, _, _), .didReceiveData(let c, _, _), .didSuspendTask(let c),
             .didResumeTask(let c), .willCacheResponse(let c, _), .didGatherMetrics(let c, _),
             .didCompleteTask(let c, _), .tunnelDidOpen(let c, _, _), .tunnelDidClose(let c, _, _, _, _),
             .sessionDidStart(let c, _), .sessionWillInvalidate(let c, _), .sessionDidBecomeInvalid(let c, _):
            return c
        }
    }

    /// The log name: the monitor method's name prefixed by who emitted it.
    public var name: String {
        switch self {
        case .connectionDidOpen: return "connection.didOpen"
        case .connectionDidClose: return "connection.didClose"
        case .connectionWasRejected: return "connection.wasRejected"
        case .clientTLSHandshakeDidComplete: return "connection.didCompleteClientTLSHandshake"
        case .clientTLSHandshakeDidFail: return "connection.didFailClientTLSHandshake"
        case .didReceiveChallenge: return "task.didReceiveChallenge"
        case .didEvaluateServerTrust: return "task.didEvaluateServerTrust"
        case .didCreateInitialRequest: return "request.didCreateInitialRequest"
        case .didFailToCreateRequest: return "request.didFailToCreateRequest"
        case .didAuthorize: return "request.didAuthorize"
        case .didRejectClient: return "request.didRejectClient"
        case .didAdaptRequest: return "request.didAdaptRequest"
        case .didLookUpCache: return "request.didLookUpCache"
        case .requestIsRetrying: return "request.isRetrying"
        case .requestDidFinish: return "request.didFinish"
        case .didCreateTask: return "task.didCreateTask"
        case .didResolve: return "task.didResolve"
        case .didConnect: return "task.didConnect"
        case .didReuseConnection: return "task.didReuseConnection"
        case .didSendBodyData: return "task.didSendBodyData"
        case .didReceiveResponse: return "task.didReceiveResponse"
        case .willPerformRedirect: return "task.willPerformRedirect"
        case .didReceiveData: return "task.didReceiveData"
        case .didSuspendTask: return "task.didSuspend"
        case .didResumeTask: return "task.didResume"
        case .willCacheResponse: return "task.willCacheResponse"
        case .didGatherMetrics: return "task.didGatherMetrics"
        case .didCompleteTask: return "task.didComplete"
        case .tunnelDidOpen: return "tunnel.didOpen"
        case .tunnelDidClose: return "tunnel.didClose"
        case .sessionDidStart: return "session.didStart"
        case .sessionWillInvalidate: return "session.willInvalidate"
        case .sessionDidBecomeInvalid: return "session.didBecomeInvalid"
        }
    }

    /// Which interest a monitor must declare to receive this event.
    public var interest: EventInterest {
        switch self {
        case .requestDidFinish, .connectionWasRejected, .sessionDidStart, .sessionWillInvalidate, .sessionDidBecomeInvalid:
            return .summaries
        default:
            return .lifecycle
        }
    }
}

/// What a monitor wants delivered. Lifecycle events are built only when some monitor wants them,
/// so a summary-only log costs one event per exchange.
public struct EventInterest: OptionSet, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `request.didFinish`, `connection.wasRejected` (refusals are not exchanges but must be seen) and `session.*`.
    public static let summaries = EventInterest(rawValue: 1)
    /// Every other event.
    public static let lifecycle = EventInterest(rawValue: 2)
    public static let all: EventInterest = [.summaries, .lifecycle]
}
