/// The filter language of `lookout log` (and later the live stream and the UI):
///
///     host:api.example.com  status:5xx  method:POST  code:upstream_*  kind:intercepted
///     url~"/v1/"  header:content-type~json  total>500ms  wait>100ms  trust:failed  cache:hit
///     and / or / not / ( )
///
/// Terms side by side mean `and`. `:` matches a value or a glob (`*`), `~` a substring, and
/// `> >= < <=` compare numbers and durations (`500ms`, `1.5s`, `250us`; a bare number is ms).
/// Parsing errors name the column.
public indirect enum LogFilter: Sendable, Equatable {
    case and(LogFilter, LogFilter)
    case or(LogFilter, LogFilter)
    case not(LogFilter)
    case term(Term)

    public enum Field: Sendable, Equatable {
        case host, status, method, code, kind, url, client, trust, cache, id, conn
        /// The client's `http_version` ("HTTP/1.1", "HTTP/2").
        case version
        /// What was spoken upstream: `upstream.protocol` ("http/1.1", "h2", "tunnel").
        case upstreamProtocol
        case header(String)
        /// A `timings_ms` member: blocked, dns, connect, tls, send, wait, receive, total.
        case phase(String)
        /// `modified:true`: a breakpoint, an operator or a hook changed the exchange (`modified_by`).
        case modified
        /// `messages.count`: WebSocket messages or stream events, both ways.
        case messages
        /// `messages.first_event_ms`: the origin's first event after the request was sent.
        case firstEvent
        /// `messages.close_code` (`ws.close`) and `messages.grpc_status` (`grpc.status`).
        case wsClose, grpcStatus
        /// `tls.client_ja4`: the client's JA4 fingerprint (`ja4:t13d1516h2_*`).
        case ja4
        /// Any of the summary's `findings` ids (`finding:cookie-*`).
        case finding
        /// `policy.role` and `policy.decision` (`policy.role:ci`, `policy.decision:deny`).
        case policyRole, policyDecision
        /// `would_deny:true`: a report-mode role forwarded what enforce would have refused.
        case wouldDeny
    }

    public enum Operator: String, Sendable, Equatable {
        case matches = ":", contains = "~", greater = ">", greaterOrEqual = ">=", less = "<", lessOrEqual = "<="
    }

    public struct Term: Sendable, Equatable {
        public var field: Field
        public var op: Operator
        public var value: String {
            didSet { (folded, isGlob) = Self.prepared(value) }
        }
        /// The value as a number (milliseconds for phases), for comparisons and statuses.
        public var number: Double?
        /// The value lowercased, and whether it has a `*`: worked out once, not for every record.
        private(set) var folded: String
        private(set) var isGlob: Bool

        public init(field: Field, op: Operator, value: String, number: Double?) {
            self.field = field
            self.op = op
            self.value = value
            self.number = number
            (folded, isGlob) = Self.prepared(value)
        }

        private static func prepared(_ value: String) -> (String, Bool) {
            (value.lowercased(), value.utf8.contains(UInt8(ascii: "*")))
        }
    }

    public static let phases = ["blocked", "dns", "connect", "tls", "send", "wait", "receive", "total"]
    static let fieldNames = ["host", "status", "method", "code", "kind", "url", "client", "trust", "cache", "version",
                             "protocol", "id", "conn", "modified", "header:NAME", "messages", "first_event", "ws.close",
                             "grpc.status", "ja4", "finding", "policy.role", "policy.decision", "would_deny"] + phases
}

/// A filter expression that does not parse: what is wrong and at which column (1-based).
public struct LogFilterError: Error, Equatable, CustomStringConvertible {
    public let column: Int
    public let message: String
    public var description: String { "column \(column): \(message)" }
}

extension LogFilter {
    /// Parses an expression; the error points at the column.
    /// The most terms a filter may have, and how deep parentheses and `not` may nest: a filter is
    /// parsed and evaluated by recursion, on whatever thread asks (a dispatch worker's stack is
    /// small), so a filter from a URL cannot be allowed to run it out.
    static let maximumTerms = 256
    static let maximumDepth = 32

    public static func parse(_ text: String) throws(LogFilterError) -> LogFilter {
        let tokens = try tokenize(text)
        if let extra = tokens.lazy.filter({ $0.kind == .term }).dropFirst(maximumTerms).first {
            throw LogFilterError(column: extra.column, message: "more than \(maximumTerms) terms")
        }
        var parser = Parser(tokens: tokens, length: text.count)
        let filter = try parser.orExpression()
        if let extra = parser.peek {
            throw LogFilterError(column: extra.column, message: extra.kind == .close ? "unbalanced \")\"" : "unexpected \(extra.text)")
        }
        return filter
    }

