import HTTPTypes
import LookoutHTTP
import LookoutModel

/// Finds a cleartext WebSocket inside a blind `CONNECT` tunnel (what a client that proxies `ws://`
/// through CONNECT sends): the client's first bytes are a `GET` with `Upgrade: websocket`, the
/// origin's a 101. Then the tunnel's bytes are read as frames, as after an `Upgrade` the proxy
/// relayed itself. Anything else — TLS, another protocol, a head over 16 KiB — ends the looking
/// at once; the relay is never affected.
final class TunnelSniffer {  // confined to the tunnel's loop queue
    private enum State {
        case clientHead([UInt8])
        case upstreamHead([UInt8])
        case watching(WebSocketWatch)
        case off
    }

    private var state: State = .clientHead([])
    private let make: (HTTPFields) -> WebSocketWatch
    static let maximumHeadBytes = 16 * 1024

    /// `make`: the watch for the 101's fields.
    init(make: @escaping (HTTPFields) -> WebSocketWatch) {
        self.make = make
    }

    var isOff: Bool { if case .off = state { true } else { false } }

    var watch: WebSocketWatch? { if case .watching(let watch) = state { watch } else { nil } }

    func clientBytes(_ bytes: UnsafeRawBufferPointer) {
        switch state {
        case .watching(let watch):
            watch.clientBytes(bytes)
        case .clientHead(var head):
            head += bytes
            guard let end = Self.headEnd(head) else {
                state = head.count > Self.maximumHeadBytes || !Self.mayBeGET(head) ? .off : .clientHead(head)
                return
            }
            let text = String(decoding: head[..<end], as: UTF8.self).lowercased()
            let asksForWebSocket = text.hasPrefix("get ") && text.split(separator: "\r\n").contains {
                $0.hasPrefix("upgrade:") && String($0.dropFirst(8)).trimmingOWS().elementsEqual("websocket")
            }
            state = asksForWebSocket ? .upstreamHead([]) : .off
        default:
            return
        }
    }

    func upstreamBytes(_ bytes: UnsafeRawBufferPointer) {
        switch state {
        case .watching(let watch):
            watch.upstreamBytes(bytes)
        case .upstreamHead(var head):
            head += bytes
            guard let end = Self.headEnd(head) else {
                state = head.count > Self.maximumHeadBytes ? .off : .upstreamHead(head)
                return
            }
            let lines = String(decoding: head[..<end], as: UTF8.self).split(separator: "\r\n")
            guard let status = lines.first, status.hasPrefix("HTTP/1.1 101") else {
                state = .off
                return
            }
            var fields = HTTPFields()
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":"), let name = HTTPField.Name(String(line[..<colon])) else { continue }
                fields.append(HTTPField(name: name, value: String(String(line[line.index(after: colon)...]).trimmingOWS())))
            }
            let watch = make(fields)
            state = .watching(watch)
            let rest = Array(head[(end + 4)...])
            if !rest.isEmpty { rest.withUnsafeBytes { watch.upstreamBytes($0) } }
        default:
            return
        }
    }

    /// Where the head's blank line starts, if it has arrived.
    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        bytes.firstRange(of: [0x0d, 0x0a, 0x0d, 0x0a])?.lowerBound
    }

    /// The first bytes could still be a GET (so a TLS ClientHello ends the looking at once).
    private static func mayBeGET(_ head: [UInt8]) -> Bool {
        let get = Array("GET ".utf8)
        return head.prefix(4).elementsEqual(get.prefix(min(4, head.count)))
    }
}
