import CLookoutSSL

/// Owns one reference to an OpenSSL `SSL_SESSION` kept for client-side resumption.
/// Sessions are immutable once complete, so sharing one between threads is safe.
final class SSLSession: @unchecked Sendable {
    /// The `SSL_SESSION*`.
    let pointer: OpaquePointer

    /// Takes ownership of one reference.
    init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        SSL_SESSION_free(pointer)
    }
}
