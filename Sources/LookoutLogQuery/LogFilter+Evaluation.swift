extension LogFilter {
    /// Whether a summary record matches. A term whose field the record lacks does not match
    /// (so `not code:*` selects the exchanges without an error).
    public func matches(_ record: LogRecord) -> Bool {
        switch self {
        case .and(let a, let b): return a.matches(record) && b.matches(record)
        case .or(let a, let b): return a.matches(record) || b.matches(record)
        case .not(let a): return !a.matches(record)
        case .term(let term): return term.matches(record)
        }
    }
}

extension LogFilter.Term {
    func matches(_ record: LogRecord) -> Bool {
        switch field {
        case .host: return record.host.map { text($0, caseInsensitive: true) } ?? false
        case .method: return record.string("method").map { text($0, caseInsensitive: true) } ?? false
        case .url: return record.string("url").map { text($0, caseInsensitive: false) } ?? false
        case .kind: return record.string("kind").map { text($0, caseInsensitive: false) } ?? false
        case .client: return record.string("client").map { text($0, caseInsensitive: false) } ?? false
        case .code: return record.string("error", "code").map { text($0, caseInsensitive: false) } ?? false
        case .cache: return record.string("cache", "status").map { text($0, caseInsensitive: false) } ?? false
        case .trust: return record.string("upstream", "tls", "trust", "result").map { text($0, caseInsensitive: false) } ?? false
        case .version: return record.string("http_version").map { text($0, caseInsensitive: true) } ?? false
        case .upstreamProtocol: return record.string("upstream", "protocol").map { text($0, caseInsensitive: true) } ?? false
        case .header(let name):
            for map in ["request_headers", "response_headers"] {
                for (key, value) in record.stringMembers(map) where key == name {
                    if text(value, caseInsensitive: true) { return true }
                }
            }
            return false
        case .status:
            guard let status = record.number("status") else { return false }
            if number == nil, let digit = value.first?.wholeNumberValue {
                return Int(status) / 100 == digit
            }
            return compare(status)
        case .id, .conn:
            return record.number(field == .id ? "id" : "conn").map(compare) ?? false
        case .phase(let name):
            // -1 means the phase did not happen: it is never more or less than anything.
            guard let ms = record.number("timings_ms", name), ms >= 0 else { return false }
            return compare(ms)
        }
    }

    private func compare(_ actual: Double) -> Bool {
        guard let number else { return false }
        switch op {
        case .matches, .contains: return actual == number
        case .greater: return actual > number
        case .greaterOrEqual: return actual >= number
        case .less: return actual < number
        case .lessOrEqual: return actual <= number
        }
    }

    private func text(_ actual: String, caseInsensitive: Bool) -> Bool {
        let a = caseInsensitive ? actual.lowercased() : actual
        let v = caseInsensitive ? value.lowercased() : value
        switch op {
        case .contains: return a.contains(v)
        default: return v.contains("*") ? Glob.matches(v, a) : a == v
        }
    }
}

/// `*` matches any run of characters (including none); everything else matches itself.
enum Glob {
    static func matches(_ pattern: String, _ text: String) -> Bool {
        let parts = pattern.split(separator: "*", omittingEmptySubsequences: false)
        var rest = Substring(text)
        for (index, part) in parts.enumerated() {
            if index == 0 {
                guard rest.hasPrefix(part) else { return false }
                rest = rest.dropFirst(part.count)
            } else if index == parts.count - 1 {
                return part.isEmpty || rest.hasSuffix(part)
            } else if !part.isEmpty {
                guard let range = rest.firstRange(of: part) else { return false }
                rest = rest[range.upperBound...]
            }
        }
        return rest.isEmpty
    }
}
