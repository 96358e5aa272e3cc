/// The host part of an absolute URL (`http://user@host:port/path`) or of a CONNECT target
/// (`host:port`), found by one scan of the UTF-8 bytes.
public enum URLAuthority {
    /// The host as written, without user info or port; an IPv6 literal keeps its brackets.
    public static func host(in url: String) -> Substring {
        let bytes = url.utf8
        var start = bytes.startIndex
        // After "://" when the URL has a scheme (RFC 3986 §3: the scheme ends at the first ':').
        if let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
           bytes[bytes.index(after: colon)...].starts(with: "//".utf8) {
            start = bytes.index(colon, offsetBy: 3)
        }
        var end = bytes[start...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? bytes.endIndex
        if let at = bytes[start..<end].lastIndex(of: UInt8(ascii: "@")) { start = bytes.index(after: at) }
        if bytes[start..<end].first == UInt8(ascii: "["), let close = bytes[start..<end].firstIndex(of: UInt8(ascii: "]")) {
            end = bytes.index(after: close)
        } else if let colon = bytes[start..<end].lastIndex(of: UInt8(ascii: ":")) {
            end = colon
        }
        return url[start..<end]
    }
}
