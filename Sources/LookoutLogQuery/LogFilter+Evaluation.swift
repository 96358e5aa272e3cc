/// What a filter can be asked about: a summary record read from the log, or an exchange still
/// on its way (a breakpoint's or a hook's filter sees the request before anything went upstream).
/// A field the subject does not know (yet) does not match.
public protocol FilterSubject {
    /// The text of host, method, url, kind, client, code, cache, trust, version or protocol.
    func filterText(_ field: LogFilter.Field) -> String?
    /// The number of status, id, conn, or a phase's milliseconds.
    func filterNumber(_ field: LogFilter.Field) -> Double?
    /// Every value of the header `name` (lowercase), in the request and the response.
    func filterHeaderValues(_ name: String) -> [String]
    /// Whether something changed the exchange on its way.
    var filterModified: Bool { get }
    /// The ids of the exchange's audit findings.
    var filterFindingIDs: [String] { get }
    /// Whether a report-mode role would have refused it (nil: no policy decided).
    var filterWouldDeny: Bool? { get }
}

extension FilterSubject {
    public var filterFindingIDs: [String] { [] }
    public var filterWouldDeny: Bool? { nil }
}

extension LogFilter {
    /// Whether a subject matches. A term whose field the subject lacks does not match
    /// (so `not code:*` selects the exchanges without an error).
    public func matches<Subject: FilterSubject>(_ subject: Subject) -> Bool {
        switch self {
        case .and(let a, let b): return a.matches(subject) && b.matches(subject)
        case .or(let a, let b): return a.matches(subject) || b.matches(subject)
        case .not(let a): return !a.matches(subject)
        case .term(let term): return term.matches(subject)
        }
    }
}

extension LogRecord: FilterSubject {
    public func filterText(_ field: LogFilter.Field) -> String? {
        switch field {
        case .host: return host
        case .method: return string("method")
        case .url: return string("url")
        case .kind: return string("kind")
        case .client: return string("client")
        case .code: return string("error", "code")
        case .cache: return string("cache", "status")
        case .trust: return string("upstream", "tls", "trust", "result")
        case .version: return string("http_version")
        case .upstreamProtocol: return string("upstream", "protocol")
        case .ja4: return string("tls", "client_ja4")
        case .policyRole: return string("policy", "role")
        case .policyDecision: return string("policy", "decision")
        default: return nil
        }
    }

    public func filterNumber(_ field: LogFilter.Field) -> Double? {
        switch field {
        case .status: return number("status")
        case .id: return number("id")
        case .conn: return number("conn")
        // -1 means the phase did not happen: it is never more or less than anything.
        case .phase(let name): return number("timings_ms", name).flatMap { $0 >= 0 ? $0 : nil }
        case .messages: return number("messages", "count")
        case .firstEvent: return number("messages", "first_event_ms")
        case .wsClose: return number("messages", "close_code")
        case .grpcStatus: return number("messages", "grpc_status")
        default: return nil
        }
    }

    public func filterHeaderValues(_ name: String) -> [String] {
        var values: [String] = []
        for map in ["request_headers", "response_headers"] {
            for (key, value) in stringMembers(map) where key == name { values.append(value) }
        }
        return values
    }

    public var filterModified: Bool { span(["modified_by"]) != nil }

    public var filterFindingIDs: [String] { LogSummary.findingIDs(self) }

    public var filterWouldDeny: Bool? { bool("policy", "would_deny") }
}

extension LogFilter.Term {
    func matches<Subject: FilterSubject>(_ subject: Subject) -> Bool {
        switch field {
        case .host, .method, .version, .upstreamProtocol:
            return subject.filterText(field).map { text($0, caseInsensitive: true) } ?? false
        case .url, .kind, .client, .code, .cache, .trust, .ja4, .policyRole, .policyDecision:
            return subject.filterText(field).map { text($0, caseInsensitive: false) } ?? false
        case .header(let name):
            return subject.filterHeaderValues(name).contains { text($0, caseInsensitive: true) }
        case .modified:
            return subject.filterModified == (value == "true")
        case .wouldDeny:
            return subject.filterWouldDeny.map { $0 == (value == "true") } ?? false
        case .finding:
            return subject.filterFindingIDs.contains { text($0, caseInsensitive: false) }
        case .status:
            guard let status = subject.filterNumber(.status) else { return false }
            if number == nil, let digit = value.first?.wholeNumberValue {
                return LogRecord.wholeNumber(status).map { $0 / 100 == digit } ?? false
            }
            return compare(status)
        case .id, .conn, .phase, .messages, .firstEvent, .wsClose, .grpcStatus:
            return subject.filterNumber(field).map(compare) ?? false
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
        switch op {
        case .contains:
            return caseInsensitive ? actual.lowercased().contains(folded) : actual.contains(value)
        default:
            if isGlob { return Glob.matches(caseInsensitive ? folded : value, caseInsensitive ? actual.lowercased() : actual) }
            return caseInsensitive ? Self.equalFolded(actual, folded) : actual == value
        }
    }

    /// `actual` lowercased equals `folded` (already lowercase), without building the lowercased
    /// string when both are ASCII (hosts and methods are).
    private static func equalFolded(_ actual: String, _ folded: String) -> Bool {
        var a = actual.utf8.makeIterator(), b = folded.utf8.makeIterator()
        while true {
            switch (a.next(), b.next()) {
            case (nil, nil): return true
            case (let x?, let y?):
                guard x < 0x80 && y < 0x80 else { return actual.lowercased() == folded }
                let lower = x >= 0x41 && x <= 0x5A ? x | 0x20 : x
                if lower != y { return false }
            default: return false
            }
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
