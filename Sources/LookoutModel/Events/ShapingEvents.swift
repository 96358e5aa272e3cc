/// `request.didMapRemote`: a `map.remote` rule sent the request to another origin.
public struct RequestDidMapRemote: EventKind {
    public static let name = "request.didMapRemote"
    public static let interest = EventInterest.summaries
    /// The rule's `from` and `to`, as written.
    public var from: String
    public var to: String
    /// The URL the client asked for, and the one requested instead.
    public var url: String
    public var mappedURL: String
    public var preserveHost: Bool

    public init(from: String, to: String, url: String, mappedURL: String, preserveHost: Bool) {
        self.from = from
        self.to = to
        self.url = url
        self.mappedURL = mappedURL
        self.preserveHost = preserveHost
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("from", from)
        writer.field("to", to)
        writer.field("url", url: url)
        writer.field("mapped_url", url: mappedURL)
        writer.field("preserve_host", preserveHost)
    }
}

/// `request.didMapLocal`: a `map.local` rule answered the request from a file; no upstream.
public struct RequestDidMapLocal: EventKind {
    public static let name = "request.didMapLocal"
    public static let interest = EventInterest.summaries
    public var from: String
    public var file: String
    public var status: Int
    public var contentType: String
    public var bytes: UInt64

    public init(from: String, file: String, status: Int, contentType: String, bytes: UInt64) {
        self.from = from
        self.file = file
        self.status = status
        self.contentType = contentType
        self.bytes = bytes
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("from", from)
        writer.field("file", file)
        writer.field("status", status)
        writer.field("content_type", contentType)
        writer.field("bytes", bytes)
    }
}

/// `request.didShape` / `tunnel.didShape`: a shaping rule applies; what it does to this exchange
/// or tunnel (the summary's `shaping`, without the faults, which have records of their own).
extension ShapingSummary {
    func encodeRule<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("rule", rule)
        if !profile.isEmpty { writer.field("profile", profile) }
        writer.field("latency_ms", milliseconds: latencyMilliseconds)
        writer.field("download_kbps", number: downloadKbps)
        writer.field("upload_kbps", number: uploadKbps)
    }
}

public struct RequestDidShape: EventKind {
    public static let name = "request.didShape"
    public static let interest = EventInterest.summaries
    public var shaping: ShapingSummary

    public init(shaping: ShapingSummary) {
        self.shaping = shaping
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) { shaping.encodeRule(to: &writer) }
}

public struct TunnelDidShape: EventKind {
    public static let name = "tunnel.didShape"
    public static let interest = EventInterest.summaries
    public var shaping: ShapingSummary

    public init(shaping: ShapingSummary) {
        self.shaping = shaping
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) { shaping.encodeRule(to: &writer) }
}

/// `request.didInjectFault`: a shaping rule's fault hit this exchange on purpose.
public struct RequestDidInjectFault: EventKind {
    public static let name = "request.didInjectFault"
    public static let interest = EventInterest.summaries

    public enum Fault: Sendable {
        /// `faults.status`: the status answered.
        case status(Int)
        /// `faults.reset_after_bytes`: the body bytes sent before the reset.
        case resetAfterBytes(UInt64)
        /// `faults.stall_ms`.
        case stall(milliseconds: Double)

        /// The name in the record's `fault` and in the summary's `shaping.faults`.
        public var name: String {
            switch self {
            case .status: "status"
            case .resetAfterBytes: "reset_after_bytes"
            case .stall: "stall"
            }
        }
    }

    public var rule: String
    public var fault: Fault

    public init(rule: String, fault: Fault) {
        self.rule = rule
        self.fault = fault
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("rule", rule)
        writer.field("fault", fault.name)
        switch fault {
        case .status(let code): writer.field("status", code)
        case .resetAfterBytes(let bytes): writer.field("bytes", bytes)
        case .stall(let milliseconds): writer.field("stall_ms", milliseconds: milliseconds)
        }
    }
}
