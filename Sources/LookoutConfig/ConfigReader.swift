import LookoutTLS
import Yams

/// The keys the configuration file knows, section by section, in file order.
enum Schema {
    static let topLevel = [
        "listen", "config_watch", "state_dir", "event_loops", "event_loop_spin_us", "max_connections",
        "limits", "timeouts", "connect", "pool", "dns", "headers", "auth", "log",
        "tls", "interception", "trust", "redirects", "retry", "access", "policy", "upstream_proxies", "reachability",
        "cache", "capture", "admin", "pac", "metrics", "ui", "http2", "map", "shaping", "breakpoints", "hooks", "simulate",
        "messages", "audit", "otel", "grpc",
    ]
    static let sections: [String: [String]] = [
        "limits": ["max_request_line_bytes", "max_header_bytes", "max_header_count", "max_request_body_bytes"],
        "timeouts": [
            "client_header", "client_idle", "upstream_connect",
            "upstream_first_byte", "upstream_idle", "shutdown_grace", "tls_handshake", "tunnel_idle",
        ],
        "connect": ["allowed_ports"],
        "pool": ["max_idle_per_origin", "idle_timeout"],
        "dns": ["cache_ttl"],
        "headers": ["via", "forwarded", "rules"],
        "auth": ["users", "required"],
        "log": ["enabled", "path", "verbose", "reveal_secrets", "include_headers", "queue_limit"],
        "tls": ["minimum_version"],
        "interception": ["hosts", "leaf_cache_size", "learn_passthrough"],
        "trust": ["system_roots", "ca_files", "profile", "pinning_without_interception", "default", "rules"],
        "redirects": ["rules"],
        "retry": ["rules"],
        "access": ["clients", "allow_hosts", "deny_hosts", "deny_networks", "methods"],
        "policy": ["identities", "default_role", "roles"],
        "upstream_proxies": ["rules", "default"],
        "reachability": ["enabled", "fail_fast"],
        "cache": ["enabled", "path", "max_size_bytes", "max_object_bytes", "memory_bytes", "rules"],
        "capture": ["path", "max_total_bytes", "rules"],
        "admin": ["listen", "token"],
        "metrics": ["enabled", "host_labels"],
        "ui": ["enabled", "ring_size", "heartbeat"],
        "pac": ["direct"],
        "http2": ["client", "upstream", "upstream_h2c_hosts", "max_concurrent_streams", "max_header_list_bytes"],
        "map": ["remote", "local"],
        "shaping": ["rules"],
        "breakpoints": ["max_held", "max_body_bytes", "rules"],
        "simulate": ["recordings", "mode", "match", "repeat", "latency"],
        "messages": ["enabled", "preview_bytes", "decode_budget_bytes"],
        "grpc": ["descriptor_sets"],
        "audit": ["enabled", "disable", "rules", "certificate_expiry_days"],
        "otel": ["endpoint", "protocol", "headers", "compression", "traces", "logs", "sample_ratio", "propagate",
                 "resource", "batch", "timeout_ms"],
    ]

    /// The keys of one trust rule (`trust.rules[i]`); `trust.default` takes the same minus name and hosts.
    static let trustRule = [
        "name", "hosts", "evaluators", "pins", "certificates", "ca_files", "crl_files", "expires", "mode",
        "client_certificate", "client_key", "profile",
    ]

