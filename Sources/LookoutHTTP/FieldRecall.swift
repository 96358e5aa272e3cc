#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPTypes

/// The fields of the previous head parsed on one connection, by position.
///
/// A server answers a kept-alive connection with the same fields in the same order, most of them
/// with the same value: `Server`, `Content-Type`, `Cache-Control`, `Vary`, and `Date` for a whole
/// second. A field line whose bytes equal the remembered field at its position is taken from
/// here — no value string is allocated and nothing is validated again, since those exact bytes
/// passed before. HPACK's dynamic table (RFC 7541 §2.3.2) saves the same repetition on the wire
/// for HTTP/2; this saves it in memory for HTTP/1.1.
///
/// Kept per upstream connection (a few, pooled), not per client connection, whose idle memory
/// counts by the thousand; what it holds is at most one head's fields, which the parser's header
/// limits bound.
public struct FieldRecall: Sendable {
    /// Positions remembered: enough for a usual response head, and a bounded footprint.
    static let positions = 16

    private(set) var fields: [HTTPField] = []
    let isEnabled: Bool

    public init() {
        self.isEnabled = true
    }

    init(enabled: Bool) {
        self.isEnabled = enabled
    }

    /// The remembered field at `index` when the line `h[start..<end]` spells it exactly: its
    /// name, a colon, optional whitespace, its value, optional whitespace. `colon`, `valueStart`
    /// and `valueEnd` locate the parts for the framing facts.
    @inline(__always)
    func match(_ index: Int, _ h: Bytes, _ start: Int, _ end: Int)
        -> (field: HTTPField, colon: Int, valueStart: Int, valueEnd: Int)?
    {
        guard index < fields.count, let base = h.base else { return nil }
        return fields.withUnsafeBufferPointer { buffer in
            // Read in place: a copy of the candidate would retain and release its strings.
            let colon: Int? = buffer[index].name.rawName.utf8.withContiguousStorageIfAvailable { spelled in
                let colon = start + spelled.count
                guard colon < end, h[colon] == ASCII.colon,
                    memcmp(base + start, spelled.baseAddress!, spelled.count) == 0
                else { return nil }
                return colon
            } ?? nil
            guard let colon else { return nil }
            var vs = colon + 1
            var ve = end
            while vs < ve && isOWS(h[vs]) { vs += 1 }
            while ve > vs && isOWS(h[ve - 1]) { ve -= 1 }
            let same = buffer[index].withUnsafeBytesOfValue { value in
                value.count == ve - vs && (value.count == 0 || memcmp(base + vs, value.baseAddress!, value.count) == 0)
            }
            return same ? (buffer[index], colon, vs, ve) : nil
        }
    }

    /// Remembers the fields of the head just parsed in place of the previous ones; the positions
    /// in `unchanged` (bit i for position i) were taken from here and are left as they are.
    @inline(__always)
    mutating func remember(_ parsed: borrowing [HTTPField], unchanged: UInt32) {
        guard isEnabled else { return }
        let count = min(parsed.count, Self.positions)
        if fields.count > count { fields.removeLast(fields.count - count) }
        for index in 0..<count where unchanged & (1 << UInt32(index)) == 0 {
            if index < fields.count {
                fields[index] = parsed[index]
            } else {
                fields.append(parsed[index])
            }
        }
    }
}
