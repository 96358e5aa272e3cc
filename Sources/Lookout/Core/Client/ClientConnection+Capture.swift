import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutModel
import LookoutTLS
import LookoutUpstream

/// Connections that did not ask Lookout as a proxy: a transparent listener's, whose original
/// destination says where they go, and a SOCKS5 client's after its request
/// (`ClientConnection+Socks.swift`). What the client sends first decides what happens:
/// - a TLS ClientHello: its SNI (else the destination's address) names the host, and
///   `interception.hosts` chooses between interception and a blind tunnel, as for CONNECT;
/// - an HTTP/1.x request line: the requests run as exchanges to the destination, each named by
///   its Host field;
/// - anything else, or nothing within `sniffWait` (a protocol whose server speaks first): a blind
///   tunnel to the destination.
extension ClientConnection {
    /// How long a captured connection may stay silent before it is taken for one whose server
    /// speaks first.
    static let sniffWait = 0.5

    func beginTransparent(_ destination: OriginalDestination) {
        switch destination {
        case .destination(let address):
            beginCapture(CaptureTarget(method: .transparent, host: address.ipText, port: address.port))
        case .unknown(let detail):
            records.captured = CapturedConnection(method: CaptureTarget.Method.transparent.rawValue, destination: "")
            refuseCapture(.requestRejected(reason: .originalDestinationUnknown(detail)), url: "")
        case .loop(let address):
            let target = CaptureTarget(method: .transparent, host: address.ipText, port: address.port)
            records.captured = target.record
            refuseCapture(.requestRejected(reason: .redirectLoop(destination: target.destination)), url: target.destination)
        }
    }

    /// Records a captured connection that goes nowhere, then closes it after what is queued (a
    /// SOCKS5 reply): nothing was forwarded.
    func refuseCapture(_ error: ProxyError, url: String) {
        let start = capture?.start ?? .now()
        capture = nil
        records.refused(requestID: environment.exchanges.makeRequestID(), method: "", url: url, httpVersion: "",
                        kind: .tunnel, error: error, status: nil, start: start, headWasRead: false)
        closeReason = "capture_refused"
        closeAfterResponse()
    }

    /// The destination is known: wait for the client's first bytes (`early`: some came already).
    func beginCapture(_ target: CaptureTarget, early: [UInt8] = []) {
        records.captured = target.record
        let state = capture ?? CaptureState(phase: .sniffing)
        state.phase = .sniffing
        state.target = target
        state.bytes = []
        capture = state
        connection.loop.execute(after: Self.sniffWait) { [weak self, weak state] in
            guard let self, let state, capture === state, state.phase == .sniffing, !isClosed else { return }
            captureBecomesTunnel(state, ja4: nil)
        }
        if !early.isEmpty {
            early.withUnsafeBytes { sniff($0, state) }
            guard capture === state, state.isWaiting else { return }
        }
        connection.resumeReading()
    }

    /// Bytes while the connection waits: the SOCKS5 handshake's, or the first ones of its stream.
    func captureBytesArrived(_ bytes: UnsafeRawBufferPointer, _ state: CaptureState) {
        switch state.phase {
        case .socksGreeting, .socksCredentials, .socksRequest: socksBytesArrived(bytes, state)
        case .sniffing: sniff(bytes, state)
        case .plain: break
        }
    }

    /// The client closed while the connection waited.
    func captureEnded(_ state: CaptureState) {
        switch state.phase {
        case .socksGreeting, .socksCredentials, .socksRequest:
            refuseCapture(.requestRejected(reason: .socksMalformed("the client closed in the middle of the handshake")),
                          url: "")
        case .sniffing where !state.bytes.isEmpty:
            // What it sent before closing still goes to the destination, as through any tunnel.
            captureBecomesTunnel(state, ja4: nil)
            tunnel?.clientDidReadEOF()
        default:
            capture = nil
            close(reason: "client_closed")
        }
    }

    private func sniff(_ bytes: UnsafeRawBufferPointer, _ state: CaptureState) {
        state.bytes += bytes
        // RFC 8446 §5.1: a TLS stream opens with a handshake record (content type 22).
        if state.bytes.first == 0x16 {
            if let record = state.gatherer.feed(bytes) {
                captureSpeaksTLS(state, hello: ClientHello(record: record))
            } else if state.gatherer.isDone {
                captureBecomesTunnel(state, ja4: nil)
            }
            return
        }
        switch Self.startsHTTPRequest(state.bytes) {
        case nil: return
        case true?: captureSpeaksHTTP(state)
        case false?: captureBecomesTunnel(state, ja4: nil)
        }
    }