    /// The keys of one `redirects.rules[i]`, and of one of its `rewrite` entries.
    static let redirectRule = ["hosts", "follow", "max_hops", "allow_downgrade", "allow_cross_host", "rewrite"]
    static let rewrite = ["from", "to"]
    /// The keys of one `retry.rules[i]`, and of its `backoff`.
    static let retryRule = [
        "hosts", "limit", "methods", "statuses", "errors", "backoff", "retry_after", "max_retry_after", "replay_body_bytes",
        "resume", "max_resumes",
    ]
    static let backoff = ["base", "multiplier", "max", "jitter"]
    /// The keys of one `headers.rules[i]`, and of its `request` / `response` edits.
    static let headerRule = ["hosts", "request", "response"]
    static let headerEdits = ["set", "add", "remove"]
    /// The keys of one `audit.rules[i]`.
    static let auditRule = ["hosts", "disable"]
    /// The keys of `otel.batch`.
    static let otelBatch = ["max_records", "max_delay_ms", "max_queue"]
    /// The keys of `simulate.match`.
    static let simulateMatch = ["on", "headers", "ignore_query", "ignore_json"]
    /// The keys of one `hooks[i]`.
    static let hook = [
        "name", "filter", "on", "command", "url", "timeout_ms", "max_body_bytes", "on_failure", "concurrency", "queue_limit",
    ]
    /// The keys of one `breakpoints.rules[i]`.
    static let breakpointRule = ["filter", "on", "timeout", "on_timeout"]
    /// The keys of one `capture.rules[i]`.
    static let captureRule = ["hosts", "request_bodies", "response_bodies", "max_body_bytes"]
    /// The keys of one `cache.rules[i]`.
    static let cacheRule = ["hosts", "store", "default_ttl", "cdn_cache_control"]
    /// The keys of one `map.remote[i]` and one `map.local[i]`.
    static let mapRemote = ["from", "to", "preserve_host", "allow_downgrade"]
    static let mapLocal = ["from", "file", "status", "content_type"]
    /// The keys of one `shaping.rules[i]`, and of its `faults` and `faults.status`.
    static let shapingRule = ["hosts", "profile", "latency_ms", "jitter_ms", "download_kbps", "upload_kbps", "faults"]
    static let shapingFaults = ["status", "reset_after_bytes", "stall_ms"]
    static let faultStatus = ["code", "rate"]
    /// The keys of one `upstream_proxies.rules[i]`.
    static let upstreamProxyRule = ["hosts", "proxy"]
    /// The keys of a `listen[i]` mapping.
    static let listenEntry = ["address", "mode", "tls"]
    static let listenTLS = ["cert", "key", "client_ca"]

    /// Every key path, top-level keys first.
    static let allPaths: [String] = topLevel + topLevel.flatMap { section in
        (sections[section] ?? []).map { "\(section).\($0)" }
    }

    /// The longest timeout accepted: one year. (Longer ones overflow a
    /// nanosecond count, and no timeout that long is meant.)
    static let maximumSeconds: Double = 31_536_000
}

/// Walks the composed YAML tree, filling a `LookoutConfiguration` and collecting errors.
final class ConfigReader {
    let file: String
    let renamedKeys: [String: String]
    let home: String?
    /// `LOOKOUT_ADMIN_TOKEN`, which wins over `admin.token` (a secret kept out of the file).
    let adminTokenOverride: String?
    private(set) var errors: [ConfigurationError] = []

