import HTTPTypes

/// Connection-specific header fields a proxy must not forward (RFC 9110 §7.6.1, RFC 9112 §9.6).
enum HopByHopHeaders {
    /// Runs for every field of every message, so it compares canonical (lowercase) names instead
    /// of hashing them into a set.
    static func isFixed(_ name: HTTPField.Name) -> Bool {
        switch name.canonicalName {
        case "connection", "transfer-encoding", "te", "upgrade", "proxy-authorization", "proxy-authenticate",
             "keep-alive", "proxy-connection", "trailer":
            return true
        default:
            return false
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
            let token = Substring(utf8[start..<end])
            if token.utf8.count == 10 && token.lowercased() == "keep-alive" { continue }
            if token.utf8.count == 5 && token.lowercased() == "close" { continue }
            if let name = HTTPField.Name(String(token)) { names.append(name) }
        }
    }

    private static func isSeparator(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: ",")
    }
}
