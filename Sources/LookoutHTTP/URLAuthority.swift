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

        /// One pass over the bytes: the scheme, then the authority up to its end.
        public init(_ bytes: UnsafeBufferPointer<UInt8>) {
            end = bytes.count
            start = Self.schemeEnd(bytes)
            isHTTPS = start == 8 && Self.lowercased(bytes, 0..<5, equals: "https")
            var hostStart = start
            var firstColon: Int?
            var lastColon: Int?
            var close: Int?
            var index = start
            while index < bytes.count {
                let byte = bytes[index]
                // Most bytes are lowercase letters, digits and dots: passed over without the
                // switch's indirect jump, which mispredicted for nearly every byte.
                if byte >= UInt8(ascii: "a") || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: ".") {
                    index += 1
                    continue
                }
                switch byte {
                // The authority ends at the path, query or fragment (RFC 3986 §3.2).
                case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"):
                    end = index
                    index = bytes.count
                    continue
                case UInt8(ascii: "@"):
                    // The last '@' ends the user info; what came before it is not the host's.
                    at = index
                    hostStart = index + 1
                    (firstColon, lastColon, close) = (nil, nil, nil)
                case UInt8(ascii: ":"):
                    if firstColon == nil { firstColon = index }
                    lastColon = index
                case UInt8(ascii: "]"):
                    if close == nil { close = index }
                default:
                    break
                }
                index += 1
            }
            host = hostStart..<end
            var portStart: Int?
            if hostStart < end, bytes[hostStart] == UInt8(ascii: "["), let close {
                // An IP literal (RFC 3986 §3.2.2): its colons are not the port's.
                isBracketed = true
                host = hostStart..<(close + 1)
                if close + 1 < end, bytes[close + 1] == UInt8(ascii: ":") { portStart = close + 2 }
            } else if let colon = firstColon, lastColon == colon {
                // One colon: host and port. More than one, unbracketed, is an IPv6 address as a
                // peer's address is written: all host.
                host = hostStart..<colon
                portStart = colon + 1
            }
            if let portStart { port = Self.port(bytes, portStart..<end) }
        }

        /// Where the authority starts: after `scheme://` (RFC 3986 §3.1: a letter, then letters,
        /// digits, '+', '-' or '.'), else 0.
        private static func schemeEnd(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                let letter = (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
                let other = (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "+")
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
                guard letter || (index > 0 && other) else { break }
                index += 1
            }
            guard index > 0, index + 2 < bytes.count, bytes[index] == UInt8(ascii: ":"),
                  bytes[index + 1] == UInt8(ascii: "/"), bytes[index + 2] == UInt8(ascii: "/") else { return 0 }
            return index + 3
        }

        /// `bytes` read as an authority; the string's UTF-8 is read in place.
        public init(_ text: String) {
            self = text.withUTF8InPlace { Layout($0) }
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
