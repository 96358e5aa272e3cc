/// Where a TLS server gets the certificate chain and key it presents.
public enum TLSServerCertificateSource: Sendable {
    /// One chain (leaf first, then intermediates) and the leaf's key for every connection.
    case fixed(chain: [Certificate], key: PrivateKey)
    /// A chain chosen per connection from the client's SNI (RFC 6066 §3), called from
    /// OpenSSL's servername callback on the thread driving the handshake. The argument is
    /// the SNI host name, or the connection's `fallbackServerName` when the client sent no
    /// SNI (e.g. it connected to an IP address), or nil when there is neither. Throwing
    /// fails the handshake with a fatal alert (unrecognized_name when there was no name,
    /// internal_error otherwise) and a `certificateSelectionFailed` error.
    case perServerName(@Sendable (String?) throws -> (chain: [Certificate], key: PrivateKey))
}