    struct Token {
        enum Kind { case open, close, word, term }
        let kind: Kind
        let text: String
        let column: Int
        var term: Term? = nil
    }

    static func tokenize(_ text: String) throws(LogFilterError) -> [Token] {
        let chars = Array(text)
        var tokens: [Token] = []
        var i = 0
        while i < chars.count {
            let c = chars[i]
            if c == " " || c == "\t" { i += 1; continue }
            if c == "(" { tokens.append(Token(kind: .open, text: "(", column: i + 1)); i += 1; continue }
            if c == ")" { tokens.append(Token(kind: .close, text: ")", column: i + 1)); i += 1; continue }
            let start = i
            // A field name (letters, digits, -, _ and .), with header's ":NAME".
            while i < chars.count, chars[i].isLetter || chars[i].isNumber || chars[i] == "-" || chars[i] == "_" || chars[i] == "." {
                i += 1
            }
            var name = String(chars[start..<i])
            if name == "header", i < chars.count, chars[i] == ":" {
                let nameStart = i + 1
                var j = nameStart
                while j < chars.count, chars[j].isLetter || chars[j].isNumber || chars[j] == "-" || chars[j] == "_" { j += 1 }
                guard j > nameStart else { throw LogFilterError(column: nameStart + 1, message: "expected a header name after \"header:\"") }
                name = "header:" + String(chars[nameStart..<j]).lowercased()
                i = j
            }
            // The operator.
            var op: Operator?
            if i < chars.count {
                switch chars[i] {
                case ":": op = .matches; i += 1
                case "~": op = .contains; i += 1
                case ">": op = .greater; i += 1; if i < chars.count, chars[i] == "=" { op = .greaterOrEqual; i += 1 }
                case "<": op = .less; i += 1; if i < chars.count, chars[i] == "=" { op = .lessOrEqual; i += 1 }
                default: break
                }
            }
            guard let op else {
                // A bare word: and / or / not, or a mistake.
                while i < chars.count, chars[i] != " ", chars[i] != "\t", chars[i] != "(", chars[i] != ")" { i += 1 }
                let word = String(chars[start..<i])
                guard !word.isEmpty else { throw LogFilterError(column: start + 1, message: "unexpected \"\(chars[start])\"") }
                tokens.append(Token(kind: .word, text: word, column: start + 1))
                continue
            }
            // The value: quoted, or up to whitespace or a parenthesis.
            let valueStart = i
            var value = ""
            if i < chars.count, chars[i] == "\"" {
                i += 1
                var closed = false
                while i < chars.count {
                    if chars[i] == "\\", i + 1 < chars.count { value.append(chars[i + 1]); i += 2; continue }
                    if chars[i] == "\"" { closed = true; i += 1; break }
                    value.append(chars[i])
                    i += 1
                }
                guard closed else { throw LogFilterError(column: valueStart + 1, message: "unterminated quoted value") }
            } else {
                while i < chars.count, chars[i] != " ", chars[i] != "\t", chars[i] != "(", chars[i] != ")" {
                    value.append(chars[i])
                    i += 1
                }
            }
            guard !value.isEmpty else {
                throw LogFilterError(column: valueStart + 1, message: "expected a value after \"\(name)\(op.rawValue)\"")
            }
            let term = try makeTerm(name: name, op: op, value: value, column: start + 1, valueColumn: valueStart + 1)
            tokens.append(Token(kind: .term, text: String(chars[start..<i]), column: start + 1, term: term))
        }
        return tokens
    }

