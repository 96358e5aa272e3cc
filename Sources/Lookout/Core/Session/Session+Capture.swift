import Foundation
import LookoutAdmin
import LookoutHTTP
import LookoutIO
import LookoutSync

/// `POST /capture/namespaces`: transparent listeners inside another process's network namespace,
/// for `lookout exec --transparent`. The body names the process, `{"pid": N}`, and where the
/// namespace's DNS queries go, `"dns": "HOST:PORT"` (optional); the answer names the ports its
/// nftables rules redirect to.
extension Session {
    func captureNamespace(body: [UInt8]) -> AdminAnswer {
        guard let value = try? JSONSerialization.jsonObject(with: Data(body)), let object = value as? [String: Any],
              let pid = object["pid"] as? Int, pid > 0, pid <= Int(Int32.max) else {
            return Self.captureAnswer(400, "{\"error\":\"the body must be {\\\"pid\\\": N, \\\"dns\\\": \\\"HOST:PORT\\\"}\"}")
        }
        var dns: SocketAddress?
        if let text = object["dns"] as? String {
            guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
                  let address = SocketAddress(ip: String(text[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]")),
                                              port: port) else {
                return Self.captureAnswer(400, "{\"error\":\"dns must be an IP address and port, e.g. 127.0.0.53:53\"}")
            }
            dns = address
        }
        guard !isShuttingDown else {
            return Self.captureAnswer(503, "{\"error\":\"Lookout is shutting down\"}")
        }
        do {
            let capture = try NamespaceCapture(
                pid: Int32(pid), dns: dns, queue: acceptQueue,
                accept: { [unowned self] fd, peer, listener in
                    accept(fd: fd, peer: peer, local: nil, role: .transparent, listener: listener)
                },
                onExit: { [weak self] capture in
                    self?.namespaceCaptures.withLock { $0.removeValue(forKey: capture.pid) }
                })
            let replaced = namespaceCaptures.withLock { captures in
                let old = captures[capture.pid]
                captures[capture.pid] = capture
                return old
            }
            replaced?.stop()
            capture.start()
            return Self.captureAnswer(201, capture.json)
        } catch {
            return Self.captureAnswer(error.status, "{\"error\":\(JSONText.quoted(error.message))}")
        }
    }

    /// Closes every namespace's listeners (shutdown).
    func stopNamespaceCaptures() {
        let captures = namespaceCaptures.withLock { captures in
            defer { captures = [:] }
            return Array(captures.values)
        }
        captures.forEach { $0.stop() }
    }

    private static func captureAnswer(_ status: Int, _ json: String) -> AdminAnswer {
        AdminAnswer(status: status, contentType: "application/json", body: Array((json + "\n").utf8))
    }
}
