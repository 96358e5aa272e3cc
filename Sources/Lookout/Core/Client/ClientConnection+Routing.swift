import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutTLS
import LookoutAdmin
import LookoutModel
import LookoutUpstream

/// Where a parsed request goes: a forwarded exchange, a tunnel, the proxy's own pages, or a refusal
/// (with the record of a request that never became an exchange).
extension ClientConnection {
    // MARK: - Requests

    /// A reload replaced the loop's environment: this connection's next exchange or tunnel runs
    /// under it (the running one keeps the records it was given).
    func adoptCurrentEnvironment() {
        let current = context.clients
        guard current !== environment else { return }
        environment = current
        records.environment = current.exchanges
    }

    /// The head is consumed: it moves into the exchange without a copy of its strings and fields.
    func begin(_ head: consuming RequestHead) {
        timer.cancel()
        headTimerArmed = false
        requestsServed += 1
        adoptCurrentEnvironment()
        let requestID = environment.exchanges.makeRequestID()
        if adminOnly, head.target.isProxied {
            reject(head, requestID: requestID, error: .requestRejected(reason: .adminListenerDoesNotProxy))
            return
        }
        // A captured connection's plain requests are for where it was going, not for the proxy.
        if let capture, capture.phase == .plain, let target = capture.target, case .origin(let path) = head.target {
            beginCapturedRequest(head, requestID: requestID, target: target, path: path)
            return
        }
        // Inside an intercepted CONNECT the client already authenticated (on the CONNECT).
        if let authenticator = rules.authenticator, head.target.isProxied, interceptedOrigin == nil {
            switch authenticator.outcome(head.headerFields) {
            case .user(let user):
                authenticatedUser = user
            case .missing where !rules.credentialsRequired:
                // Under a policy, credentials only identify: without them the address decides.
                authenticatedUser = nil
            case .missing, .invalid:
                reject(head, requestID: requestID, error: .requestRejected(reason: .proxyAuthenticationRequired))
                return
            }
        }
        // The destination prepared once for every per-host rule set it meets on the way.
        let destination = destinationKey(head)
        if let destination,
           let refusal = environment.accessRefusal(method: head.method.rawValue, host: destination) {
            reject(head, requestID: requestID, error: refusal)
            return
        }
        if let destination, rules.policy != nil {
            let isConnect = head.method == .connect
            // A CONNECT that is intercepted counts nothing itself: its requests are counted.
            let counted = !isConnect || !(environment.interceptionTLS != nil && environment.tls.intercepts(destination.normalized))
            if let (decision, refusal) = policyDecision(method: isConnect ? nil : head.method.rawValue, host: destination,
                                                        limits: counted) {
                records.policy = decision
                if let refusal {
                    reject(head, requestID: requestID, error: refusal)
                    return
                }
            }
        }
        let parent = destination.flatMap { environment.exchanges.parentProxy(for: $0) }
        switch head.target {
        case .authority(let host, let port):
            beginTunnel(head, requestID: requestID, host: host, port: port, parent: parent, ruleKey: destination)
        case .absolute(let scheme, let host, let port, let path):
            guard scheme == "http" || scheme == "https" else {
                reject(head, requestID: requestID, error: .requestRejected(reason: .unsupportedScheme(scheme)))
                return
            }
            let origin = self.origin(host: host, port: port, isSecure: scheme == "https", parent: parent, ruleKey: destination)
            if let settings = h2cSettings(head),
               beginH2C(head, settings: settings, requestID: requestID, origin: origin, path: path, url: head.rawTarget) {
                return
            }
            let url = head.rawTarget
            startExchange(head, requestID: requestID, origin: origin, path: path, url: url)
        case .origin(let path):
            if let interceptedOrigin {
                startExchange(head, requestID: requestID, origin: interceptedOrigin, path: path,
                              url: interceptedOrigin.url(path: path))
            } else {
                answerAdmin(head, requestID: requestID, path: path)
            }
        case .asterisk:
            reject(head, requestID: requestID, error: .requestRejected(reason: .notAProxyRequest(path: "*")), kind: .admin)
        }
    }