    static func makeTerm(name: String, op: Operator, value: String, column: Int, valueColumn: Int) throws(LogFilterError) -> Term {
        let field: Field
        switch name {
        case "host": field = .host
        case "status": field = .status
        case "method": field = .method
        case "code": field = .code
        case "kind": field = .kind
        case "url": field = .url
        case "client": field = .client
        case "trust": field = .trust
        case "cache": field = .cache
        case "version": field = .version
        case "protocol": field = .upstreamProtocol
        case "id": field = .id
        case "conn": field = .conn
        case "messages": field = .messages
        case "first_event": field = .firstEvent
        case "ws.close": field = .wsClose
        case "grpc.status": field = .grpcStatus
        case "ja4": field = .ja4
        case "finding": field = .finding
        case "policy.role": field = .policyRole
        case "policy.decision": field = .policyDecision
        case "would_deny", "policy.would_deny":
            guard op == .matches, value == "true" || value == "false" else {
                throw LogFilterError(column: column, message: "would_deny takes :true or :false")
            }
            field = .wouldDeny
        case "modified":
            guard op == .matches, value == "true" || value == "false" else {
                throw LogFilterError(column: column, message: "modified takes :true or :false")
            }
            field = .modified
        case _ where name.hasPrefix("header:"): field = .header(String(name.dropFirst("header:".count)))
        case _ where phases.contains(name): field = .phase(name)
        default:
            throw LogFilterError(column: column, message: "unknown field \"\(name)\" (fields: \(fieldNames.joined(separator: ", ")))")
        }
        var term = Term(field: field, op: op, value: value, number: nil)
        let comparing = op != .matches && op != .contains
        switch field {
        case .phase, .firstEvent:
            guard comparing else {
                throw LogFilterError(column: column, message: "\(name) takes > >= < <= and a duration, e.g. \(name)>100ms")
            }
            guard let ms = duration(value) else {
                throw LogFilterError(column: valueColumn, message: "\"\(value)\" is not a duration (e.g. 500ms, 1.5s, 250us)")
            }
            term.number = ms
        case .status:
            if op == .contains { throw LogFilterError(column: column, message: "status takes : or a comparison, not ~") }
            if op == .matches, value.count == 3, value.hasSuffix("xx"), let digit = value.first?.wholeNumberValue, (1...5).contains(digit) {
                break
            }
            guard let number = Double(value), number == number.rounded(), (100...999).contains(number) else {
                throw LogFilterError(column: valueColumn, message: "\"\(value)\" is not a status (e.g. 404 or 5xx)")
            }
            term.number = number
        case .id, .conn, .messages, .wsClose, .grpcStatus:
            guard op != .contains, let number = Double(value) else {
                throw LogFilterError(column: valueColumn, message: "\(name) takes a number")
            }
            term.number = number
        default:
            if comparing { throw LogFilterError(column: column, message: "\(name) takes : or ~, not \(op.rawValue)") }
        }
        return term
    }

    /// Milliseconds of `500ms`, `1.5s`, `250us`, or a bare number (ms).
    static func duration(_ text: String) -> Double? {
        for (suffix, scale) in [("ms", 1.0), ("us", 0.001), ("µs", 0.001), ("s", 1000.0)] where text.hasSuffix(suffix) {
            return Double(text.dropLast(suffix.count)).map { $0 * scale }
        }
        return Double(text)
    }

    struct Parser {
        let tokens: [Token]
        let length: Int
        var index = 0
        var depth = 0
        var peek: Token? { index < tokens.count ? tokens[index] : nil }

        /// One level deeper (a parenthesis or a `not`), refused past `maximumDepth`.
        mutating func descend(_ token: Token) throws(LogFilterError) {
            depth += 1
            if depth > LogFilter.maximumDepth {
                throw LogFilterError(column: token.column, message: "nested more than \(LogFilter.maximumDepth) deep")
            }
        }

        mutating func orExpression() throws(LogFilterError) -> LogFilter {
            var left = try andExpression()
            while let token = peek, token.kind == .word, token.text.lowercased() == "or" {
                index += 1
                left = .or(left, try andExpression())
            }
            return left
        }

        mutating func andExpression() throws(LogFilterError) -> LogFilter {
            var left = try notExpression()
            while let token = peek {
                if token.kind == .close { break }
                if token.kind == .word, token.text.lowercased() == "or" { break }
                if token.kind == .word, token.text.lowercased() == "and" { index += 1 }
                left = .and(left, try notExpression())
            }
            return left
        }

        mutating func notExpression() throws(LogFilterError) -> LogFilter {
            if let token = peek, token.kind == .word, token.text.lowercased() == "not" {
                index += 1
                try descend(token)
                defer { depth -= 1 }
                return .not(try notExpression())
            }
            return try primary()
        }

        mutating func primary() throws(LogFilterError) -> LogFilter {
            guard let token = peek else {
                throw LogFilterError(column: length + 1, message: "expected a term (e.g. status:5xx) or \"(\"")
            }
            index += 1
            switch token.kind {
            case .term:
                return .term(token.term!)
            case .open:
                try descend(token)
                defer { depth -= 1 }
                let inner = try orExpression()
                guard let close = peek, close.kind == .close else {
                    throw LogFilterError(column: token.column, message: "unbalanced \"(\"")
                }
                index += 1
                return inner
            case .close:
                throw LogFilterError(column: token.column, message: "unbalanced \")\"")
            case .word:
                let lower = token.text.lowercased()
                if lower == "and" || lower == "or" {
                    throw LogFilterError(column: token.column, message: "\"\(token.text)\" needs a term on each side")
                }
                throw LogFilterError(column: token.column, message: "\"\(token.text)\" is not a term: write field:value (e.g. host:\(token.text))")
            }
        }
    }
}
