import HTTPTypes

/// Connection-specific header fields a proxy must not forward (RFC 9110 §7.6.1, RFC 9112 §9.6).
public enum HopByHopHeaders {
    /// Runs for every field of every message: most names are ruled out by their length alone,
    /// before any string comparison.
    public static func isFixed(_ name: HTTPField.Name) -> Bool {
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

    /// Removes the fixed hop-by-hop fields and every field the `Connection` header names, in
    /// one pass to find them and one to remove them. Allocates nothing for the usual
    /// `Connection: keep-alive` or `close`.
    ///
    /// The removal is `removeFields(where:)`: `HTTPFields.removeAll(where:)` moves the kept fields
    /// through the element setter, which compares each old and new field's name and value first
    /// (1 % of a proxied request's CPU on the loops, measured with `perf`).
    public static func remove(from fields: inout HTTPFields) {
        var found = false
        var listed: [HTTPField.Name] = []
        fields.withFieldBuffer { buffer in
            for index in buffer.indices where isFixed(buffer[index].name) {
                found = true
                if buffer[index].name == .connection { collectNames(in: buffer[index].value, into: &listed) }
            }
        }
        guard found else { return }
        fields.removeFields { isFixed($0.name) || (!listed.isEmpty && listed.contains($0.name)) }
    }

    /// The field names a `Connection` value lists (RFC 9110 §7.6.1), other than its options
    /// `keep-alive` and `close`.
    private static func collectNames(in value: String, into names: inout [HTTPField.Name]) {
        FieldList.forEachElement(of: value) { element in
            if element.equalsLowercase("keep-alive") || element.equalsLowercase("close") { return }
            if let name = HTTPField.Name(element.string) { names.append(name) }
        }
    }

    /// The connection-specific fields an HTTP/2 message must not carry (RFC 9113 §8.2.2), by
    /// lowercase name: the fixed hop-by-hop fields but those that only a proxy hop uses. Ruled out
    /// by length first, as `isFixed` is.
    public static func isConnectionSpecific(_ name: String) -> Bool {
        switch name.utf8.count {
        case 2: name == "te"
        case 7: name == "upgrade"
        case 10: name == "connection" || name == "keep-alive"
        case 16: name == "proxy-connection"
        case 17: name == "transfer-encoding"
        default: false
        }
    }
}