    /// The host a proxied request goes to, prepared for the per-host rules (nil for the proxy's
    /// own pages); the origin already at hand has it prepared.
    private func destinationKey(_ head: RequestHead) -> HostRuleKey? {
        switch head.target {
        case .authority(let host, _), .absolute(_, let host, _, _):
            if let lastOrigin, lastOrigin.host == host { return lastOrigin.ruleKey }
            return HostRuleKey(host)
        case .origin: return interceptedOrigin?.ruleKey
        case .asterisk: return nil
        }
    }

    /// The origin of a plain proxied request: the last one again when it is the same, else the
    /// loop's shared one.
    private func origin(host: String, port: Int?, isSecure: Bool, parent: ParentProxy?, ruleKey: HostRuleKey?) -> Origin {
        let port = port ?? (isSecure ? 443 : 80)
        if let lastOrigin, lastOrigin.host == host, lastOrigin.port == port, lastOrigin.isSecure == isSecure,
           lastOrigin.parent == parent {
            return lastOrigin
        }
        let origin = context.recentOrigins.origin(host: host, port: port, isSecure: isSecure, parent: parent, ruleKey: ruleKey)
        lastOrigin = origin
        return origin
    }

    func startExchange(_ head: consuming RequestHead, requestID: UInt64, origin: Origin, path: String, url: String) {
        let exchange = Exchange(id: requestID, context: context, client: self, delegate: self,
                                records: records, head: head, origin: origin, path: path, url: url,
                                kind: interceptedOrigin == nil ? .http : .intercepted)
        records.policy = nil  // the exchange has its decision
        self.exchange = exchange
        exchange.start()
    }

    func beginTunnel(_ head: RequestHead, requestID: UInt64, host: String, port: Int, parent: ParentProxy?,
                     ruleKey: HostRuleKey?) {
        guard environment.allowedConnectPorts.contains(port) else {
            reject(head, requestID: requestID, error: .requestRejected(reason: .connectPortNotAllowed(port: port)))
            return
        }
        if let engine = environment.interceptionTLS, environment.tls.intercepts(host),
           let plain = connection as? Connection {
            if waitsForHello(host: host) {
                awaitClientHello(head, requestID: requestID,
                                 origin: Origin(host: host, port: port, isSecure: true, parent: parent, ruleKey: ruleKey),
                                 engine: engine, plain: plain)
                return
            }
            beginInterception(head, requestID: requestID,
                              origin: Origin(host: host, port: port, isSecure: true, parent: parent, ruleKey: ruleKey),
                              engine: engine, plain: plain)
            return
        }
        if environment.tls.pinningWithoutInterception == .refuse,
           let rule = environment.trustManager.pinningRuleName(for: host) {
            reject(head, requestID: requestID, error: .requestRejected(reason: .pinningRequiresInterception(host: host, rule: rule)))
            return
        }
        let tunnel = Tunnel(id: requestID, head: head,
                            origin: Origin(host: host, port: port, parent: parent, ruleKey: ruleKey),
                            client: connection,
                            delegate: self, environment: environment.exchanges, context: context, records: records)
        records.policy = nil  // the tunnel has its decision
        self.tunnel = tunnel
        connection.pauseReading()
        tunnel.start()
    }

    // MARK: - Answers of the proxy's own

    /// An admin request: the token first, then its body (read whole, up to
    /// `AdminRequest.maxBodyBytes`, before the page answers), then the page.
    func answerAdmin(_ head: RequestHead, requestID: UInt64, path: String) {
        let setCookie: String?
        switch adminTokenOutcome(head, path: path) {
        case .refused:
            reject(head, requestID: requestID, error: .requestRejected(reason: .adminTokenRequired), kind: .admin)
            return
        case .accepted(let fromQuery):
            setCookie = fromQuery ? environment.admin.tokenCheck?.cookie : nil
        }
        guard head.framing != .none else {
            respondAdmin(head, requestID: requestID, path: path, setCookie: setCookie, body: [])
            return
        }
        if case .contentLength(let length) = head.framing, length > UInt64(AdminRequest.maxBodyBytes) {
            reject(head, requestID: requestID, error: .requestRejected(reason: .requestBodyTooLarge(limit: UInt64(AdminRequest.maxBodyBytes))),
                   kind: .admin)
            return
        }
        pendingAdmin = PendingAdminRequest(head: head, requestID: requestID, path: path, setCookie: setCookie)
    }

