import LookoutIO
import LookoutTLS
import LookoutModel

/// Asks a parent proxy for a tunnel to an origin (`CONNECT host:port`, RFC 9110 §9.3.6) on a
/// fresh connection to it, and reads its answer: any 2xx opens the tunnel; anything else, a
/// malformed or oversized answer, the parent closing or the time limit is `parent_proxy_failed`
/// with what the parent said. Reports on a later turn of the loop, never inside a read.
package final class ParentConnectHandshake: ConnectionDelegate, @unchecked Sendable {  // confined to the connection's loop queue
    package enum Outcome {
        /// Bytes that came right behind the parent's answer (the origin's, in a server-first protocol).
        case success([UInt8])
        case failure(ProxyError)
    }

    private let connection: Connection
    private let parent: ParentProxy
    private let authority: String
    private let completion: (Outcome) -> Void
    private let timer: LoopTimer
    private var received: [UInt8] = []
    private var sentClientAuthorization = false
    private var finished = false
    /// A status line and a few fields; a parent that says more is not answering a CONNECT.
    private static let maximumAnswerBytes = 16 * 1024

    /// `clientAuthorization`: the client's own `Proxy-Authorization`, sent when the parent's URL
    /// has no credentials (and Lookout asks for none); a 407 then goes back to the client.
    package init(connection: Connection, authority: String, parent: ParentProxy, clientAuthorization: String?, timeout: Double,
         completion: @escaping (Outcome) -> Void) {
        self.connection = connection
        self.parent = parent
        self.authority = authority
        self.completion = completion
        self.timer = LoopTimer(loop: connection.loop)
        var request = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        if let authorization = parent.authorization ?? clientAuthorization {
            request += "Proxy-Authorization: \(authorization)\r\n"
        }
        sentClientAuthorization = parent.authorization == nil && clientAuthorization != nil
        request += "\r\n"
        connection.delegate = self
        connection.write(Array(request.utf8))
        connection.resumeReading()
        timer.schedule(after: timeout) { [unowned self] in
            finish(.failure(failure("no answer to CONNECT \(authority) within \(timeout) s")), close: true)
        }
    }

    package func cancel() {
        guard !finished else { return }
        finished = true
        timer.invalidate()
        connection.delegate = nil
        connection.close()
    }

    private func failure(_ detail: String) -> ProxyError {
        .upstreamFailed(reason: .parentProxyFailed(proxy: parent.description, detail: detail))
    }

    private func finish(_ outcome: Outcome, close: Bool) {
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
        guard let end = Self.endOfHead(received) else {
            if received.count > Self.maximumAnswerBytes {
                finish(.failure(failure("answer to CONNECT \(authority) exceeds \(Self.maximumAnswerBytes) bytes")), close: true)
            }
            return
        }
        let statusLine = received.prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }
        let parts = String(decoding: statusLine, as: UTF8.self).split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]), (100...599).contains(status) else {
            finish(.failure(failure("malformed answer to CONNECT \(authority)")), close: true)
            return
        }
        if status == 407 && sentClientAuthorization {
            let challenges = String(decoding: received[..<end], as: UTF8.self)
                .split(whereSeparator: { $0 == "\r\n" || $0 == "\n" })
                .compactMap { line -> String? in
                    guard let colon = line.firstIndex(of: ":"),
                          line[..<colon].lowercased() == "proxy-authenticate" else { return nil }
                    return line[line.index(after: colon)...].trimmingASCIIWhitespace()
                }
            finish(.failure(.upstreamFailed(reason: .parentProxyAuthenticationRequired(
                proxy: parent.description, challenges: challenges))), close: true)
            return
        }
        guard (200...299).contains(status) else {
            let reason = parts.count > 2 ? " \(parts[2])" : ""
            let hint = status == 407 ? " (the parent wants credentials: give them in the upstream_proxies URL)" : ""
            finish(.failure(failure("CONNECT \(authority) answered \(status)\(reason)\(hint)")), close: true)
            return
        }
        finish(.success(Array(received[end...])), close: false)
    }

    package func connectionDidReadEOF(_ connection: ByteStream) {
        finish(.failure(failure("closed the connection before answering CONNECT \(authority)")), close: true)
    }

    package func connectionDidDrain(_ connection: ByteStream) {}

    package func connection(_ connection: ByteStream, didFailWith error: SocketError) {
        finish(.failure(failure("\(error.description) before answering CONNECT \(authority)")), close: false)
    }

    /// The outcome on its way to the next turn of the loop it was made on.
    private struct Report: @unchecked Sendable {  // delivered on the same loop's queue
        package let completion: (Outcome) -> Void
        package let outcome: Outcome
    }

    /// The index right after the blank line ending the head, if it has come.
    private static func endOfHead(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 3..<bytes.count where bytes[i] == 0x0A {
            if bytes[i - 1] == 0x0D && bytes[i - 2] == 0x0A { return i + 1 }
            if bytes[i - 1] == 0x0A { return i + 1 }
        }
        return nil
    }
}
