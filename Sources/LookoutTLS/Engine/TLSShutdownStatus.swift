/// The outcome of `TLSConnection.shutdown()`.
public enum TLSShutdownStatus: Sendable, Equatable {
    /// Our close_notify is queued in `takeCiphertext()`; the peer's has not arrived yet.
    case closeNotifySent
    /// Both close_notify alerts have been exchanged.
    case closed
    /// Nothing was sent: the handshake never completed or the connection already failed
    /// (RFC 8446 forbids further records after a fatal alert).
    case skipped
}
