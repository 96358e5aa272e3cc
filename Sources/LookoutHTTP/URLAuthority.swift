/// The authority of an absolute URL (`http://user@host:port/path`) or of a CONNECT target
/// (`host:port`), found by one scan of the UTF-8 bytes: where the user info, the host and the
/// port lie.
public enum URLAuthority {
    /// Where an authority's parts lie, as offsets into the UTF-8 bytes it was read from.
    public struct Layout: Equatable, Sendable {
        /// Where the authority starts: after the scheme's `://`, or 0 when there is no scheme
        /// (a CONNECT target, a bare `host:port`).
        public var start = 0
        /// Where the path, query or fragment begins (or the end).
        public var end = 0
        /// The `@` that ends the user info, when there is one.
        public var at: Int?
        /// The host as written: an IPv6 literal's brackets included.
        public var host = 0..<0
        /// The port's digits, when they are 1 to 5 decimal digits after the host's `:`.
        public var port: Int?
        /// The scheme is `https`.
        public var isHTTPS = false

        /// The host without an IPv6 literal's brackets.
        public var bareHost: Range<Int> {
            host.count >= 2 && isBracketed ? (host.lowerBound + 1)..<(host.upperBound - 1) : host
        }

        private var isBracketed = false

        public init(_ bytes: UnsafeBufferPointer<UInt8>) {
            end = bytes.count
            // After "://" when the URL has a scheme: the scheme ends at the first ':' (RFC 3986 §3).
            if let colon = Self.first(UInt8(ascii: ":"), in: bytes, 0..<bytes.count), colon + 2 < bytes.count,
               bytes[colon + 1] == UInt8(ascii: "/"), bytes[colon + 2] == UInt8(ascii: "/") {
                start = colon + 3
                isHTTPS = colon == 5 && Self.lowercased(bytes, 0..<5, equals: "https")
            }
            // The authority ends at the path, query or fragment (RFC 3986 §3.2).
            var index = start
            while index < end {
                let byte = bytes[index]
                if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") {
                    end = index
                    break
                }
                index += 1
            }
            at = Self.last(UInt8(ascii: "@"), in: bytes, start..<end)
            let hostStart = at.map { $0 + 1 } ?? start
            host = hostStart..<end
            var portStart: Int?
            if hostStart < end, bytes[hostStart] == UInt8(ascii: "["),
               let close = Self.first(UInt8(ascii: "]"), in: bytes, hostStart..<end) {
                // An IP literal (RFC 3986 §3.2.2): its colons are not the port's.
                isBracketed = true
                host = hostStart..<(close + 1)
                if close + 1 < end, bytes[close + 1] == UInt8(ascii: ":") { portStart = close + 2 }
            } else if let colon = Self.first(UInt8(ascii: ":"), in: bytes, hostStart..<end),
                      Self.last(UInt8(ascii: ":"), in: bytes, hostStart..<end) == colon {
                // One colon: host and port. More than one, unbracketed, is an IPv6 address as a
                // peer's address is written: all host.
                host = hostStart..<colon
                portStart = colon + 1
            }
            if let portStart { port = Self.port(bytes, portStart..<end) }
        }

        /// `bytes` read as an authority; the string's UTF-8 is read in place.
        public init(_ text: String) {
            var text = text
            self = text.withUTF8 { Layout($0) }
        }

        /// A port's decimal digits read in place: nil unless 1 to 5 digits.
        private static func port(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int? {
            guard !range.isEmpty, range.count <= 5 else { return nil }
            var value = 0
            for index in range {
                let digit = Int(bytes[index]) - Int(UInt8(ascii: "0"))
                guard digit >= 0 && digit <= 9 else { return nil }
                value = value * 10 + digit
            }
            return value
        }

        private static func first(_ byte: UInt8, in bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int? {
            var index = range.lowerBound
            while index < range.upperBound {
                if bytes[index] == byte { return index }
                index += 1
            }
            return nil
        }

        private static func last(_ byte: UInt8, in bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int? {
            var index = range.upperBound
            while index > range.lowerBound {
                index -= 1
                if bytes[index] == byte { return index }
            }
            return nil
        }

        /// Schemes are case-insensitive (RFC 3986 §3.1).
        private static func lowercased(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, equals word: StaticString) -> Bool {
            guard range.count == word.utf8CodeUnitCount else { return false }
            for (offset, index) in range.enumerated() where bytes[index] | 0x20 != word.utf8Start[offset] { return false }
            return true
        }
    }

    /// The host as written, without user info or port; an IPv6 literal keeps its brackets.
    public static func host(in url: String) -> Substring {
        let layout = Layout(url)
        let bytes = url.utf8
        let start = bytes.index(bytes.startIndex, offsetBy: layout.host.lowerBound)
        return url[start..<bytes.index(start, offsetBy: layout.host.count)]
    }
}
