import LookoutTLS

extension LookoutConfiguration {
    /// `trust`: how upstream TLS certificates are evaluated, per host.
    public struct Trust: Sendable, Equatable {
        /// What to do with a CONNECT to a host whose enforcing rule pins keys or certificates
        /// when that host is not intercepted (a blind tunnel cannot be checked).
        public enum PinningWithoutInterception: String, Sendable, Equatable, CaseIterable {
            /// 403 `pinning_requires_interception`.
            case refuse
            /// Open the blind tunnel; the pin goes unchecked.
            case allow
        }

        /// `system_roots`: include the system CA bundle in every rule's roots.
        public var systemRoots: Bool
        /// `ca_files`: extra root files (absolute paths) trusted by every rule.
        public var caFiles: [String]
        /// `profile`: the certificate profile of every rule that names none; nil to choose it
        /// by the anchor a path ends at (`webpki` for the system bundle, `rfc5280` for `ca_files`).
        public var profile: TrustProfile?
        /// `pinning_without_interception`
        public var pinningWithoutInterception: PinningWithoutInterception
        /// `default`: the rule for hosts no rule matches.
        public var defaultRule: TrustRuleSettings
        /// `rules`: per-host rules, matched most specific first.
        public var rules: [TrustRuleSettings]

        public init(
            systemRoots: Bool = true,
            caFiles: [String] = [],
            profile: TrustProfile? = nil,
            pinningWithoutInterception: PinningWithoutInterception = .refuse,
            defaultRule: TrustRuleSettings = TrustRuleSettings(),
            rules: [TrustRuleSettings] = []
        ) {
            self.systemRoots = systemRoots
            self.caFiles = caFiles
            self.profile = profile
            self.pinningWithoutInterception = pinningWithoutInterception
            self.defaultRule = defaultRule
            self.rules = rules
        }
    }
}

/// The evaluators a trust rule may name in `evaluators:`.
public enum TrustEvaluatorName: String, Sendable, Equatable, CaseIterable {
    /// Chain to a trusted root, host name, validity dates.
    case `default` = "default"
    /// Require a good stapled OCSP response for the leaf; CRL files checked when given.
    case revocation = "revocation"
    /// SPKI SHA-256 pins (`pins:`).
    case publicKeys = "public-keys"
    /// Certificates equal to one of `certificates:`.
    case pinnedCertificates = "pinned-certificates"
    /// No evaluation at all (development only).
    case disabled = "disabled"
}

/// One entry of `trust.rules` (or `trust.default`), validated: patterns and pins parsed, files
/// present and readable as certificates, paths absolute.
public struct TrustRuleSettings: Sendable, Equatable {
    /// `name`: shown in logs and events; nil = "rules[i]" (or "default").
    public var name: String?
    /// `hosts`: the patterns this rule covers (empty for the default rule).
    public var hosts: [HostPattern]
    /// `evaluators`: all must pass; more than one makes a composite.
    public var evaluators: [TrustEvaluatorName]
    /// `pins`: for `public-keys`; several are backup pins.
    public var pins: [PublicKeyPin]
    /// `certificates`: files for `pinned-certificates`.
    public var certificates: [String]
    /// `ca_files`: roots added for this rule (used by `default` and `revocation`).
    public var caFiles: [String]
    /// `crl_files`: certificate revocation lists for `revocation`.
    public var crlFiles: [String]
    /// `expires`: Unix seconds after which a pin mismatch is reported, not enforced
    /// (the end, UTC, of the day written in the file).
    public var pinsExpire: Int64?
    /// `mode`
    public var mode: TrustMode
    /// `client_certificate`: a PEM file, the certificate then its chain, offered when the
    /// origin asks for one (absolute-form https and intercepted exchanges); with `client_key`.
    public var clientCertificate: String?
    /// `client_key`: the certificate's unencrypted PEM private key.
    public var clientKey: String?
    /// `profile`: the certificate profile the default evaluator judges under; nil to follow
    /// `trust.profile`, else the anchor.
    public var profile: TrustProfile?

    public init(
        name: String? = nil,
        hosts: [HostPattern] = [],
        evaluators: [TrustEvaluatorName] = [.default],
        pins: [PublicKeyPin] = [],
        certificates: [String] = [],
        caFiles: [String] = [],
        crlFiles: [String] = [],
        pinsExpire: Int64? = nil,
        mode: TrustMode = .enforce
    ) {
        self.name = name
        self.hosts = hosts
        self.evaluators = evaluators
        self.pins = pins
        self.certificates = certificates
        self.caFiles = caFiles
        self.crlFiles = crlFiles
        self.pinsExpire = pinsExpire
        self.mode = mode
    }
}
