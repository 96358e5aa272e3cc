/// A TLS failure, with OpenSSL's own explanation.
public struct TLSError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The failure category; raw values are stable snake_case codes.
    public enum Kind: String, Sendable, Hashable {
        /// The handshake failed (version or cipher mismatch, bad message, an alert from the
        /// peer, garbage instead of TLS, …).
        case handshakeFailed = "tls_handshake_failed"
        /// A record-layer or protocol failure after the handshake.
        case protocolError = "tls_protocol_error"
        /// The transport ended without close_notify (RFC 8446 §6.1 truncation).
        case unexpectedEOF = "tls_unexpected_eof"
        /// The server's certificate selector threw or returned an unusable chain.
        case certificateSelectionFailed = "tls_certificate_selection_failed"
        /// The `TLSConfiguration` could not be applied.
        case invalidConfiguration = "tls_invalid_configuration"
    }

    /// The failure category.
    public let kind: Kind
    /// OpenSSL's reason text, e.g. "unsupported protocol" or "tlsv1 alert protocol version";
    /// several entries are joined with "; ".
    public let reason: String
    /// The full error-queue entries as `ERR_error_string_n` renders them,
    /// e.g. "error:0A000102:SSL routines::unsupported protocol".
    public let openSSLErrors: [String]
    /// The description of the fatal alert received from the peer, e.g. "protocol version"
    /// (`SSL_alert_desc_string_long`).
    public let alertReceived: String?
    /// The description of the fatal alert this side sent.
    public let alertSent: String?
    /// The `SSL_get_error` code (`SSL_ERROR_SSL` = 1, `SSL_ERROR_SYSCALL` = 5, …); 0 when
    /// no SSL call was involved.
    public let sslErrorCode: Int32

    /// Creates an error.
    public init(kind: Kind, reason: String, openSSLErrors: [String] = [], alertReceived: String? = nil,
                alertSent: String? = nil, sslErrorCode: Int32 = 0) {
        self.kind = kind
        self.reason = reason
        self.openSSLErrors = openSSLErrors
        self.alertReceived = alertReceived
        self.alertSent = alertSent
        self.sslErrorCode = sslErrorCode
    }

    /// The snake_case code.
    public var code: String { kind.rawValue }

    /// "tls_handshake_failed: unsupported protocol [error:0A000102:…]; alert sent: protocol version".
    public var description: String {
        var text = "\(kind.rawValue): \(reason)"
        if !openSSLErrors.isEmpty { text += " [\(openSSLErrors.joined(separator: "; "))]" }
        if let alertReceived { text += "; alert received: \(alertReceived)" }
        if let alertSent { text += "; alert sent: \(alertSent)" }
        return text
    }
}
