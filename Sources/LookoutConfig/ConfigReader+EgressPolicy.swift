import LookoutTLS
import Yams

/// The `policy` section: identities, the default role, and the roles.
extension ConfigReader {
    func readPolicy(_ section: [String: Node], node: Node, into policy: inout LookoutConfiguration.Policy) {
        // The shipped config's empty section: no roles, no identities, no default role = no policy.
        let empty = { (key: String) -> Bool in
            guard let value = section[key] else { return true }
            if self.isNull(value) { return true }
            if case .mapping(let mapping) = value { return mapping.isEmpty }
            if case .sequence(let sequence) = value { return sequence.isEmpty }
            return false
        }
        if empty("roles") && empty("identities") && empty("default_role") {
            policy = LookoutConfiguration.Policy()
            return
        }
        var roles: [PolicyRole] = []
        var roleFailed = false
        if let rolesNode = section["roles"] {
            guard case .mapping(let mapping) = rolesNode else {
                fail(rolesNode, "policy.roles", "expected a mapping of role names to roles, \(got(rolesNode))")
                return
            }
            for (keyNode, value) in mapping {
                guard case .text(let name, _) = scalarValue(keyNode), !name.isEmpty else {
                    fail(keyNode, "policy.roles", "expected a role name, \(got(keyNode))")
                    continue
                }
                if roles.contains(where: { $0.name == name }) {
                    fail(keyNode, "policy.roles.\(name)", "role \(name) is defined twice")
                    continue
                }
                if let role = policyRole(value, name: name) { roles.append(role) } else { roleFailed = true }
            }
        }
        // A role with errors is reported once, not again by each reference to it.
        guard !roleFailed else { return }
        guard !roles.isEmpty else {
            fail(section["roles"] ?? node, "policy.roles", "a policy needs at least one role")
            return
        }
        let names = roles.map(\.name)
        func known(_ role: String, _ at: Node, _ path: String) -> Bool {
            guard names.contains(role) else {
                fail(at, path, "names role \(quoted(role)), which policy.roles does not define (roles: \(names.joined(separator: ", ")))")
                return false
            }
            return true
        }
        var identities: [PolicyIdentity] = []
        if let list = section["identities"] {
            guard case .sequence(let sequence) = list else {
                fail(list, "policy.identities", "expected a list of {role, user|clients} mappings, \(got(list))")
                return
            }
            for (index, element) in sequence.enumerated() {
                let path = "policy.identities[\(index)]"
                guard let entry = fields(of: element, path: path, known: ["role", "user", "clients", "client_cert_subject"]) else {
                    continue
                }
                guard let roleNode = entry["role"], case .text(let role, _) = scalarValue(roleNode) else {
                    fail(element, "\(path).role", "an identity needs role (a name from policy.roles)")
                    continue
                }
                guard known(role, roleNode, "\(path).role") else { continue }
                let matches = ["user", "clients", "client_cert_subject"].filter { entry[$0] != nil }
                guard matches.count == 1 else {
                    fail(element, path, "an identity names exactly one of user, clients (got \(matches.isEmpty ? "none" : matches.joined(separator: ", ")))")
                    continue
                }
                if let subjectNode = entry["client_cert_subject"] {
                    guard case .text(let subject, _) = scalarValue(subjectNode), !subject.isEmpty else {
                        fail(subjectNode, "\(path).client_cert_subject", "expected an RFC 2253 subject such as \"CN=billing,O=corp\", \(got(subjectNode))")
                        continue
                    }
                    identities.append(PolicyIdentity(role: role, match: .certificateSubject(subject)))
                } else if let userNode = entry["user"] {
                    guard case .text(let user, _) = scalarValue(userNode), !user.isEmpty else {
                        fail(userNode, "\(path).user", "expected a user name from auth.users, \(got(userNode))")
                        continue
                    }
                    identities.append(PolicyIdentity(role: role, match: .user(user)))
                } else if let clientsNode = entry["clients"], let networks = networks(clientsNode, path: "\(path).clients") {
                    identities.append(PolicyIdentity(role: role, match: .clients(networks)))
                }
            }
        }
        guard let defaultNode = section["default_role"], case .text(let defaultRole, _) = scalarValue(defaultNode) else {
            fail(section["default_role"] ?? node, "policy.default_role",
                 "a policy needs default_role: the role of a client no identity matches (e.g. one with allow: [])")
            return
        }
        guard known(defaultRole, defaultNode, "policy.default_role") else { return }
        policy = LookoutConfiguration.Policy()
        policy.identities = identities
        policy.defaultRole = defaultRole
        policy.roles = roles
    }

    private func policyRole(_ node: Node, name: String) -> PolicyRole? {
        let path = "policy.roles.\(name)"
        guard let section = fields(of: node, path: path, known: ["mode", "allow", "deny", "methods", "rate", "max_concurrent"]) else {
            return nil
        }
        var role = PolicyRole(name: name)
        let before = errors.count
        if let modeNode = section["mode"] {
            if case .text(let text, _) = scalarValue(modeNode), let mode = PolicyRole.Mode(rawValue: text) {
                role.mode = mode
            } else {
                fail(modeNode, "\(path).mode", "expected enforce or report, \(got(modeNode))")
            }
        }
        if let node = section["allow"] { role.allow = guardedPatterns(node, path: "\(path).allow") ?? [] }
        if let node = section["deny"] { role.deny = guardedPatterns(node, path: "\(path).deny") ?? [] }
        if let node = section["methods"], !isNull(node) { role.methods = methodList(node, path: "\(path).methods") ?? [] }
        if let node = section["max_concurrent"] {
            role.maxConcurrent = integer(node, "\(path).max_concurrent", in: 1...1_000_000, rangeMessage: "must be from 1 to 1000000")
        }
        if let node = section["rate"], let rate = fields(of: node, path: "\(path).rate", known: ["requests_per_second", "burst"]) {
            let perSecond = rate["requests_per_second"].flatMap { value -> Double? in
                guard case .text(let text, plain: true) = scalarValue(value), let number = parseNumber(text), number > 0,
                      number <= 1_000_000 else {
                    fail(value, "\(path).rate.requests_per_second", "must be a number above 0 (at most 1000000), \(got(value))")
                    return nil
                }
                return number
            }
            if rate["requests_per_second"] == nil {
                fail(node, "\(path).rate.requests_per_second", "a rate needs requests_per_second (above 0)")
            }
            let burst = rate["burst"].flatMap { integer($0, "\(path).rate.burst", in: 1...10_000_000, rangeMessage: "must be at least 1") }
            if let perSecond {
                role.rate = PolicyRole.Rate(requestsPerSecond: perSecond, burst: burst ?? max(1, Int(perSecond.rounded(.up))))
            }
        }
        return errors.count == before ? role : nil
    }

    /// Host patterns, with the public-suffix guard: `**.co.uk` would let a role reach every
    /// registrable domain under a suffix, which no allow list means.
    private func guardedPatterns(_ node: Node, path: String) -> [HostPattern]? {
        guard let patterns = hostPatterns(node, path: path, allowEmpty: true) else { return nil }
        for pattern in patterns where pattern.kind != .exact && pattern.kind != .any
            && PublicSuffixList.system.isPublicSuffix(pattern.domain) {
            fail(node, path, "\(quoted(pattern.text)) covers every domain under the public suffix \(pattern.domain); name the domains themselves")
            return nil
        }
        return patterns
    }
}
