/// A `Content-Range` of a `206` (RFC 9110 §14.4): `bytes first-last/complete`, where the
/// complete length may be `*` (unknown).
public struct ContentRange: Sendable, Equatable {
    public let first: UInt64
    public let last: UInt64
    public let completeLength: UInt64?

    public init(first: UInt64, last: UInt64, completeLength: UInt64?) {
        self.first = first
        self.last = last
        self.completeLength = completeLength
    }

    /// Nil unless `text` is exactly `bytes first-last/(complete|*)` with first ≤ last < complete.
    public init?(_ text: String) {
        guard text.hasPrefix("bytes ") else { return nil }
        let rest = text.dropFirst(6)
        guard let slash = rest.firstIndex(of: "/"), let dash = rest[..<slash].firstIndex(of: "-") else { return nil }
        func number(_ s: Substring) -> UInt64? {
            guard !s.isEmpty, s.count <= 19, s.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return UInt64(s)
        }
        guard let first = number(rest[..<dash]), let last = number(rest[rest.index(after: dash)..<slash]), first <= last
        else { return nil }
        let complete = rest[rest.index(after: slash)...]
        if complete == "*" {
            self.init(first: first, last: last, completeLength: nil)
        } else {
            guard let length = number(complete), last < length else { return nil }
            self.init(first: first, last: last, completeLength: length)
        }
    }
}
