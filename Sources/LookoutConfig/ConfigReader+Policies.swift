import LookoutTLS
import Yams

/// The `redirects` and `retry` sections: per-host rules, each checked here so that
/// `lookout config check` names the line of a bad value.
extension ConfigReader {
    // MARK: - Redirects

    func redirectRules(_ node: Node, path: String) -> [RedirectRuleSettings]? {
        ruleList(node, path: path, known: Schema.redirectRule, what: "redirect rules") { section, elementPath in
            var rule = RedirectRuleSettings()
            if let node = section["follow"] { rule.follow = boolean(node, "\(elementPath).follow") ?? rule.follow }
            if let node = section["max_hops"] {
                rule.maxHops = integer(node, "\(elementPath).max_hops", in: 0...100,
                                       rangeMessage: "must be between 0 and 100") ?? rule.maxHops
            }
            if let node = section["allow_downgrade"] {
                rule.allowDowngrade = boolean(node, "\(elementPath).allow_downgrade") ?? rule.allowDowngrade
            }
            if let node = section["allow_cross_host"] {
                rule.allowCrossHost = boolean(node, "\(elementPath).allow_cross_host") ?? rule.allowCrossHost
            }
            if let node = section["rewrite"] {
                rule.rewrites = rewrites(node, path: "\(elementPath).rewrite") ?? []
            }
            return rule
        } hosts: { $0.hosts = $1 }
    }

    private func rewrites(_ node: Node, path: String) -> [RedirectRuleSettings.Rewrite]? {
        if isNull(node) { return [] }
        guard case .sequence(let sequence) = node else {
            fail(node, path, "expected a list of {from, to} prefixes, \(got(node))")
            return nil
        }
        var result: [RedirectRuleSettings.Rewrite] = []
        for (index, element) in sequence.enumerated() {
            let elementPath = "\(path)[\(index)]"
            guard let entry = fields(of: element, path: elementPath, known: Schema.rewrite) else { continue }
            var prefixes: [String] = []
            for key in Schema.rewrite {
                guard let value = entry[key] else {
                    fail(element, "\(elementPath).\(key)", "a rewrite needs \(key)")
                    continue
                }
                guard case .text(let text, _) = scalarValue(value),
                      text.hasPrefix("http://") || text.hasPrefix("https://"), text.count > 8 else {
                    fail(value, "\(elementPath).\(key)", "expected an absolute http:// or https:// URL prefix, \(got(value))")
                    continue
                }
                prefixes.append(text)
            }
            if prefixes.count == 2 { result.append(.init(from: prefixes[0], to: prefixes[1])) }
        }
        return result
    }

    // MARK: - Retry

    func retryRules(_ node: Node, path: String) -> [RetryRuleSettings]? {
        ruleList(node, path: path, known: Schema.retryRule, what: "retry rules") { section, elementPath in
            var rule = RetryRuleSettings()
            if let node = section["limit"] {
                rule.limit = integer(node, "\(elementPath).limit", in: 0...10,
                                     rangeMessage: "must be between 0 and 10 (extra attempts after the first)") ?? rule.limit
            }
            if let node = section["methods"], let methods = methodList(node, path: "\(elementPath).methods") {
                rule.methods = methods
            }
            if let node = section["statuses"], let statuses = integerList(
                node, path: "\(elementPath).statuses", what: ("status codes", "a status code", "status "),
                in: 400...599, rangeMessage: "only 4xx and 5xx responses can be retried") {
                rule.statuses = statuses
            }
            if let node = section["errors"], let errors = errorList(node, path: "\(elementPath).errors") {
                rule.errors = errors
            }
            if let node = section["backoff"], let backoff = fields(of: node, path: "\(elementPath).backoff", known: Schema.backoff) {
                let backoffPath = "\(elementPath).backoff"
                if let node = backoff["base"] { rule.backoffBase = seconds(node, "\(backoffPath).base", allowZero: true) ?? rule.backoffBase }
                if let node = backoff["max"] { rule.backoffMax = seconds(node, "\(backoffPath).max", allowZero: true) ?? rule.backoffMax }
                if let node = backoff["multiplier"] {
                    if case .text(let text, plain: true) = scalarValue(node), let value = parseNumber(text), value >= 1, value <= 100 {
                        rule.backoffMultiplier = value
                    } else {
                        fail(node, "\(backoffPath).multiplier", "expected a number from 1 to 100, \(got(node))")
                    }
                }
                if let node = backoff["jitter"] { rule.jitter = boolean(node, "\(backoffPath).jitter") ?? rule.jitter }
            }
            if let node = section["retry_after"] { rule.retryAfter = boolean(node, "\(elementPath).retry_after") ?? rule.retryAfter }
            if let node = section["max_retry_after"] {
                rule.maxRetryAfter = seconds(node, "\(elementPath).max_retry_after", allowZero: true) ?? rule.maxRetryAfter
            }
            if let node = section["replay_body_bytes"] {
                rule.replayBodyBytes = integer(node, "\(elementPath).replay_body_bytes", in: 0...(1 << 40),
                                               rangeMessage: "must be between 0 and 1 TiB") ?? rule.replayBodyBytes
            }
            if let node = section["resume"] { rule.resume = boolean(node, "\(elementPath).resume") ?? rule.resume }
            if let node = section["max_resumes"] {
                rule.maxResumes = integer(node, "\(elementPath).max_resumes", in: 1...100, rangeMessage: "must be between 1 and 100")
                    ?? rule.maxResumes
            }
            return rule
        } hosts: { $0.hosts = $1 }
    }

