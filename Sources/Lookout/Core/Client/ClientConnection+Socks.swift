import LookoutIO
import LookoutModel

/// A SOCKS5 listener's connection (RFC 1928): the greeting, username/password when `auth.users`
/// is set (RFC 1929), and a CONNECT request; then the stream is a captured connection's
/// (`ClientConnection+Capture.swift`). BIND and UDP ASSOCIATE get reply 07.
extension ClientConnection {
    func beginSocks() {
        let state = CaptureState(phase: .socksGreeting)
        capture = state
        records.captured = CapturedConnection(method: CaptureTarget.Method.socks5.rawValue, destination: "")
        let limit = environment.timeouts.clientHeader
        connection.loop.execute(after: limit) { [weak self, weak state] in
            guard let self, let state, capture === state, !isClosed else { return }
            switch state.phase {
            case .socksGreeting, .socksCredentials, .socksRequest:
                refuseCapture(.clientFailed(reason: .headerTimedOut(after: limit)), url: "")
            default:
                return
            }
        }
        connection.resumeReading()
    }

    /// Handshake bytes: each message as soon as it is whole (a client may send several at once).
    func socksBytesArrived(_ bytes: UnsafeRawBufferPointer, _ state: CaptureState) {
        state.bytes += bytes
        while capture === state, !isClosed {
            let consumed: Int?
            switch state.phase {
            case .socksGreeting: consumed = socksGreeting(state)
            case .socksCredentials: consumed = socksCredentials(state)
            case .socksRequest: consumed = socksRequest(state)
            default: return
            }
            guard let consumed else { return }
            if capture === state, state.phase == .socksGreeting || state.phase == .socksCredentials
                || state.phase == .socksRequest {
                state.bytes.removeFirst(consumed)
            }
        }
    }

    /// RFC 1928 §3: "no authentication" without `auth.users`, username/password with it.
    private func socksGreeting(_ state: CaptureState) -> Int? {
        switch Socks5.greeting(state.bytes[...]) {
        case .needMore:
            return nil
        case .invalid(let why):
            refuseCapture(.requestRejected(reason: .socksMalformed(why)), url: "")
            return nil
        case .done(let methods, let consumed):
            // With auth.users, credentials are asked for (offered, they identify the client for the
            // policy even when not required).
            let asks = rules.authenticator != nil
            let wanted: UInt8? = asks && methods.contains(Socks5.usernamePassword) ? Socks5.usernamePassword
                : (!asks || !rules.credentialsRequired) && methods.contains(Socks5.noAuthentication)
                ? Socks5.noAuthentication : nil
            guard let wanted else {
                connection.write([5, Socks5.noAcceptableMethods])
                refuseCapture(.requestRejected(reason: .socksNoAcceptableMethod(offered: methods)), url: "")
                return nil
            }
            connection.write([5, wanted])
            state.phase = wanted == Socks5.usernamePassword ? .socksCredentials : .socksRequest
            return consumed
        }
    }

    /// RFC 1929 §2: status 0 lets the client go on; any other, and the server closes.
    private func socksCredentials(_ state: CaptureState) -> Int? {
        switch Socks5.credentials(state.bytes[...]) {
        case .needMore:
            return nil
        case .invalid(let why):
            refuseCapture(.requestRejected(reason: .socksMalformed(why)), url: "")
            return nil
        case .done(let credentials, let consumed):
            guard rules.authenticator?.accepts(user: credentials.user, password: credentials.password) ?? true else {
                connection.write([1, 1])
                refuseCapture(.requestRejected(reason: .socksAuthenticationFailed), url: "")
                return nil
            }
            connection.write([1, 0])
            if rules.authenticator != nil { authenticatedUser = credentials.user }
            state.phase = .socksRequest
            return consumed
        }
    }

    /// RFC 1928 §4: CONNECT is answered at once (the stream's first bytes decide where it goes,
    /// so they must come first); anything else gets its failure reply.
    private func socksRequest(_ state: CaptureState) -> Int? {
        switch Socks5.request(state.bytes[...]) {
        case .needMore:
            return nil
        case .invalid(let why):
            connection.write(Socks5.reply(.generalFailure))
            refuseCapture(.requestRejected(reason: .socksMalformed(why)), url: "")
            return nil
        case .done(.failure(let error), _):
            connection.write(Socks5.reply(error.reply))
            refuseCapture(.requestRejected(reason: .socksMalformed(error.message)), url: "")
            return nil
        case .done(.success(let request), let consumed):
            let target = CaptureTarget(method: .socks5, host: request.host, port: request.port)
            guard request.command == 1 else {
                records.captured = target.record
                connection.write(Socks5.reply(.commandNotSupported))
                refuseCapture(.requestRejected(reason: .socksCommandNotSupported(command: request.command)),
                              url: target.destination)
                return nil
            }
            connection.write(Socks5.reply(.succeeded))
            let early = Array(state.bytes[consumed...])
            beginCapture(target, early: early)
            return nil
        }
    }
}
