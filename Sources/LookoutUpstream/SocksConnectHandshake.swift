import LookoutIO
import LookoutModel
#if canImport(Glibc)
import Glibc
#endif

/// Asks a SOCKS5 parent (RFC 1928) for a stream to an origin on a fresh connection to it: the
/// greeting (no authentication, or username/password per RFC 1929 when the URL has them), then
/// `CONNECT` to the origin's address or name. Any failure — no acceptable method, refused
/// credentials, a reply other than 00, a malformed or cut answer, the time limit — is
/// `parent_proxy_failed` with what the parent said. Reports on a later turn of the loop.
package final class SocksConnectHandshake: ConnectionDelegate, @unchecked Sendable {  // confined to the connection's loop queue
    private enum Step { case method, credentials, reply }

    private let connection: Connection
    private let parent: ParentProxy
    private let target: String
    private let request: [UInt8]
    private let completion: (ParentConnectHandshake.Outcome) -> Void
    private let timer: LoopTimer
    private var step = Step.method
    private var received: [UInt8] = []
    private var finished = false

    /// `host`: an IP literal, or a name the parent resolves (socks5h).
    package init(connection: Connection, host: String, port: Int, parent: ParentProxy, timeout: Double,
                 completion: @escaping (ParentConnectHandshake.Outcome) -> Void) {
        self.connection = connection
        self.parent = parent
        self.completion = completion
        self.timer = LoopTimer(loop: connection.loop)
        target = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]:\(port)" : "\(host):\(port)"
        request = Self.connectRequest(host: host, port: port)
        connection.delegate = self
        // RFC 1928 §3: the methods offered; username/password (02) only with credentials.
        connection.write(parent.socksCredentials == nil ? [5, 1, 0] : [5, 1, 2])
        connection.resumeReading()
        timer.schedule(after: timeout) { [unowned self] in
            finish(.failure(failure("no SOCKS5 answer for \(target) within \(timeout) s")), close: true)
        }
    }

    package func cancel() {
        guard !finished else { return }
        finished = true
        timer.invalidate()
        connection.delegate = nil
        connection.close()
    }

    /// VER CMD RSV ATYP DST.ADDR DST.PORT (§4): an address as itself, else the name (ATYP 3).
    static func connectRequest(host: String, port: Int) -> [UInt8] {
        var bytes: [UInt8] = [5, 1, 0]
        if let address = SocketAddress(ip: host, port: port) {
            bytes += address.family == Int32(AF_INET6) ? [4] : [1]
            bytes += address.addressBytes
        } else {
            let name = Array(host.utf8.prefix(255))
            bytes += [3, UInt8(name.count)] + name
        }
        return bytes + [UInt8(port >> 8), UInt8(port & 0xFF)]
    }

    private func failure(_ detail: String) -> ProxyError {
        .upstreamFailed(reason: .parentProxyFailed(proxy: parent.description, detail: detail))
    }

    private func finish(_ outcome: ParentConnectHandshake.Outcome, close: Bool) {
        guard !finished else { return }
        finished = true
        timer.invalidate()
        connection.pauseReading()
        connection.delegate = nil
        if close { connection.close() }
        let report = Report(completion: completion, outcome: outcome)
        connection.loop.execute { report.completion(report.outcome) }
    }

    package func connection(_ connection: ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        received.append(contentsOf: bytes)
        while !finished, let consumed = advance() {
            received.removeFirst(consumed)
        }
    }

    /// One step when its answer is whole: the bytes it took, or nil to wait (or when finished).
    private func advance() -> Int? {
        switch step {
        case .method:
            guard received.count >= 2 else { return nil }
            guard received[0] == 5 else { return fail("answered version \(received[0]), not SOCKS5") }
            switch received[1] {
            case 0:
                connection.write(request)
                step = .reply
            case 2 where parent.socksCredentials != nil:
                let credentials = parent.socksCredentials!
                let user = Array(credentials.user.utf8), password = Array(credentials.password.utf8)
                connection.write([1, UInt8(user.count)] + user + [UInt8(password.count)] + password)
                step = .credentials
            default:
                return fail(parent.socksCredentials == nil
                    ? "accepts none of the offered methods (it may want credentials: give them in the upstream_proxies URL)"
                    : "accepts none of the offered methods")
            }
            return 2
        case .credentials:
            guard received.count >= 2 else { return nil }
            guard received[1] == 0 else { return fail("refused the user name and password (RFC 1929 status \(received[1]))") }
            connection.write(request)
            step = .reply
            return 2
        case .reply:
            guard received.count >= 5 else { return nil }
            guard received[0] == 5 else { return fail("answered version \(received[0]), not SOCKS5") }
            guard received[1] == 0 else { return fail("answered CONNECT \(target) with \(Self.replyText(received[1]))") }
            let length: Int
            switch received[3] {
            case 1: length = 4 + 4 + 2
            case 3: length = 4 + 1 + Int(received[4]) + 2
            case 4: length = 4 + 16 + 2
            default: return fail("answered with address type \(received[3])")
            }
            guard received.count >= length else { return nil }
            finish(.success(Array(received[length...])), close: false)
            return nil
        }
    }

    private func fail(_ detail: String) -> Int? {
        finish(.failure(failure(detail)), close: true)
        return nil
    }

    /// RFC 1928 §6 reply codes.
    static func replyText(_ code: UInt8) -> String {
        let names: [UInt8: String] = [1: "general failure", 2: "not allowed by ruleset", 3: "network unreachable",
                                      4: "host unreachable", 5: "connection refused", 6: "TTL expired",
                                      7: "command not supported", 8: "address type not supported"]
        return "reply \(code) (\(names[code] ?? "unassigned"))"
    }

    package func connectionDidReadEOF(_ connection: ByteStream) {
        finish(.failure(failure("closed the connection during the SOCKS5 handshake for \(target)")), close: true)
    }

    package func connectionDidDrain(_ connection: ByteStream) {}

    package func connection(_ connection: ByteStream, didFailWith error: SocketError) {
        finish(.failure(failure("\(error.description) during the SOCKS5 handshake for \(target)")), close: false)
    }

    private struct Report: @unchecked Sendable {  // delivered on the same loop's queue
        let completion: (ParentConnectHandshake.Outcome) -> Void
        let outcome: ParentConnectHandshake.Outcome
    }
}