    func methodList(_ node: Node, path: String) -> [String]? {
        guard let texts = stringList(node, path: path, expected: "request methods (GET, PUT, …)") else { return nil }
        var methods: [String] = []
        var ok = true
        for (text, element, elementPath) in texts {
            let isToken = !text.isEmpty && text.utf8.allSatisfy { $0 >= 0x21 && $0 < 0x7F && !"\"(),/:;<=>?@[\\]{}".utf8.contains($0) }
            guard isToken, text == text.uppercased() else {
                fail(element, elementPath, "\"\(text)\" is not a request method (methods are case-sensitive tokens, e.g. GET)")
                ok = false
                continue
            }
            if methods.contains(text) {
                fail(element, elementPath, "\(text) is listed twice")
                ok = false
            }
            methods.append(text)
        }
        return ok ? methods : nil
    }

    private func errorList(_ node: Node, path: String) -> [String]? {
        guard let texts = stringList(node, path: path, expected: "error codes") else { return nil }
        var errors: [String] = []
        var ok = true
        for (text, element, elementPath) in texts {
            guard RetryRuleSettings.retryableErrors.contains(text) else {
                let hint = closestKey(to: text, among: RetryRuleSettings.retryableErrors).map { "; did you mean '\($0)'?" }
                    ?? " (one of \(RetryRuleSettings.retryableErrors.joined(separator: ", ")))"
                fail(element, elementPath, "\"\(text)\" is not a retryable error code\(hint)")
                ok = false
                continue
            }
            errors.append(text)
        }
        return ok ? errors : nil
    }

    // MARK: - Rule lists

    /// A list of per-host rules: each a mapping with `hosts`, no host pattern in two rules.
    func ruleList<Rule>(_ node: Node, path: String, known: [String], what: String,
                                read: ([String: Node], String) -> Rule,
                                hosts setHosts: (inout Rule, [HostPattern]) -> Void) -> [Rule]? {
        if isNull(node) { return [] }
        guard case .sequence(let sequence) = node else {
            fail(node, path, "expected a list of \(what) (each a mapping with hosts), \(got(node))")
            return nil
        }
        var rules: [Rule] = []
        var patternLines: [String: (rule: Int, line: Int)] = [:]
        var ok = true
        let errorsBefore = errors.count
        for (index, element) in sequence.enumerated() {
            let elementPath = "\(path)[\(index)]"
            guard let section = fields(of: element, path: elementPath, known: known) else {
                ok = false
                continue
            }
            guard let hostsNode = section["hosts"] else {
                fail(element, "\(elementPath).hosts", "a rule needs hosts (\"**\" for every host)")
                ok = false
                continue
            }
            guard let patterns = hostPatterns(hostsNode, path: "\(elementPath).hosts", allowEmpty: false) else {
                ok = false
                continue
            }
            for pattern in patterns {
                let key = "\(pattern.kind.rawValue) \(pattern.domain)"
                if let first = patternLines[key] {
                    fail(hostsNode, "\(elementPath).hosts",
                         "\"\(pattern.text)\" is already covered by \(path)[\(first.rule)] (line \(first.line)); a host belongs to one rule")
                    ok = false
                }
                patternLines[key] = (index, element.mark?.line ?? 0)
            }
            var rule = read(section, elementPath)
            setHosts(&rule, patterns)
            rules.append(rule)
        }
        return ok && errors.count == errorsBefore ? rules : nil
    }
}
