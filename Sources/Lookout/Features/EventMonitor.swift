import Dispatch
import HTTPTypes

/// Sees the whole life of every exchange. Every method is optional (default: nothing), and all are
/// called on the monitor's own `queue`, never on an event loop: a slow monitor cannot stall traffic.
public protocol EventMonitor: AnyObject, Sendable {
    /// Where this monitor's methods run.
    var queue: DispatchQueue { get }
    /// Which events to deliver. Default: all.
    var interest: EventInterest { get }

    /// Receives every event; the default calls the matching method below.
    func receive(_ event: LookoutEvent)

    // MARK: connection.*
    func connectionDidOpen(_ context: EventContext, client: String, listener: String)
    func connectionDidClose(_ context: EventContext, reason: String, requests: Int, bytesReceived: UInt64, bytesSent: UInt64)
    func connectionWasRejected(_ context: EventContext, client: String, error: ProxyError)
    func connectionDidCompleteClientTLSHandshake(_ context: EventContext, serverName: String?, version: String,
                                                 cipher: String, applicationProtocol: String?)
    func connectionDidFailClientTLSHandshake(_ context: EventContext, serverName: String?, error: ProxyError)
    // MARK: request.*
    func requestDidCreateInitialRequest(_ context: EventContext, _ request: RequestDescription)
    func requestDidFailToCreateRequest(_ context: EventContext, error: ProxyError)
    func requestDidAuthorize(_ context: EventContext)
    func requestDidRejectClient(_ context: EventContext, error: ProxyError)
    func requestDidAdaptRequest(_ context: EventContext, upstreamTarget: String, headerFields: HTTPFields)
    func requestDidLookUpCache(_ context: EventContext, result: String)
    func requestIsRetrying(_ context: EventContext, attempt: Int, reason: String)
    func requestDidFinish(_ context: EventContext, summary: ExchangeSummary)
    // MARK: task.*
    func taskDidCreate(_ context: EventContext, origin: String, attempt: Int)
    func taskDidResolve(_ context: EventContext, host: String, addresses: [String], milliseconds: Double, cached: Bool)
    func taskDidConnect(_ context: EventContext, address: String, milliseconds: Double)
    func taskDidReuseConnection(_ context: EventContext, address: String, upstreamConnectionID: UInt64)
    func taskDidReceiveChallenge(_ context: EventContext, host: String, rule: String, evaluator: String)
    func taskDidEvaluateServerTrust(_ context: EventContext, decision: TrustDecision)
    func taskDidSendBodyData(_ context: EventContext, bytesSent: Int, totalBytesSent: UInt64)
    func taskDidReceiveResponse(_ context: EventContext, status: Int, reasonPhrase: String, headerFields: HTTPFields)
    func taskWillPerformRedirect(_ context: EventContext, status: Int, location: String, decision: String)
    func taskDidReceiveData(_ context: EventContext, bytes: Int, totalBytes: UInt64)
    func taskDidSuspend(_ context: EventContext)
    func taskDidResume(_ context: EventContext)
    func taskWillCacheResponse(_ context: EventContext, decision: String)
    func taskDidGatherMetrics(_ context: EventContext, metrics: TaskMetrics)
    func taskDidComplete(_ context: EventContext, error: ProxyError?)
    // MARK: tunnel.*
    func tunnelDidOpen(_ context: EventContext, target: String, address: String)
    func tunnelDidClose(_ context: EventContext, clientToUpstream: UInt64, upstreamToClient: UInt64, milliseconds: Double, error: ProxyError?)
    // MARK: session.*
    func sessionDidStart(_ context: EventContext, listeners: [String])
    func sessionWillInvalidate(_ context: EventContext, inFlight: Int)
    func sessionDidBecomeInvalid(_ context: EventContext, droppedEvents: UInt64)
}

// MARK: - Defaults

extension EventMonitor {
    public var interest: EventInterest { .all }

