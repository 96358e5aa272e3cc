import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutModel
import LookoutTLS
import LookoutUpstream

/// `Upgrade: h2c` (RFC 7540 §3.2; RFC 9113 §3.1 deprecates the mechanism, and curl's `--http2`
/// still uses it for cleartext URLs): the proxy takes the upgrade itself, so the connection goes on
/// as HTTP/2 to Lookout and every stream is an exchange of its own, seen and policed like any
/// other. Upstream, each request goes as Lookout's upstream settings say.
extension ClientConnection {
    private static let http2SettingsField = HTTPField.Name("HTTP2-Settings")!

    /// The decoded `HTTP2-Settings` of a request that asks for h2c and may have it, or nil: the
    /// request is then served as HTTP/1.1, as a server that ignores `Upgrade` does (RFC 9110
    /// §7.8). Only on a cleartext proxy connection (h2c is never used over TLS, RFC 7540 §3.3),
    /// with HTTP/2 toward clients on (`http2.client`), and for a request without a body.
    func h2cSettings(_ head: RequestHead) -> [UInt8]? {
        guard environment.http2.client, interceptedOrigin == nil, connection is Connection,
              head.framing == .none, let upgrade = head.upgrade, FieldList.contains("h2c", in: upgrade) else { return nil }
        // RFC 7540 §3.2.1: exactly one HTTP2-Settings, named in Connection as an option too.
        let values = head.headerFields[values: Self.http2SettingsField]
        guard values.count == 1, let connectionOptions = head.headerFields[.connection],
              FieldList.contains("http2-settings", in: connectionOptions),
              let payload = Base64.decodeURLSafe(values[0]) else { return nil }
        return payload
    }

    /// Answers 101 and hands the connection to an HTTP/2 side whose stream 1 is `head`. Returns
    /// false, with nothing written, when the settings are refused: the request then goes on
    /// as HTTP/1.1.
    func beginH2C(_ head: RequestHead, settings: [UInt8], requestID: UInt64, origin: Origin, path: String,
                  url: String) -> Bool {
        let side: HTTP2ClientSide
        do {
            side = try HTTP2ClientSide(stream: connection, environment: environment.exchanges, http2: environment.http2,
                                       access: environment.access, context: context, records: records,
                                       routing: .forwardProxy(environment), identity: identity, delegate: self)
            try side.acceptUpgrade(settingsPayload: settings, headRequest: head.method == .head)
        } catch {
            return false
        }
        timer.cancel()
        http2 = side
        connection.pauseReading()
        connection.write(Self.switchingToH2C)
        var upgraded = head
        upgraded.version = .http2
        upgraded.upgrade = nil
        // What the client sent behind the request (its preface) is set aside once this read is
        // handled: the HTTP/2 side starts on the loop's next turn and takes it first.
        connection.loop.execute { [weak self, upgraded] in
            guard let self, !isClosed, let http2 = self.http2 else { return }
            let early = stash
            stash = []
            http2.startUpgraded(head: upgraded, requestID: requestID, origin: origin, path: path, url: url, early: early)
        }
        return true
    }

    private static let switchingToH2C: [UInt8] = Array(
        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n".utf8)
}
