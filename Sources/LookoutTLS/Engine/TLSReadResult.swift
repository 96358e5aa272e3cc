/// The outcome of `TLSConnection.readPlaintext(into:)`.
public enum TLSReadResult: Sendable, Equatable {
    /// This many plaintext bytes were written to the buffer (at least 1).
    case bytes(Int)
    /// No complete record is buffered: feed more ciphertext.
    case wantsRead
    /// The peer sent close_notify (RFC 8446 §6.1); no more data will come.
    case closed
}
