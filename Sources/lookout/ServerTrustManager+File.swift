import Logging
import LookoutConfig
import LookoutTLS

extension ServerTrustManager {
    /// Builds the trust rules of the config file: one trust store per distinct set of roots
    /// (the system bundle when `system_roots`, `trust.ca_files`, then the rule's `ca_files`),
    /// shared by the rules that use the same set.
    convenience init(_ trust: LookoutConfiguration.Trust, logger: Logger) throws {
        var stores: [[String]: TrustStore] = [:]
        func store(adding ruleFiles: [String]) throws -> TrustStore {
            let files = trust.caFiles + ruleFiles
            if let existing = stores[files] { return existing }
            // An intermediate in ca_files is an anchor too, as in most verifiers (RFC 5280 §6.1
            // lets the relying party choose its trust anchors).
            let created = try TrustStore(systemBundle: trust.systemRoots ? TrustStore.systemBundlePath : nil,
                                         additionalCAFiles: files, allowsPartialChains: true)
            stores[files] = created
            return created
        }
        func rule(_ settings: TrustRuleSettings, label: String) throws -> TrustRule {
            var members: [any ServerTrustEvaluator] = []
            for name in settings.evaluators {
                switch name {
                case .default:
                    members.append(DefaultTrustEvaluator(trustStore: try store(adding: settings.caFiles),
                                                         profile: settings.profile ?? trust.profile))
                case .revocation:
                    members.append(RevocationTrustEvaluator(
                        trustStore: try store(adding: settings.caFiles),
                        revocationLists: try settings.crlFiles.flatMap { file throws(CertificateError) in
                            try CertificateRevocationList.loadAll(file: file)
                        }))
                case .publicKeys:
                    members.append(PublicKeysTrustEvaluator(pins: settings.pins))
                case .pinnedCertificates:
                    members.append(PinnedCertificatesTrustEvaluator(
                        certificates: try settings.certificates.flatMap { file throws(CertificateError) in
                            try Certificate.loadAll(pemFile: file)
                        }))
                case .disabled:
                    logger.warning("trust: \(label) uses the disabled evaluator: upstream certificates for \(settings.hosts.isEmpty ? "every other host" : settings.hosts.map(\.text).joined(separator: ", ")) are NOT checked (development only)")
                    members.append(DisabledTrustEvaluator())
                }
            }
            let evaluator: any ServerTrustEvaluator = members.count == 1 ? members[0] : CompositeTrustEvaluator(members)
            var identity: ClientIdentity?
            if let certificate = settings.clientCertificate, let key = settings.clientKey {
                identity = try ClientIdentity(certificateFile: certificate, keyFile: key)
                if let warning = ClientKeyPermissions.warning(for: key) { logger.warning("trust: \(label): \(warning)") }
            }
            return TrustRule(name: settings.name, hosts: settings.hosts.map(\.text), evaluator: evaluator,
                             mode: settings.mode, pinsExpire: settings.pinsExpire, clientIdentity: identity)
        }
        let rules = try trust.rules.enumerated().map { index, settings in
            try rule(settings, label: settings.name ?? "trust.rules[\(index)]")
        }
        try self.init(rules: rules, defaultRule: try rule(trust.defaultRule, label: "trust.default"))
    }
}