    /// Whether `bytes` open an HTTP/1.x request: a method token (RFC 9110 §9.1; upper-case
    /// letters, as every registered method is) and a space. Nil until that is clear.
    static func startsHTTPRequest(_ bytes: [UInt8]) -> Bool? {
        for (index, byte) in bytes.prefix(24).enumerated() {
            if byte == UInt8(ascii: " ") { return index > 0 }
            guard (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || byte == UInt8(ascii: "-") else { return false }
        }
        return bytes.count >= 24 ? false : nil
    }

    /// The origin a captured connection's TLS or tunnel goes to, named `host`.
    private func captureOrigin(_ target: CaptureTarget, host: String, isSecure: Bool) -> Origin {
        let ruleKey = HostRuleKey(host)
        return Origin(host: host, port: target.port, isSecure: isSecure,
                      parent: environment.exchanges.parentProxy(for: ruleKey), ruleKey: ruleKey, dialAddress: target.dial)
    }

    private func captureSpeaksTLS(_ state: CaptureState, hello: ClientHello?) {
        guard let target = state.target else { return }
        let host = hello?.serverName ?? target.host
        let ja4 = hello.map(JA4.fingerprint)
        let origin = captureOrigin(target, host: host, isSecure: true)
        if let refusal = environment.accessRefusal(method: "CONNECT", host: origin.ruleKey) {
            refuseCapture(refusal, url: origin.authority)
            return
        }
        let learned = ja4.map { environment.passthrough?.contains(ja4: $0, host: host) ?? false } ?? false
        let intercepts = environment.interceptionTLS != nil && environment.tls.intercepts(host) && !learned
        guard admittedByPolicy(host: origin.ruleKey, url: origin.authority, counted: !intercepts) else { return }
        if let engine = environment.interceptionTLS, intercepts, let plain = connection as? Connection {
            capture = nil
            records.clientJA4 = ja4
            stash = state.bytes
            beginInterception(target.connectHead(host: host), requestID: environment.exchanges.makeRequestID(),
                              origin: origin, engine: engine, plain: plain, established: true)
            return
        }
        if environment.tls.pinningWithoutInterception == .refuse,
           let rule = environment.trustManager.pinningRuleName(for: host) {
            refuseCapture(.requestRejected(reason: .pinningRequiresInterception(host: host, rule: rule)),
                          url: origin.authority)
            return
        }
        startCaptureTunnel(state, origin: origin, ja4: ja4)
    }

    private func captureSpeaksHTTP(_ state: CaptureState) {
        state.phase = .plain
        let bytes = state.bytes
        state.bytes = []
        armIdleTimer()
        bytes.withUnsafeBytes { consume($0) }
    }

    /// Neither TLS nor HTTP, or nothing yet: the bytes go to the destination unread.
    private func captureBecomesTunnel(_ state: CaptureState, ja4: String?) {
        guard let target = state.target else { return }
        let origin = captureOrigin(target, host: target.host, isSecure: false)
        if let refusal = environment.accessRefusal(method: "CONNECT", host: origin.ruleKey) {
            refuseCapture(refusal, url: origin.authority)
            return
        }
        guard admittedByPolicy(host: origin.ruleKey, url: origin.authority, counted: true) else { return }
        startCaptureTunnel(state, origin: origin, ja4: ja4)
    }

    /// The policy's decision for a captured connection's TLS or tunnel, kept for its record;
    /// false (and the connection refused) when its role refuses it.
    private func admittedByPolicy(host: HostRuleKey, url: String, counted: Bool) -> Bool {
        guard let (decision, refusal) = policyDecision(method: nil, host: host, limits: counted) else { return true }
        records.policy = decision
        if let refusal {
            refuseCapture(refusal, url: url)
            records.policy = nil
            return false
        }
        return true
    }

    private func startCaptureTunnel(_ state: CaptureState, origin: Origin, ja4: String?) {
        guard let target = state.target else { return }
        capture = nil
        let tunnel = Tunnel(id: environment.exchanges.makeRequestID(), head: target.connectHead(host: origin.host),
                            origin: origin, client: connection, delegate: self, environment: environment.exchanges,
                            context: context, records: records)
        records.policy = nil  // the tunnel has its decision
        tunnel.alreadyEstablished = true
        tunnel.initialClientBytes = state.bytes
        if let ja4 { tunnel.setClientJA4(ja4) }
        self.tunnel = tunnel
        connection.pauseReading()
        tunnel.start()
    }

    /// The host of a Host field value (RFC 9110 §7.2: `uri-host [":" port]`), without brackets.
    static func hostName(inHostField value: String) -> String? {
        var host = Substring(value)
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.lastIndex(of: ":") {
            host = host[..<colon]
        }
        return host.isEmpty ? nil : host.lowercased()
    }

    /// A plain request on a captured connection: to the destination, named by its Host field
    /// (the destination's address when there is none).
    func beginCapturedRequest(_ head: consuming RequestHead, requestID: UInt64, target: CaptureTarget, path: String) {
        let host = head.headerFields[.host].flatMap(Self.hostName(inHostField:)) ?? target.host
        let origin = captureOrigin(target, host: host, isSecure: false)
        if let refusal = environment.accessRefusal(method: head.method.rawValue, host: origin.ruleKey) {
            reject(head, requestID: requestID, error: refusal)
            return
        }
        if let (decision, refusal) = policyDecision(method: head.method.rawValue, host: origin.ruleKey) {
            records.policy = decision
            if let refusal {
                reject(head, requestID: requestID, error: refusal)
                return
            }
        }
        startExchange(head, requestID: requestID, origin: origin, path: path, url: origin.url(path: path))
    }
}
