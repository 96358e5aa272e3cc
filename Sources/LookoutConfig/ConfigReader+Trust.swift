import Foundation
import LookoutTLS
import Yams

/// The `tls`, `interception` and `trust` sections. Patterns and pins are parsed and every
/// certificate file is loaded here, so `lookout config check` catches a bad pin or a missing
/// file with its line, not the first TLS connection.
extension ConfigReader {
    func readTLS(_ section: [String: Node], into tls: inout LookoutConfiguration.TLS) {
        guard let node = section["minimum_version"] else { return }
        let choices = TLSProtocolVersion.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: " or ")
        guard case .text(let text, _) = scalarValue(node),
              let version = TLSProtocolVersion(rawValue: text.hasPrefix("TLSv") ? String(text.dropFirst(4)) : text)
        else {
            fail(node, "tls.minimum_version", "expected \(choices), \(got(node))")
            return
        }
        tls.minimumVersion = version
    }

    func readInterception(_ section: [String: Node], into interception: inout LookoutConfiguration.Interception) {
        if let node = section["hosts"], let hosts = hostPatterns(node, path: "interception.hosts", allowEmpty: true) {
            interception.hosts = hosts
        }
        if let node = section["learn_passthrough"] {
            interception.learnPassthrough = boolean(node, "interception.learn_passthrough") ?? interception.learnPassthrough
        }
        if let node = section["leaf_cache_size"] {
            interception.leafCacheSize = integer(node, "interception.leaf_cache_size", atLeast: 1)
                ?? interception.leafCacheSize
        }
    }

    func readTrust(_ section: [String: Node], into trust: inout LookoutConfiguration.Trust) {
        if let node = section["system_roots"] {
            trust.systemRoots = boolean(node, "trust.system_roots") ?? trust.systemRoots
        }
        if let node = section["ca_files"], let files = anchorFiles(node, path: "trust.ca_files") {
            trust.caFiles = files
        }
        if let node = section["profile"] {
            trust.profile = profile(node, path: "trust.profile") ?? trust.profile
        }
        if let node = section["pinning_without_interception"] {
            let choices = LookoutConfiguration.Trust.PinningWithoutInterception.allCases
            if case .text(let text, _) = scalarValue(node),
               let choice = LookoutConfiguration.Trust.PinningWithoutInterception(rawValue: text) {
                trust.pinningWithoutInterception = choice
            } else {
                fail(node, "trust.pinning_without_interception",
                     "expected \(choices.map(\.rawValue).joined(separator: " or ")), \(got(node))")
            }
        }
        if let node = section["default"] {
            let known = Schema.trustRule.filter { $0 != "name" && $0 != "hosts" }
            if let rule = trustRule(node, path: "trust.default", known: known) {
                trust.defaultRule = rule
            }
        }
        if let node = section["rules"] {
            trust.rules = trustRules(node, path: "trust.rules") ?? trust.rules
        }
        if !trust.systemRoots, trust.caFiles.isEmpty {
            // Without any root the default evaluator can only fail; say so unless every rule
            // that uses it brings its own roots.
            let rules = [("trust.default", trust.defaultRule)] + trust.rules.enumerated().map { ("trust.rules[\($0.offset)]", $0.element) }
            for (path, rule) in rules where rule.evaluators.contains(.default) && rule.caFiles.isEmpty {
                if let node = section["system_roots"] {
                    fail(node, "trust.system_roots",
                         "with system_roots false and no trust.ca_files, \(path) has no root to trust; add ca_files")
                }
                break
            }
        }
    }

    // MARK: - Rules

    private func trustRules(_ node: Node, path: String) -> [TrustRuleSettings]? {
        if isNull(node) { return [] }
        guard case .sequence(let sequence) = node else {
            fail(node, path, "expected a list of rules (each a mapping with hosts and evaluators), \(got(node))")
            return nil
        }
        var rules: [TrustRuleSettings] = []
        // Keyed by shape and normalized domain, so "A.example" and "a.example" collide.
        var patternLines: [String: (rule: Int, line: Int)] = [:]
        var nameLines: [String: Int] = [:]
        var ok = true
        for (index, element) in sequence.enumerated() {
            let elementPath = "\(path)[\(index)]"
            guard let rule = trustRule(element, path: elementPath, known: Schema.trustRule) else {
                ok = false
                continue
            }
            guard !rule.hosts.isEmpty else {
                fail(element, "\(elementPath).hosts", "a rule needs hosts (use trust.default for every other host)")
                ok = false
                continue
            }
            if let name = rule.name {
                if let line = nameLines[name] {
                    fail(element, "\(elementPath).name", "rule name '\(name)' is used twice (first on line \(line))")
                    ok = false
                }
                nameLines[name] = element.mark?.line ?? 0
            }
            for pattern in rule.hosts {
                let key = "\(pattern.kind.rawValue) \(pattern.domain)"
                if let first = patternLines[key] {
                    fail(element, "\(elementPath).hosts",
                         "\"\(pattern.text)\" is already covered by \(path)[\(first.rule)] (line \(first.line)); a host belongs to one rule")
                    ok = false
                }
                patternLines[key] = (index, element.mark?.line ?? 0)
            }
            rules.append(rule)
        }
        return ok ? rules : nil
    }

    private func trustRule(_ node: Node, path: String, known: [String]) -> TrustRuleSettings? {
        guard case .mapping = node else {
            fail(node, path, "expected a mapping (hosts, evaluators, pins, …), \(got(node))")
            return nil
        }
        guard let section = fields(of: node, path: path, known: known) else { return nil }
        let errorsBefore = errors.count
        var rule = TrustRuleSettings()
        if let node = section["name"] {
            if case .text(let text, _) = scalarValue(node), !text.isEmpty {
                rule.name = text
            } else {
                fail(node, "\(path).name", "expected a name, \(got(node))")
            }
        }
        if let node = section["hosts"] {
            rule.hosts = hostPatterns(node, path: "\(path).hosts", allowEmpty: false) ?? []
        }
        if let node = section["pins"] {
            rule.pins = pins(node, path: "\(path).pins") ?? []
        }
        if let node = section["certificates"] {
            rule.certificates = certificateFiles(node, path: "\(path).certificates") ?? []
        }
        if let node = section["ca_files"] {
            rule.caFiles = anchorFiles(node, path: "\(path).ca_files") ?? []
        }
        if let node = section["profile"] {
            rule.profile = profile(node, path: "\(path).profile")
        }
        if let node = section["crl_files"] {
            rule.crlFiles = crlFiles(node, path: "\(path).crl_files") ?? []
        }
        if let node = section["expires"] {
            rule.pinsExpire = endOfDay(node, path: "\(path).expires")
        }
        if let node = section["mode"] {
            if case .text(let text, _) = scalarValue(node), let mode = TrustMode(rawValue: text) {
                rule.mode = mode
            } else {
                fail(node, "\(path).mode", "expected enforce or report-only, \(got(node))")
            }
        }
        if let node = section["evaluators"] {
            if let evaluators = evaluatorNames(node, path: "\(path).evaluators") {
                rule.evaluators = evaluators
                checkEvaluatorInputs(rule, section: section, node: node, path: path)
            }
        } else {
            // Unsaid evaluators follow from what the rule gives: a valid chain, plus the pins.
            rule.evaluators = [.default]
            if !rule.pins.isEmpty { rule.evaluators.append(.publicKeys) }
            if !rule.certificates.isEmpty { rule.evaluators.append(.pinnedCertificates) }
            if !rule.crlFiles.isEmpty { rule.evaluators.append(.revocation) }
        }
        readClientCertificate(section, path: path, into: &rule)
        if let given = section["profile"], !rule.evaluators.contains(.default) {
            fail(given, "\(path).profile", "profile applies to the default evaluator; add it to evaluators")
        }
        if let given = section["expires"], !rule.evaluators.contains(.publicKeys),
           !rule.evaluators.contains(.pinnedCertificates) {
            fail(given, "\(path).expires", "expires applies to pins; this rule has no public-keys or pinned-certificates evaluator")
        }
        return errors.count == errorsBefore ? rule : nil
    }

    /// `client_certificate` and `client_key`: both or neither, readable, and the key the
    /// certificate's.
    private func readClientCertificate(_ section: [String: Node], path: String, into rule: inout TrustRuleSettings) {
        let certificateNode = section["client_certificate"], keyNode = section["client_key"]
        guard certificateNode != nil || keyNode != nil else { return }
        guard let certificateNode, let keyNode else {
            let given = certificateNode ?? keyNode!
            fail(given, "\(path).\(certificateNode == nil ? "client_key" : "client_certificate")",
                 "client_certificate and client_key go together")
            return
        }
        guard case .text(let certificateText, _) = scalarValue(certificateNode), let certificate = resolve(certificateText) else {
            fail(certificateNode, "\(path).client_certificate", "expected a PEM file path, \(got(certificateNode))")
            return
        }
        guard case .text(let keyText, _) = scalarValue(keyNode), let key = resolve(keyText) else {
            fail(keyNode, "\(path).client_key", "expected a PEM file path, \(got(keyNode))")
            return
        }
        do {
            _ = try ClientIdentity(certificateFile: certificate, keyFile: key)
        } catch {
            fail(error.kind == .keyMismatch || error.message.hasPrefix(key) ? keyNode : certificateNode,
                 "\(path).\(error.kind == .keyMismatch || error.message.hasPrefix(key) ? "client_key" : "client_certificate")",
                 error.message)
            return
        }
        rule.clientCertificate = certificate
        rule.clientKey = key
    }

    /// Every input a listed evaluator needs is given, and nothing given goes unused.
    private func checkEvaluatorInputs(_ rule: TrustRuleSettings, section: [String: Node], node: Node, path: String) {
        let uses = Set(rule.evaluators)
        func requires(_ evaluator: TrustEvaluatorName, _ key: String, present: Bool) {
            if uses.contains(evaluator), !present, section[key] == nil {
                fail(node, "\(path).evaluators", "\(evaluator.rawValue) needs \(key) in the same rule")
            }
            if !uses.contains(evaluator), let given = section[key], present {
                fail(given, "\(path).\(key)", "\(key) are only checked by the \(evaluator.rawValue) evaluator; add it to evaluators")
            }
        }
        requires(.publicKeys, "pins", present: !rule.pins.isEmpty)
        requires(.pinnedCertificates, "certificates", present: !rule.certificates.isEmpty)
        if let given = section["crl_files"], !uses.contains(.revocation) {
            fail(given, "\(path).crl_files", "crl_files are only checked by the revocation evaluator; add it to evaluators")
        }
        if let given = section["ca_files"], !uses.contains(.default), !uses.contains(.revocation) {
            fail(given, "\(path).ca_files", "ca_files are only used by the default and revocation evaluators")
        }
        if uses.contains(.disabled), rule.evaluators.count > 1 {
            fail(node, "\(path).evaluators", "disabled turns evaluation off; it cannot be combined with other evaluators")
        }
    }

    private func evaluatorNames(_ node: Node, path: String) -> [TrustEvaluatorName]? {
        let names = TrustEvaluatorName.allCases.map(\.rawValue).joined(separator: ", ")
        let elements: [Node]
        switch node {
        case .sequence(let sequence): elements = Array(sequence)
        case .scalar: elements = [node]
        default:
            fail(node, path, "expected a list of evaluator names (\(names)), \(got(node))")
            return nil
        }
        guard !elements.isEmpty else {
            fail(node, path, "expected at least one evaluator (\(names))")
            return nil
        }
        var evaluators: [TrustEvaluatorName] = []
        var ok = true
        for (index, element) in elements.enumerated() {
            let elementPath = node.isSequence ? "\(path)[\(index)]" : path
            guard case .text(let text, _) = scalarValue(element), let name = TrustEvaluatorName(rawValue: text) else {
                var message = "expected one of \(names), \(got(element))"
                if case .text("composite", _) = scalarValue(element) {
                    message = "list the evaluators to combine instead of composite: every one listed must pass"
                } else if case .text(let text, _) = scalarValue(element),
                          let close = closestKey(to: text, among: TrustEvaluatorName.allCases.map(\.rawValue)) {
                    message += "; did you mean '\(close)'?"
                }
                fail(element, elementPath, message)
                ok = false
                continue
            }
            if evaluators.contains(name) {
                fail(element, elementPath, "\(name.rawValue) is listed twice")
                ok = false
                continue
            }
            evaluators.append(name)
        }
        return ok ? evaluators : nil
    }

    // MARK: - Values

    func stringList(_ node: Node, path: String, expected: String) -> [(String, Node, String)]? {
        guard case .sequence(let sequence) = node else {
            fail(node, path, "expected a list of \(expected), \(got(node))")
            return nil
        }
        var values: [(String, Node, String)] = []
        var ok = true
        for (index, element) in sequence.enumerated() {
            let elementPath = "\(path)[\(index)]"
            guard case .text(let text, _) = scalarValue(element), !text.isEmpty else {
                fail(element, elementPath, "expected \(expected), \(got(element))")
                ok = false
                continue
            }
            values.append((text, element, elementPath))
        }
        return ok ? values : nil
    }

    func hostPatterns(_ node: Node, path: String, allowEmpty: Bool) -> [HostPattern]? {
        guard let texts = stringList(node, path: path, expected: "host patterns (\"api.example.com\", \"*.example.com\", \"**.example.com\", \"**\")") else {
            return nil
        }
        if texts.isEmpty, !allowEmpty {
            fail(node, path, "expected at least one host pattern")
            return nil
        }
        var patterns: [HostPattern] = []
        var ok = true
        for (text, element, elementPath) in texts {
            do {
                let pattern = try HostPattern(text)
                if patterns.contains(where: { $0.kind == pattern.kind && $0.domain == pattern.domain }) {
                    fail(element, elementPath, "\"\(text)\" is listed twice")
                    ok = false
                } else {
                    patterns.append(pattern)
                }
            } catch {
                fail(element, elementPath, error.message)
                ok = false
            }
        }
        return ok ? patterns : nil
    }

    private func pins(_ node: Node, path: String) -> [PublicKeyPin]? {
        guard let texts = stringList(node, path: path, expected: "\"sha256/BASE64\" pins") else { return nil }
        var pins: [PublicKeyPin] = []
        var ok = true
        for (text, element, elementPath) in texts {
            do {
                let pin = try PublicKeyPin(text)
                if pins.contains(pin) {
                    fail(element, elementPath, "pin \(pin) is listed twice")
                    ok = false
                } else {
                    pins.append(pin)
                }
            } catch {
                fail(element, elementPath, error.message + " (get pins with `lookout pin HOST` or `lookout pin --cert FILE`)")
                ok = false
            }
        }
        return ok ? pins : nil
    }

    /// Files that must hold at least one certificate (PEM bundle or one DER certificate).
    private func certificateFiles(_ node: Node, path: String) -> [String]? {
        files(node, path: path, expected: "certificate files (PEM or DER)") { (file: String) throws(CertificateError) in
            _ = try Certificate.loadAll(pemFile: file)
        }
    }

    /// `ca_files`: files of trust anchors. Each certificate must be a CA (basicConstraints cA)
    /// or self-signed (a server certificate trusted as itself); a leaf issued by a CA is refused,
    /// since it can anchor nothing but itself and usually means the wrong file was listed.
    private func anchorFiles(_ node: Node, path: String) -> [String]? {
        files(node, path: path, expected: "CA certificate files (PEM or DER)") { (file: String) throws(CertificateError) in
            for certificate in try Certificate.loadAll(pemFile: file) where !certificate.isCertificateAuthority && !certificate.isSelfSigned {
                throw CertificateError(.notACertificateAuthority, "\(file): \(certificate.subject) is not a CA certificate (no basicConstraints cA) and not self-signed; list the CA that issued it")
            }
        }
    }

    private func profile(_ node: Node, path: String) -> TrustProfile? {
        if isNull(node) { return nil }
        guard case .text(let text, _) = scalarValue(node), let profile = TrustProfile(rawValue: text) else {
            fail(node, path, "expected \(TrustProfile.allCases.map(\.rawValue).joined(separator: " or ")), \(got(node))")
            return nil
        }
        return profile
    }

    private func crlFiles(_ node: Node, path: String) -> [String]? {
        files(node, path: path, expected: "CRL files (PEM or DER)") { (file: String) throws(CertificateError) in
            _ = try CertificateRevocationList.loadAll(file: file)
        }
    }

    private func files(_ node: Node, path: String, expected: String,
                       check: (String) throws(CertificateError) -> Void) -> [String]? {
        guard let texts = stringList(node, path: path, expected: expected) else { return nil }
        var files: [String] = []
        var ok = true
        for (text, element, elementPath) in texts {
            guard let file = resolve(text) else {
                fail(element, elementPath, "cannot expand \"~\": $HOME is not set")
                ok = false
                continue
            }
            do {
                try check(file)
                files.append(file)
            } catch {
                fail(element, elementPath, error.message)
                ok = false
            }
        }
        return ok ? files : nil
    }

    /// `~` expanded; a relative path taken from the config file's folder, so a config and
    /// the certificates beside it can move together.
    func resolve(_ text: String) -> String? {
        if text == "~" || text.hasPrefix("~/") {
            return ConfigurationLoader.expandTilde(text, home: home)
        }
        if text.hasPrefix("/") { return text }
        var folder = (file as NSString).deletingLastPathComponent
        if !folder.hasPrefix("/") {
            let cwd = FileManager.default.currentDirectoryPath
            folder = folder.isEmpty ? cwd : cwd + "/" + folder
        }
        return URL(fileURLWithPath: folder + "/" + text).standardized.path
    }

    /// A `YYYY-MM-DD` date as the Unix time of the following midnight UTC: the day itself
    /// is the last day the pins are enforced.
    private func endOfDay(_ node: Node, path: String) -> Int64? {
        guard case .text(let text, _) = scalarValue(node) else {
            fail(node, path, "expected a date YYYY-MM-DD, \(got(node))")
            return nil
        }
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
              (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day)
        else {
            fail(node, path, "expected a date YYYY-MM-DD, \(got(node))")
            return nil
        }
        return (daysSinceEpoch(year: year, month: month, day: day) + 1) * 86_400
    }
}

private extension Node {
    var isSequence: Bool {
        if case .sequence = self { return true }
        return false
    }
}

private func isLeapYear(_ year: Int) -> Bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

private func daysIn(month: Int, year: Int) -> Int {
    switch month {
    case 2: return isLeapYear(year) ? 29 : 28
    case 4, 6, 9, 11: return 30
    default: return 31
    }
}

/// Days from 1970-01-01 to the date (proleptic Gregorian; Howard Hinnant's days_from_civil).
private func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int64 {
    let y = Int64(month <= 2 ? year - 1 : year)
    let era = (y >= 0 ? y : y - 399) / 400
    let yearOfEra = y - era * 400
    let m = Int64(month)
    let dayOfYear = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + Int64(day) - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    return era * 146_097 + dayOfEra - 719_468
}