    public func receive(_ event: LookoutEvent) {
        switch event {
        case let .connectionDidOpen(c, client, listener): connectionDidOpen(c, client: client, listener: listener)
        case let .connectionDidClose(c, reason, requests, received, sent):
            connectionDidClose(c, reason: reason, requests: requests, bytesReceived: received, bytesSent: sent)
        case let .connectionWasRejected(c, client, error): connectionWasRejected(c, client: client, error: error)
        case let .didCreateInitialRequest(c, request): requestDidCreateInitialRequest(c, request)
        case let .didFailToCreateRequest(c, error): requestDidFailToCreateRequest(c, error: error)
        case let .didAuthorize(c): requestDidAuthorize(c)
        case let .didRejectClient(c, error): requestDidRejectClient(c, error: error)
        case let .didAdaptRequest(c, target, fields): requestDidAdaptRequest(c, upstreamTarget: target, headerFields: fields)
        case let .didLookUpCache(c, result): requestDidLookUpCache(c, result: result)
        case let .requestIsRetrying(c, attempt, reason): requestIsRetrying(c, attempt: attempt, reason: reason)
        case let .requestDidFinish(c, summary): requestDidFinish(c, summary: summary)
        case let .didCreateTask(c, origin, attempt): taskDidCreate(c, origin: origin, attempt: attempt)
        case let .didResolve(c, host, addresses, ms, cached):
            taskDidResolve(c, host: host, addresses: addresses, milliseconds: ms, cached: cached)
        case let .didConnect(c, address, ms): taskDidConnect(c, address: address, milliseconds: ms)
        case let .didReuseConnection(c, address, id): taskDidReuseConnection(c, address: address, upstreamConnectionID: id)
        case let .didReceiveChallenge(c, host, rule, evaluator):
            taskDidReceiveChallenge(c, host: host, rule: rule, evaluator: evaluator)
        case let .didEvaluateServerTrust(c, decision): taskDidEvaluateServerTrust(c, decision: decision)
        case let .clientTLSHandshakeDidComplete(c, serverName, version, cipher, alpn):
            connectionDidCompleteClientTLSHandshake(c, serverName: serverName, version: version, cipher: cipher,
                                                    applicationProtocol: alpn)
        case let .clientTLSHandshakeDidFail(c, serverName, error):
            connectionDidFailClientTLSHandshake(c, serverName: serverName, error: error)
        case let .didSendBodyData(c, sent, total): taskDidSendBodyData(c, bytesSent: sent, totalBytesSent: total)
        case let .didReceiveResponse(c, status, reason, fields):
            taskDidReceiveResponse(c, status: status, reasonPhrase: reason, headerFields: fields)
        case let .willPerformRedirect(c, status, location, decision):
            taskWillPerformRedirect(c, status: status, location: location, decision: decision)
        case let .didReceiveData(c, bytes, total): taskDidReceiveData(c, bytes: bytes, totalBytes: total)
        case let .didSuspendTask(c): taskDidSuspend(c)
        case let .didResumeTask(c): taskDidResume(c)
        case let .willCacheResponse(c, decision): taskWillCacheResponse(c, decision: decision)
        case let .didGatherMetrics(c, metrics): taskDidGatherMetrics(c, metrics: metrics)
        case let .didCompleteTask(c, error): taskDidComplete(c, error: error)
        case let .tunnelDidOpen(c, target, address): tunnelDidOpen(c, target: target, address: address)
        case let .tunnelDidClose(c, up, down, ms, error):
            tunnelDidClose(c, clientToUpstream: up, upstreamToClient: down, milliseconds: ms, error: error)
        case let .sessionDidStart(c, listeners): sessionDidStart(c, listeners: listeners)
        case let .sessionWillInvalidate(c, inFlight): sessionWillInvalidate(c, inFlight: inFlight)
        case let .sessionDidBecomeInvalid(c, dropped): sessionDidBecomeInvalid(c, droppedEvents: dropped)
        }
    }

    public func connectionDidOpen(_ context: EventContext, client: String, listener: String) {}
    public func connectionDidClose(_ context: EventContext, reason: String, requests: Int, bytesReceived: UInt64, bytesSent: UInt64) {}
    public func connectionWasRejected(_ context: EventContext, client: String, error: ProxyError) {}
    public func connectionDidCompleteClientTLSHandshake(_ context: EventContext, serverName: String?, version: String,
                                                        cipher: String, applicationProtocol: String?) {}
    public func connectionDidFailClientTLSHandshake(_ context: EventContext, serverName: String?, error: ProxyError) {}
    public func requestDidCreateInitialRequest(_ context: EventContext, _ request: RequestDescription) {}
    public func requestDidFailToCreateRequest(_ context: EventContext, error: ProxyError) {}
    public func requestDidAuthorize(_ context: EventContext) {}
    public func requestDidRejectClient(_ context: EventContext, error: ProxyError) {}
    public func requestDidAdaptRequest(_ context: EventContext, upstreamTarget: String, headerFields: HTTPFields) {}
    public func requestDidLookUpCache(_ context: EventContext, result: String) {}
    public func requestIsRetrying(_ context: EventContext, attempt: Int, reason: String) {}
    public func requestDidFinish(_ context: EventContext, summary: ExchangeSummary) {}
    public func taskDidCreate(_ context: EventContext, origin: String, attempt: Int) {}
    public func taskDidResolve(_ context: EventContext, host: String, addresses: [String], milliseconds: Double, cached: Bool) {}
    public func taskDidConnect(_ context: EventContext, address: String, milliseconds: Double) {}
    public func taskDidReuseConnection(_ context: EventContext, address: String, upstreamConnectionID: UInt64) {}
    public func taskDidReceiveChallenge(_ context: EventContext, host: String, rule: String, evaluator: String) {}
    public func taskDidEvaluateServerTrust(_ context: EventContext, decision: TrustDecision) {}
    public func taskDidSendBodyData(_ context: EventContext, bytesSent: Int, totalBytesSent: UInt64) {}
    public func taskDidReceiveResponse(_ context: EventContext, status: Int, reasonPhrase: String, headerFields: HTTPFields) {}
    public func taskWillPerformRedirect(_ context: EventContext, status: Int, location: String, decision: String) {}
    public func taskDidReceiveData(_ context: EventContext, bytes: Int, totalBytes: UInt64) {}
    public func taskDidSuspend(_ context: EventContext) {}
    public func taskDidResume(_ context: EventContext) {}
    public func taskWillCacheResponse(_ context: EventContext, decision: String) {}
    public func taskDidGatherMetrics(_ context: EventContext, metrics: TaskMetrics) {}
    public func taskDidComplete(_ context: EventContext, error: ProxyError?) {}
    public func tunnelDidOpen(_ context: EventContext, target: String, address: String) {}
    public func tunnelDidClose(_ context: EventContext, clientToUpstream: UInt64, upstreamToClient: UInt64, milliseconds: Double, error: ProxyError?) {}
    public func sessionDidStart(_ context: EventContext, listeners: [String]) {}
    public func sessionWillInvalidate(_ context: EventContext, inFlight: Int) {}
    public func sessionDidBecomeInvalid(_ context: EventContext, droppedEvents: UInt64) {}
}