    /// Body bytes of an admin request (none other reaches here without an exchange).
    func adminBodyArrived(_ bytes: UnsafeRawBufferPointer) {
        guard let pending = pendingAdmin else { return }
        pending.body.append(contentsOf: bytes)
        guard pending.body.count <= AdminRequest.maxBodyBytes else {
            pendingAdmin = nil
            reject(pending.head, requestID: pending.requestID,
                   error: .requestRejected(reason: .requestBodyTooLarge(limit: UInt64(AdminRequest.maxBodyBytes))), kind: .admin)
            return
        }
    }

    func adminBodyEnded() {
        guard let pending = pendingAdmin else { return }
        pendingAdmin = nil
        respondAdmin(pending.head, requestID: pending.requestID, path: pending.path, setCookie: pending.setCookie,
                     body: pending.body)
    }

    private func respondAdmin(_ head: RequestHead, requestID: UInt64, path: String, setCookie: String?, body: [UInt8]) {
        let keepAlive = head.keepAlive && !closeWhenIdle
        guard let response = AdminResponder.response(for: head, path: path, admin: environment.admin, status: owner,
                                                     keepAlive: keepAlive,
                                                     listener: adminOnly ? nil : connection.localAddress?.description,
                                                     clientAddress: clientAddress,
                                                     setCookie: setCookie, body: body) else {
            reject(head, requestID: requestID, error: .requestRejected(reason: .notAProxyRequest(path: path)), kind: .admin)
            return
        }
        let start = Instant.now()
        records.created(head, requestID: requestID, url: adminURL(path))
        guard let deferred = response.deferred else {
            deliverAdmin(response, head, requestID: requestID, path: path, start: start, keepAlive: keepAlive)
            return
        }
        // Nothing is read or parsed until the answer is here; it comes back through the loop.
        awaitingAdminAnswer = true
        connection.pauseReading()
        let loop = connection.loop
        deferred { [self] answer in
            loop.execute { [self] in
                guard awaitingAdminAnswer else { return }
                awaitingAdminAnswer = false
                var answer = answer
                if answer.deferred != nil {
                    answer = AdminAnswer(status: 500, contentType: "text/plain; charset=utf-8",
                                         body: Array("an admin answer deferred twice\n".utf8))
                }
                let response = AdminResponder.respond(head, answer, keepAlive: keepAlive, setCookie: setCookie)
                deliverAdmin(response, head, requestID: requestID, path: path, start: start, keepAlive: keepAlive)
            }
        }
    }

    /// Whether `admin.token` lets the request in (always, without a token, and for `/healthz`,
    /// which orchestrators probe and which tells nothing).
    private func adminTokenOutcome(_ head: RequestHead, path: String) -> AdminTokenCheck.Outcome {
        guard let check = environment.admin.tokenCheck else { return .accepted(setCookie: false) }
        let question = path.firstIndex(of: "?")
        // A health check and the proxy auto-config are asked for by what cannot bring a token
        // (a load balancer, a browser's PAC fetch); neither reveals more than the listener.
        let page = path[..<(question ?? path.endIndex)]
        if page == "/healthz" || page == "/proxy.pac" { return .accepted(setCookie: false) }
        return check.check(head.headerFields, query: question.map { String(path[path.index(after: $0)...]) })
    }

    /// Writes an admin answer and its record, then goes on with the next request (or streams).
    private func deliverAdmin(_ response: AdminResponder.Response, _ head: RequestHead, requestID: UInt64, path: String,
                              start: Instant, keepAlive: Bool) {
        var summary = ExchangeSummary(requestID: requestID, connectionID: id, clientAddress: clientAddress, kind: .admin,
                                      method: head.method.rawValue, url: adminURL(path),
                                      httpVersion: head.version.description, start: start)
        guard !isClosed else {
            // The session closed the connection while a deferred answer was being gathered.
            summary.error = .sessionUnavailable(reason: .shuttingDown)
            records.finish(summary)
            response.stream?.stop()
            return
        }
        connection.write(response.bytes)
        summary.status = response.status
        if let producer = response.stream {
            streamAdminBody(from: producer, summary: summary)
            return
        }
        records.finish(summary)
        // The body was read whole before the answer: the next message may follow.
        if !keepAlive { closeWhenIdle = true }
        exchangeDidFinish(keepAlive: keepAlive)
    }

