import HTTPTypes
import LookoutHTTP
import LookoutModel

/// Where a connection that did not ask Lookout as a proxy goes: what a transparent listener's
/// original destination or a SOCKS5 request named.
struct CaptureTarget: Sendable {
    enum Method: String, Sendable {
        case transparent, socks5
    }

    let method: Method
    /// The host for rules and records until the connection's first bytes name a better one (the
    /// ClientHello's SNI, an HTTP request's Host): an address, or the name a SOCKS5 client sent.
    let host: String
    let port: Int
    /// What to connect to: the original destination's address, or the SOCKS5 request's address
    /// or name. The name the connection's bytes give is for rules, records and TLS; this is where
    /// the client was going.
    let dial: String

    init(method: Method, host: String, port: Int) {
        self.method = method
        self.host = host
        self.port = port
        self.dial = host
    }

    /// "host:port", IPv6 in brackets: the records' `original_destination`.
    var destination: String {
        host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    var record: CapturedConnection { CapturedConnection(method: method.rawValue, destination: destination) }

    /// The CONNECT a proxy client would have sent for `host` (the records of tunnels and
    /// interception name one).
    func connectHead(host: String) -> RequestHead {
        let authority = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]:\(port)" : "\(host):\(port)"
        return RequestHead(method: .connect, rawTarget: authority, target: .authority(host: host, port: port),
                           version: .http1_1, headerFields: [:], framing: .none, keepAlive: false,
                           expectsContinue: false, upgrade: nil, headLength: 0)
    }
}
