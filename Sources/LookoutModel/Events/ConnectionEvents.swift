/// `connection.didOpen`: a client connection was accepted.
public struct ConnectionDidOpen: EventKind {
    public static let name = "connection.didOpen"
    public var client: String
    public var listener: String

    public init(client: String, listener: String) {
        self.client = client
        self.listener = listener
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("client", client)
        writer.field("listener", listener)
    }
}

/// `connection.didClose`: a client connection ended, with why and what crossed it.
public struct ConnectionDidClose: EventKind {
    public static let name = "connection.didClose"
    public var reason: String
    public var requests: Int
    public var bytesReceived: UInt64
    public var bytesSent: UInt64

    public init(reason: String, requests: Int, bytesReceived: UInt64, bytesSent: UInt64) {
        self.reason = reason
        self.requests = requests
        self.bytesReceived = bytesReceived
        self.bytesSent = bytesSent
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("reason", reason)
        writer.field("requests", requests)
        writer.field("bytes_received", bytesReceived)
        writer.field("bytes_sent", bytesSent)
    }
}

/// `connection.wasRejected`: a connection refused before any request (limits, shutdown).
/// Written in default mode too: a refusal is no exchange, but must be seen.
public struct ConnectionWasRejected: EventKind {
    public static let name = "connection.wasRejected"
    public static let interest = EventInterest.summaries
    public var client: String
    public var error: ProxyError

    public init(client: String, error: ProxyError) {
        self.client = client
        self.error = error
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("client", client)
        writer.field("error", error)
    }
}

/// `connection.didCompleteClientTLSHandshake`: an intercepted client's TLS is up.
public struct ConnectionDidCompleteClientTLSHandshake: EventKind {
    public static let name = "connection.didCompleteClientTLSHandshake"
    public var serverName: String?
    public var version: String
    public var cipher: String
    public var applicationProtocol: String?

    public init(serverName: String? = nil, version: String, cipher: String, applicationProtocol: String? = nil) {
        self.serverName = serverName
        self.version = version
        self.cipher = cipher
        self.applicationProtocol = applicationProtocol
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        if let serverName { writer.field("sni", serverName) }
        writer.field("version", version)
        writer.field("cipher", cipher)
        if let applicationProtocol { writer.field("alpn", applicationProtocol) }
    }
}

/// `connection.didFailClientTLSHandshake`: an intercepted client's handshake failed.
public struct ConnectionDidFailClientTLSHandshake: EventKind {
    public static let name = "connection.didFailClientTLSHandshake"
    public var serverName: String?
    public var error: ProxyError

    public init(serverName: String? = nil, error: ProxyError) {
        self.serverName = serverName
        self.error = error
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        if let serverName { writer.field("sni", serverName) }
        writer.field("error", error)
    }
}

/// `connection.didEndHTTP2`: an intercepted client's HTTP/2 connection ended with a GOAWAY
/// carrying the error `code` (RFC 9113 §7): a protocol error nghttp2 or Lookout found, or abuse
/// such as rapid reset (ENHANCE_YOUR_CALM). Written in default mode too: no exchange record says it.
public struct ConnectionDidEndHTTP2: EventKind {
    public static let name = "connection.didEndHTTP2"
    public static let interest = EventInterest.summaries
    public var code: String
    public var reason: String

    public init(code: String, reason: String) {
        self.code = code
        self.reason = reason
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("code", code)
        writer.field("reason", reason)
    }
}

/// `tls.clientRejectedInterception`: an intercepted client ended the handshake refusing Lookout's
/// certificate (an alert such as `unknown ca`, or closing right after the server's flight) — it
/// pins, or trusts only its own roots. Written in the default mode too.
public struct TLSClientRejectedInterception: EventKind {
    public static let name = "tls.clientRejectedInterception"
    public static let interest = EventInterest.summaries
    public var serverName: String?
    public var ja4: String?
    public var alert: String
    /// `interception.learn_passthrough` took the pair: its next connections are tunnelled blindly.
    public var learned: Bool

    public init(serverName: String?, ja4: String?, alert: String, learned: Bool) {
        self.serverName = serverName
        self.ja4 = ja4
        self.alert = alert
        self.learned = learned
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        if let serverName { writer.field("sni", serverName) }
        if let ja4 { writer.field("ja4", ja4) }
        writer.field("alert", alert)
        writer.field("learned", learned)
    }
}