    /// A streamed admin body (live events): the connection serves nothing else
    /// until it ends, and its record is written then, with the stream's duration.
    private func streamAdminBody(from producer: AdminStreamProducer, summary: ExchangeSummary) {
        let sink = AdminStreamSink(connection: connection, byteLimit: AdminStreamSink.defaultByteLimit)
        adminStream = AdminStreamState(sink: sink, producer: producer, summary: summary)
        sink.onFinished = { [unowned self] in endAdminStream(error: nil, clientLeft: false) }
        closeWhenIdle = true
        // Input is read only to notice the client leaving; whatever it sends is ignored.
        connection.resumeReading()
        producer.start(sink)
    }

    /// The stream is over: the client left (`error` nil: the usual end of a live stream), its
    /// connection failed, the session is shutting down, or (`clientLeft` false) the producer
    /// finished its body, which the connection delivers before closing.
    func endAdminStream(error: ProxyError?, clientLeft: Bool = true) {
        guard let stream = adminStream else { return }
        adminStream = nil
        stream.sink.clientWentAway()
        stream.producer.stop()
        var summary = stream.summary
        summary.end = .now()
        summary.error = error
        records.finish(summary)
        closeReason = clientLeft ? "client_closed" : "server_closed"
        closeAfterResponse()
    }

    /// The admin page's URL for records, without the value of a `token=` parameter.
    func adminURL(_ path: String) -> String {
        "http://\(connection.localAddress?.description ?? "lookout")\(AdminTokenCheck.redacting(path))"
    }

    /// Refuses a request whose head parsed but which cannot be served.
    func reject(_ head: RequestHead, requestID: UInt64, error: ProxyError, kind: ExchangeSummary.Kind? = nil) {
        let start = Instant.now()
        let url = kind == .admin ? AdminTokenCheck.redacting(head.rawTarget) : head.rawTarget
        records.created(head, requestID: requestID, url: url)
        connection.write(ErrorResponse.bytes(for: error, closeConnection: true, requestID: requestID))
        records.refused(requestID: requestID, method: head.method.rawValue, url: url,
                        httpVersion: head.version.description, kind: kind ?? (head.method == .connect ? .tunnel : .http),
                        error: error, status: error.status, start: start, headWasRead: true)
        records.policy = nil
        closeAfterResponse()
    }

    /// The head could not be parsed: answer the error, record it, close.
    func rejectInput(_ error: ProxyError, startLine: RequestLineSketch?) {
        if let exchange {
            // The body was malformed mid-exchange.
            exchange.clientSentInvalidBody(error)
            return
        }
        recordFailedRequest(error, sendResponse: true, startLine: startLine)
        closeAfterResponse()
    }

    func recordFailedRequest(_ error: ProxyError, sendResponse: Bool, startLine: RequestLineSketch? = nil) {
        let requestID = environment.exchanges.makeRequestID()
        let start = Instant.now()
        let answered = sendResponse && error.status != nil
        if answered { connection.write(ErrorResponse.bytes(for: error, closeConnection: true, requestID: requestID)) }
        records.refused(requestID: requestID, method: startLine?.method ?? "", url: startLine?.target ?? "",
                        httpVersion: startLine?.version ?? "", kind: startLine?.method == "CONNECT" ? .tunnel : .http,
                        error: error, status: answered ? error.status : nil, start: start, headWasRead: false)
    }
}

/// An admin request whose body is still arriving. A class: every client connection has the
/// slot and few ever fill it, so an idle connection holds a pointer, not the state inline.
final class PendingAdminRequest {  // used on the client connection's `loop.queue` only
    let head: RequestHead
    let requestID: UInt64
    let path: String
    let setCookie: String?
    var body: [UInt8] = []

    init(head: RequestHead, requestID: UInt64, path: String, setCookie: String?) {
        self.head = head
        self.requestID = requestID
        self.path = path
        self.setCookie = setCookie
    }
}