    init(file: String, renamedKeys: [String: String], home: String?, adminTokenOverride: String? = nil) {
        self.file = file
        self.renamedKeys = renamedKeys
        self.home = home
        self.adminTokenOverride = adminTokenOverride.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Errors in file order (line, then column); errors without a place first.
    var sortedErrors: [ConfigurationError] {
        errors.enumerated().sorted { a, b in
            (a.element.line, a.element.column, a.offset) < (b.element.line, b.element.column, b.offset)
        }.map(\.element)
    }

    // MARK: - The document

    func read(_ root: Node?) -> LookoutConfiguration {
        var config = LookoutConfiguration(home: home)
        guard let root, !isNull(root) else {
            // An empty file is the defaults, and the environment's token still counts.
            applyAdminToken(&config, root: Node(""), top: [:])
            return config
        }
        guard case .mapping = root else {
            fail(root, "", "expected a mapping of settings at the top level, \(got(root))")
            return config
        }
        guard let top = fields(of: root, path: "", known: Schema.topLevel) else {
            return config
        }
        readServer(top, into: &config)
        readPolicies(top, into: &config)
        readAdminSections(top, root: root, into: &config)
        readRules(top, into: &config)
        return config
    }

    /// `LOOKOUT_ADMIN_TOKEN` over `admin.token`, then whether the admin pages need a token they lack.
    func applyAdminToken(_ config: inout LookoutConfiguration, root: Node, top: [String: Node]) {
        if let override = adminTokenOverride {
            if let problem = LookoutConfiguration.Admin.tokenProblem(override) {
                fail(root, LookoutConfiguration.Admin.tokenEnvironmentVariable, problem)
            } else {
                config.admin.token = override
            }
        }
        // Said once the address problems are fixed, so one mistake is one message.
        if config.adminExposureProblem == nil, config.openProxyProblem == nil, let problem = config.adminTokenProblem {
            fail(top["admin"] ?? top["listen"] ?? root, "admin.token", problem)
        }
    }

    func readLimits(_ section: [String: Node], into limits: inout LookoutConfiguration.Limits) {
        if let node = section["max_request_line_bytes"] {
            limits.maxRequestLineBytes = integer(node, "limits.max_request_line_bytes", atLeast: 1)
                ?? limits.maxRequestLineBytes
        }
        if let node = section["max_header_bytes"] {
            limits.maxHeaderBytes = integer(node, "limits.max_header_bytes", atLeast: 1) ?? limits.maxHeaderBytes
        }
        if let node = section["max_header_count"] {
            limits.maxHeaderCount = integer(node, "limits.max_header_count", atLeast: 1) ?? limits.maxHeaderCount
        }
        if let node = section["max_request_body_bytes"] {
            limits.maxRequestBodyBytes = integer(
                node, "limits.max_request_body_bytes", in: 0...Int.max,
                rangeMessage: "must not be negative (0 = unlimited)")
                ?? limits.maxRequestBodyBytes
        }
    }

    func readTimeouts(_ section: [String: Node], into timeouts: inout LookoutConfiguration.Timeouts) {
        let fields: [(String, WritableKeyPath<LookoutConfiguration.Timeouts, Double>)] = [
            ("client_header", \.clientHeader),
            ("client_idle", \.clientIdle),
            ("upstream_connect", \.upstreamConnect),
            ("upstream_first_byte", \.upstreamFirstByte),
            ("upstream_idle", \.upstreamIdle),
            ("shutdown_grace", \.shutdownGrace),
            ("tls_handshake", \.tlsHandshake),
            ("tunnel_idle", \.tunnelIdle),
        ]
        for (key, field) in fields {
            if let node = section[key], let value = seconds(node, "timeouts.\(key)") {
                timeouts[keyPath: field] = value
            }
        }
    }

    func readLog(_ section: [String: Node], into log: inout LookoutConfiguration.Log) {
        if let node = section["enabled"] {
            log.enabled = boolean(node, "log.enabled") ?? log.enabled
        }
        if let node = section["path"], let path = path(node, "log.path", expected: "a file path or \"-\" (stdout)") {
            log.path = path
        }
        if let node = section["verbose"] {
            log.verbose = boolean(node, "log.verbose") ?? log.verbose
        }
        if let node = section["reveal_secrets"] {
            log.revealSecrets = boolean(node, "log.reveal_secrets") ?? log.revealSecrets
        }
        if let node = section["include_headers"] {
            log.includeHeaders = boolean(node, "log.include_headers") ?? log.includeHeaders
        }
        if let node = section["queue_limit"] {
            log.queueLimit = integer(node, "log.queue_limit", atLeast: 1) ?? log.queueLimit
        }
    }

    // MARK: - Lists

    /// "name:password" strings (RFC 7617: the name cannot contain a colon; the password may).
    func credentials(_ node: Node, path: String) -> [String]? {
        let expected = "expected a list of \"name:password\" strings"
        guard case .sequence(let sequence) = node else {
            fail(node, path, "\(expected), \(got(node))")
            return nil
        }
        var users: [String] = []
        var firstLine: [Substring: Int] = [:]
        var ok = true
        for (index, element) in sequence.enumerated() {
            let elementPath = "\(path)[\(index)]"
            guard case .text(let text, _) = scalarValue(element) else {
                fail(element, elementPath, "expected a \"name:password\" string, \(got(element))")
                ok = false
                continue
            }
            guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else {
                fail(element, elementPath, "expected \"name:password\" with a non-empty name")
                ok = false
                continue
            }
            let name = text[..<colon]
            if let line = firstLine[name] {
                fail(element, elementPath, "user '\(name)' is listed twice (first on line \(line))")
                ok = false
                continue
            }
            firstLine[name] = element.mark?.line ?? 0
            users.append(text)
        }
        return ok ? users : nil
    }

    func ports(_ node: Node, path: String) -> [Int]? {
        integerList(node, path: path, what: ("port numbers", "a port number", "port "), in: 1...65535,
                    rangeMessage: "port must be between 1 and 65535")
    }

    /// A list of distinct whole numbers in `range`; `what` names the list, one element, and the
    /// prefix of a duplicate's message (`"port "` gives "port 443 is listed twice").
    func integerList(_ node: Node, path: String, what: (list: String, element: String, label: String),
                     in range: ClosedRange<Int>, rangeMessage: String) -> [Int]? {
        guard case .sequence(let sequence) = node else {
            fail(node, path, "expected a list of \(what.list), \(got(node))")
            return nil
        }
        var values: [Int] = []
        var firstLine: [Int: Int] = [:]
        var ok = true
        for (index, element) in sequence.enumerated() {
            let elementPath = "\(path)[\(index)]"
            guard let value = integer(element, elementPath, expected: what.element, in: range, rangeMessage: rangeMessage)
            else {
                ok = false
                continue
            }
            if let line = firstLine[value] {
                fail(element, elementPath, "\(what.label)\(value) is listed twice (first on line \(line))")
                ok = false
                continue
            }
            firstLine[value] = element.mark?.line ?? 0
            values.append(value)
        }
        return ok ? values : nil
    }

    // MARK: - Mappings

    /// The values of the known keys of a mapping. Reports unknown and duplicate
    /// keys; a null value (a section with nothing under it) is an empty mapping.
    /// Nil, after reporting it, when the node is not a mapping.
    func fields(of node: Node, path: String, known: [String]? = nil) -> [String: Node]? {
        let known = known ?? Schema.sections[path] ?? []
        if isNull(node) {
            return [:]
        }
        guard case .mapping(let mapping) = node else {
            fail(node, path, "expected a mapping, \(got(node))")
            return nil
        }
        var values: [String: Node] = [:]
        var firstLine: [String: Int] = [:]
        for (keyNode, value) in mapping {
            guard case .scalar(let scalar) = keyNode else {
                fail(keyNode, path, "expected a key name, \(got(keyNode))")
                continue
            }
            let name = renamedKeys[scalar.string] ?? scalar.string
            let keyPath = path.isEmpty ? name : "\(path).\(name)"
            if let line = firstLine[name] {
                fail(keyNode, keyPath, "duplicate key '\(name)' (first set on line \(line))")
                continue
            }
            firstLine[name] = keyNode.mark?.line ?? 0
            if known.contains(name) {
                values[name] = value
            } else {
                fail(keyNode, keyPath, unknownKeyMessage(name, known: known, section: path))
            }
        }
        return values
    }

    private func unknownKeyMessage(_ name: String, known: [String], section: String) -> String {
        // A key that exists exactly, but in another section, before a near miss here (`via` at
        // the top level is `headers.via`, not a misspelt `ui`).
        for candidate in Schema.allPaths {
            let parts = candidate.split(separator: ".")
            guard parts.last.map(String.init) == name else { continue }
            if parts.count == 1 {
                return "unknown key '\(name)'; '\(name)' belongs at the top level"
            }
            if parts.count == 2 && String(parts[0]) != section {
                return "unknown key '\(name)'; did you mean '\(candidate)'?"
            }
        }
        if let close = closestKey(to: name, among: known) {
            return "unknown key '\(name)'; did you mean '\(close)'?"
        }
        return "unknown key"
    }

    // MARK: - Scalars

    enum ScalarValue {
        /// A plain `~`, `null` or nothing at all.
        case null
        /// Anything else; `plain` is false for quoted and block scalars.
        case text(String, plain: Bool)
        /// A mapping or list.
        case notScalar
    }

    func scalarValue(_ node: Node) -> ScalarValue {
        guard case .scalar(let scalar) = node else {
            return .notScalar
        }
        if scalar.style == .plain || scalar.style == .any {
            switch scalar.string {
            case "", "~", "null", "Null", "NULL": return .null
            default: return .text(scalar.string, plain: true)
            }
        }
        return .text(scalar.string, plain: false)
    }

    func isNull(_ node: Node) -> Bool {
        if case .null = scalarValue(node) { return true }
        return false
    }

    /// "got ..." describing a node, for messages.
    func got(_ node: Node) -> String {
        switch node {
        case .mapping: return "got a mapping"
        case .sequence: return "got a list"
        case .alias: return "got an alias"
        case .scalar(let scalar):
            switch scalarValue(node) {
            case .null: return scalar.string.isEmpty ? "got nothing" : "got \(scalar.string)"
            case .text(let text, plain: true): return "got \(quoted(shortened(text)))"
            default: return "got the quoted string \(quoted(shortened(scalar.string)))"
            }
        }
    }

    func shortened(_ text: String) -> String {
        text.count > 40 ? text.prefix(40) + "…" : text
    }

    func seconds(_ node: Node, _ path: String, allowZero: Bool = false) -> Double? {
        let expected = "expected a number of seconds"
        guard case .text(let text, plain: true) = scalarValue(node), let value = parseNumber(text) else {
            fail(node, path, "\(expected), \(got(node))")
            return nil
        }
        guard value.isFinite else {
            fail(node, path, "\(expected), \(got(node))")
            return nil
        }
        if allowZero {
            guard value >= 0 else {
                fail(node, path, "must not be negative (0 = disabled)")
                return nil
            }
        } else {
            guard value > 0 else {
                fail(node, path, "must be greater than 0")
                return nil
            }
        }
        guard value <= Schema.maximumSeconds else {
            fail(node, path, "must be at most \(Int(Schema.maximumSeconds)) (one year)")
            return nil
        }
        return value
    }

    func integer(_ node: Node, _ path: String, atLeast minimum: Int) -> Int? {
        integer(node, path, in: minimum...Int.max, rangeMessage: "must be at least \(minimum)")
    }

    func integer(
        _ node: Node, _ path: String, expected: String = "a whole number",
        in range: ClosedRange<Int>, rangeMessage: String
    ) -> Int? {
        guard case .text(let text, plain: true) = scalarValue(node) else {
            fail(node, path, "expected \(expected), \(got(node))")
            return nil
        }
        let digits = text.hasPrefix("-") || text.hasPrefix("+") ? text.dropFirst() : Substring(text)
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            fail(node, path, "expected \(expected), \(got(node))")
            return nil
        }
        guard let value = Int(text.hasPrefix("+") ? String(digits) : text) else {
            fail(node, path, "\(text) is too large; \(rangeMessage)")
            return nil
        }
        guard range.contains(value) else {
            fail(node, path, rangeMessage)
            return nil
        }
        return value
    }

