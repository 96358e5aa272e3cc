import CLookoutSSL

/// A TLS protocol version this library negotiates: TLS 1.2 (RFC 5246) or TLS 1.3 (RFC 8446).
public enum TLSProtocolVersion: String, Sendable, Hashable, Comparable, CaseIterable {
    /// TLS 1.2.
    case tls12 = "1.2"
    /// TLS 1.3.
    case tls13 = "1.3"

    /// OpenSSL's constant (`TLS1_2_VERSION`, `TLS1_3_VERSION`).
    var openSSLValue: Int32 {
        switch self {
        case .tls12: return TLS1_2_VERSION
        case .tls13: return TLS1_3_VERSION
        }
    }

    /// The version for an OpenSSL version constant, if it is one of these.
    init?(openSSLValue: Int32) {
        switch openSSLValue {
        case TLS1_2_VERSION: self = .tls12
        case TLS1_3_VERSION: self = .tls13
        default: return nil
        }
    }

    /// OpenSSL's spelling: "TLSv1.2", "TLSv1.3".
    public var openSSLName: String { "TLSv" + rawValue }

    /// Orders by version number.
    public static func < (lhs: TLSProtocolVersion, rhs: TLSProtocolVersion) -> Bool {
        lhs.openSSLValue < rhs.openSSLValue
    }
}
