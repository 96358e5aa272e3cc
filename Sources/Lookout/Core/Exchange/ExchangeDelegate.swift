import LookoutHTTP
import LookoutModel
import LookoutUpstream
/// What a client connection learns from the exchange or tunnel it runs: the one boundary back up.
/// The connection owns the exchange and finishes it before going away; the exchange holds this
/// delegate `unowned`, never calls it once finished, and never for a failure the connection itself
/// reported (those arrive on a later turn of the loop).
protocol ExchangeDelegate: AnyObject {
    /// The exchange can take request body bytes again: parse what is stashed, read more.
    func exchangeCanTakeInput()
    /// The exchange is over; with `keepAlive` the next request may follow, else close after the response.
    func exchangeDidFinish(keepAlive: Bool)
    /// The response broke off after bytes reached the client: deliver what is queued, then reset.
    func exchangeDidBreakOff()
    /// The origin switched protocols: from now on `tunnel` relays this connection's bytes.
    func exchangeDidSwitchProtocols(to tunnel: Tunnel)
    /// The tunnel is over; `upstreamFailed` resets the client after what is queued.
    func tunnelDidFinish(upstreamFailed: Bool)
    /// Responses must announce `Connection: close` (shutdown, or this connection ends after the exchange).
    var isClosingAfterExchange: Bool { get }
}

/// The records every kind of client exchange writes: the request as received, and the summary.
struct ExchangeRecords {
    var environment: ExchangeEnvironment
    let connectionID: UInt64
    let clientAddress: String
    /// The JA4 of the client's ClientHello, once an interception read it: every exchange on the
    /// connection carries it.
    var clientJA4: String?
    /// A connection a transparent or SOCKS5 listener took: every record of it says so.
    var captured: CapturedConnection? {
        get { capturedBox?.value }
        set { capturedBox = newValue.map(ValueBox.init) }
    }
    /// The egress policy's decision for the exchange or tunnel these records are handed to (set
    /// on the connection's copy just before, and cleared after).
    var policy: PolicyDecision? {
        get { policyBox?.value }
        set { policyBox = newValue.map(ValueBox.init) }
    }
    // Boxed: every exchange and tunnel holds a copy of these records, and most have neither.
    private(set) var capturedBox: ValueBox<CapturedConnection>? = nil
    private(set) var policyBox: ValueBox<PolicyDecision>? = nil

    /// The record of a request read and accepted (`request.didCreateInitialRequest`). The head
    /// and URL are read only when a monitor takes the record: an exchange's head is a
    /// stored property, and passing it copied (retained) every string and field list in it.
    func created(_ head: @autoclosure () -> RequestHead, requestID: UInt64, url: @autoclosure () -> String) {
        environment.emit(EventContext(connectionID: connectionID, requestID: requestID),
                         Self.initialRequest(head(), url: url(), client: clientAddress))
    }

    private static func initialRequest(_ head: RequestHead, url: String, client: String) -> RequestDidCreateInitialRequest {
        RequestDidCreateInitialRequest(method: head.method.rawValue, url: url, httpVersion: head.version.description,
                                       headerFields: head.headerFields, client: client)
    }

    /// The record of a request that never became an exchange: `RequestDidRejectClient` for a head
    /// that was read and refused, `RequestDidFailToCreateRequest` for one that could not be read;
    /// then its summary with `error` and the `status` the client was answered with, if any.
    func refused(requestID: UInt64, method: String, url: String, httpVersion: String, kind: ExchangeSummary.Kind,
                 error: ProxyError, status: Int?, start: Instant, headWasRead: Bool, clientStreamID: Int32? = nil) {
        let context = EventContext(connectionID: connectionID, requestID: requestID)
        if headWasRead {
            environment.emit(context, RequestDidRejectClient(error: error))
        } else {
            environment.emit(context, RequestDidFailToCreateRequest(error: error))
        }
        var summary = ExchangeSummary(requestID: requestID, connectionID: connectionID, clientAddress: clientAddress,
                                      kind: kind, method: method, url: url, httpVersion: httpVersion, start: start)
        summary.clientStreamID = clientStreamID
        summary.status = status
        summary.error = error
        finish(summary)
    }

    /// Writes the exchange's summary, ending it now.
    func finish(_ summary: consuming ExchangeSummary) {
        var summary = summary
        end(&summary)
        post(summary)
    }

    /// Ends `summary` now, where it is: its end, and the connection's JA4.
    func end(_ summary: inout ExchangeSummary) {
        summary.end = .now()
        if summary.clientJA4 == nil, let clientJA4 { summary.clientJA4 = clientJA4 }
        if let capturedBox { summary.captured = capturedBox.value }
        if let policyBox, summary.policy == nil { summary.policy = policyBox.value }
    }

    /// Writes a summary `end` ended. Not written to here, the summary moves straight into its
    /// event; written to, a consumed parameter is first copied to the stack (all of its bytes).
    func post(_ summary: consuming ExchangeSummary) {
        environment.counters.exchangesFinished.add(1, ordering: .relaxed)
        // The exchange is over: its place among its role's in-flight ones is free.
        summary.policy?.slot?.giveBack()
        guard environment.monitor.wants(RequestDidFinish.interest) else { return }
        let context = EventContext(time: summary.end, connectionID: connectionID, requestID: summary.requestID)
        // Built outside `emit`'s autoclosure, so that the summary moves into the event.
        environment.monitor.post(LookoutEvent(finished: FinishedExchange(summary, context: context)))
    }
}
