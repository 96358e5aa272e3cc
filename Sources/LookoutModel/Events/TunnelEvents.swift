/// `tunnel.didOpen`: bytes start to flow both ways (a CONNECT, or an exchange after its 101).
public struct TunnelDidOpen: EventKind {
    public static let name = "tunnel.didOpen"
    public var target: String
    public var address: String

    public init(target: String, address: String) {
        self.target = target
        self.address = address
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("target", target)
        writer.field("address", address)
    }
}

/// `tunnel.didClose`: both sides are done, with the bytes each way and how long it was open.
public struct TunnelDidClose: EventKind {
    public static let name = "tunnel.didClose"
    public var clientToUpstream: UInt64
    public var upstreamToClient: UInt64
    public var milliseconds: Double
    public var error: ProxyError?

    public init(clientToUpstream: UInt64, upstreamToClient: UInt64, milliseconds: Double, error: ProxyError? = nil) {
        self.clientToUpstream = clientToUpstream
        self.upstreamToClient = upstreamToClient
        self.milliseconds = milliseconds
        self.error = error
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("client_to_upstream", clientToUpstream)
        writer.field("upstream_to_client", upstreamToClient)
        writer.field("ms", milliseconds: milliseconds)
        if let error { writer.field("error", error) }
    }
}
