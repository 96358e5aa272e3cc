/// Where a handshake stands after `TLSConnection.handshake()`.
public enum TLSHandshakeStatus: Sendable, Equatable {
    /// The handshake finished; application data can flow.
    case complete
    /// More ciphertext must be exchanged: send `takeCiphertext()` to the peer and feed its
    /// bytes to `receiveCiphertext(_:)`, then call `handshake()` again.
    case wantIO
    /// The handshake failed; `takeCiphertext()` may still hold an alert worth sending.
    case failed(TLSError)
}
