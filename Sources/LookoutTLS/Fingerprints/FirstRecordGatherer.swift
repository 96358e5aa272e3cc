/// Gathers a client's first TLS record from copies of the bytes that pass (a blind tunnel's, or
/// an interception's before OpenSSL reads them), for its ClientHello's fingerprint. Holds at most
/// one record (16 KiB and its header, RFC 8446 §5.1), and stops at the first byte that is not a
/// handshake record.
public struct FirstRecordGatherer: Sendable {
    private var bytes: [UInt8] = []
    public private(set) var isDone = false
    static let maximumBytes = 5 + (1 << 14)

    public init() {}

    /// Feeds `input`; the record once it is whole (returned once), else nil.
    public mutating func feed(_ input: UnsafeRawBufferPointer) -> [UInt8]? {
        guard !isDone, !input.isEmpty else { return nil }
        bytes += input.prefix(Self.maximumBytes - bytes.count)
        guard let length = ClientHello.recordLength(bytes) else { return finish(nil) }
        guard length > 0 else { return nil }
        guard length <= Self.maximumBytes else { return finish(nil) }
        guard bytes.count >= length else { return nil }
        return finish(Array(bytes.prefix(length)))
    }

    private mutating func finish(_ record: [UInt8]?) -> [UInt8]? {
        isDone = true
        bytes = []
        return record
    }

    /// The JA4S of the first record's ServerHello (an origin's), once whole.
    public mutating func ja4s(after input: UnsafeRawBufferPointer) -> String? {
        feed(input).flatMap { ServerHello(record: $0) }.map(JA4S.fingerprint)
    }

    /// The JA4 of the first record's ClientHello, once whole; nil before, or when it is none.
    public mutating func ja4(after input: UnsafeRawBufferPointer) -> String? {
        feed(input).flatMap { ClientHello(record: $0) }.map(JA4.fingerprint)
    }
}