    func boolean(_ node: Node, _ path: String) -> Bool? {
        if case .text(let text, plain: true) = scalarValue(node) {
            switch text {
            case "true", "True", "TRUE": return true
            case "false", "False", "FALSE": return false
            default: break
            }
        }
        fail(node, path, "expected true or false, \(got(node))")
        return nil
    }

    /// A non-empty path, `~` expanded.
    func path(_ node: Node, _ path: String, expected: String) -> String? {
        guard case .text(let text, _) = scalarValue(node) else {
            var message = "expected \(expected), \(got(node))"
            if case .scalar(let scalar) = node, scalar.string == "~" {
                message += " (null in YAML; write \"~\" in quotes for the home folder)"
            }
            fail(node, path, message)
            return nil
        }
        guard !text.isEmpty else {
            fail(node, path, "must not be empty; expected \(expected)")
            return nil
        }
        guard text.hasPrefix("~") else {
            return text
        }
        guard text == "~" || text.hasPrefix("~/") else {
            fail(node, path, "only \"~\" and \"~/...\" are expanded; write \(quoted(text)) as a full path")
            return nil
        }
        guard let expanded = ConfigurationLoader.expandTilde(text, home: home) else {
            fail(node, path, "cannot expand \"~\": $HOME is not set")
            return nil
        }
        return expanded
    }

