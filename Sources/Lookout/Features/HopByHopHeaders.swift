import HTTPTypes

/// Connection-specific header fields a proxy must not forward (RFC 9110 §7.6.1, RFC 9112 §9.6).
enum HopByHopHeaders {
    private static let fixed: Set<HTTPField.Name> = [
        .connection, .transferEncoding, .te, .upgrade, .proxyAuthorization, .proxyAuthenticate,
        HTTPField.Name("Keep-Alive")!, HTTPField.Name("Proxy-Connection")!, HTTPField.Name("Trailer")!,
    ]

    /// Removes the fixed hop-by-hop fields and every field the `Connection` header names.
    static func remove(from fields: inout HTTPFields) {
        var named: [HTTPField.Name] = []
        for value in fields[values: .connection] {
            for token in value.split(separator: ",") {
                let trimmed = token.trimmingWhitespace()
                if let name = HTTPField.Name(String(trimmed)) { named.append(name) }
            }
        }
        fields.removeAll { field in fixed.contains(field.name) || named.contains(field.name) }
    }
}

extension Substring {
    func trimmingWhitespace() -> Substring {
        var s = self
        while let first = s.first, first == " " || first == "\t" { s.removeFirst() }
        while let last = s.last, last == " " || last == "\t" { s.removeLast() }
        return s
    }
}
