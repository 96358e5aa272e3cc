import HTTPTypes

/// Connection-specific header fields a proxy must not forward (RFC 9110 §7.6.1, RFC 9112 §9.6).
enum HopByHopHeaders {
    /// Runs for every field of every message: most names are ruled out by their length alone,
    /// before any string comparison.
    static func isFixed(_ name: HTTPField.Name) -> Bool {
        let canonical = name.canonicalName
        switch canonical.utf8.count {
        case 2: return canonical == "te"
        case 7: return canonical == "upgrade" || canonical == "trailer"
        case 10: return canonical == "connection" || canonical == "keep-alive"
        case 16: return canonical == "proxy-connection"
        case 17: return canonical == "transfer-encoding"
        case 18: return canonical == "proxy-authenticate"
        case 19: return canonical == "proxy-authorization"
        default: return false
        }
    }

    /// Removes the fixed hop-by-hop fields and every field the `Connection` header names.
    /// Allocates nothing for the usual `Connection: keep-alive` or `close`.
    static func remove(from fields: inout HTTPFields) {
        guard fields.contains(where: { isFixed($0.name) }) else { return }
        let listed = namesListedInConnection(fields)
        fields.removeAll { shouldRemove($0.name, listed: listed) }
    }

    /// Whether a field named `name` stops at this hop, given the names `Connection` listed.
    @inline(__always)
    static func shouldRemove(_ name: HTTPField.Name, listed: [HTTPField.Name]) -> Bool {
        isFixed(name) || (!listed.isEmpty && listed.contains(name))
    }

    /// The names `Connection` lists (RFC 9110 §7.6.1), other than its options `keep-alive` and
    /// `close`: empty, without allocating, for the usual values.
    static func namesListedInConnection(_ fields: HTTPFields) -> [HTTPField.Name] {
        var named: [HTTPField.Name] = []
        for field in fields where field.name == .connection {
            collectNames(in: field.value, into: &named)
        }
        return named
    }

    /// The field names a `Connection` value lists, other than the options every proxy handles.
    private static func collectNames(in value: String, into names: inout [HTTPField.Name]) {
        let utf8 = value.utf8
        var index = utf8.startIndex
        while index < utf8.endIndex {
            // One comma-separated token, without the whitespace around it.
            while index < utf8.endIndex, isSeparator(utf8[index]) { index = utf8.index(after: index) }
            let start = index
            var end = index
            while index < utf8.endIndex, utf8[index] != UInt8(ascii: ",") {
                if !isSeparator(utf8[index]) { end = utf8.index(after: index) }
                index = utf8.index(after: index)
            }
            guard start < end else { continue }
            let token = utf8[start..<end]
            if equalsIgnoringASCIICase(token, "keep-alive") || equalsIgnoringASCIICase(token, "close") { continue }
            if let name = HTTPField.Name(String(Substring(token))) { names.append(name) }
        }
    }

    /// `token` equals the lowercase ASCII `word`, ignoring case; no allocation.
    private static func equalsIgnoringASCIICase(_ token: Substring.UTF8View, _ word: StaticString) -> Bool {
        guard token.count == word.utf8CodeUnitCount else { return false }
        var index = 0
        for byte in token {
            let lower = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
            if lower != word.utf8Start[index] { return false }
            index += 1
        }
        return true
    }

    private static func isSeparator(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: ",")
    }
}