    // MARK: - Errors

    func fail(_ node: Node, _ keyPath: String, _ message: String) {
        errors.append(ConfigurationError(
            file: file, line: node.mark?.line ?? 0, column: node.mark?.column ?? 0,
            keyPath: keyPath, message: message))
    }
}

/// A YAML number (decimal, optional fraction and exponent) as a Double; nil for
/// anything else, including `.inf`, `.nan`, hexadecimal and sexagesimal forms.
func parseNumber(_ text: String) -> Double? {
    var sawDigit = false
    for character in text {
        switch character {
        case "0"..."9": sawDigit = true
        case ".", "e", "E", "+", "-": break
        default: return nil
        }
    }
    guard sawDigit else { return nil }
    return Double(text)
}

/// The known key closest to `name` (edit distance at most 2, and less than the
/// length of `name`), comparing case-insensitively; the first in schema order on a tie.
func closestKey(to name: String, among known: [String]) -> String? {
    var best: (key: String, distance: Int)?
    let lowered = Array(name.lowercased().unicodeScalars)
    for key in known {
        let distance = editDistance(lowered, Array(key.lowercased().unicodeScalars))
        if distance <= 2, distance < lowered.count, distance < (best?.distance ?? Int.max) {
            best = (key, distance)
        }
    }
    return best?.key
}

/// Levenshtein distance.
func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var previous = Array(0...b.count)
    var current = [Int](repeating: 0, count: b.count + 1)
    for i in 1...a.count {
        current[0] = i
        for j in 1...b.count {
            let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
            current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
        }
        swap(&previous, &current)
    }
    return previous[b.count]
}
