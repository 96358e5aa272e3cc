import Logging
import Lookout
import LookoutUpstream
import LookoutCache
import LookoutConfig
import LookoutHTTP
import LookoutTLS
import HTTPTypes
import LookoutModel

extension SessionConfiguration {
    /// Maps the validated config file onto the session's runtime configuration. Loads the trust
    /// stores and pinned certificates, and (when interception is on) loads or creates the CA.
    /// `trustManager`: the running one, for a reload that left `trust` as it was (reading the
    /// system bundle again is most of a reload's time).
    init(_ file: LookoutConfiguration, logger: Logger, trustManager: ServerTrustManager? = nil) throws {
        self.init()
        listen = file.listen.filter { $0.mode == .proxy && $0.tls == nil }.map { ($0.host, $0.port) }
        secureListen = try file.listen.compactMap { address in
            guard let tls = address.tls else { return nil }
            let identity = try ClientIdentity(certificateFile: tls.certificate, keyFile: tls.key)
            let authorities = try tls.clientCA.map { try Certificate.loadAll(pemFile: $0) } ?? []
            let engine = try TLSEngine(configuration: .server(identity: identity, clientAuthorities: authorities,
                                                              minimumVersion: file.tls.minimumVersion))
            return (address.host, address.port, engine)
        }
        transparentListen = file.listen.filter { $0.mode == .transparent }.map { ($0.host, $0.port) }
        socksListen = file.listen.filter { $0.mode == .socks5 }.map { ($0.host, $0.port) }
        adminListen = file.admin.listen.map { ($0.host, $0.port) }
        eventLoopCount = file.eventLoops
        eventLoopSpinMicroseconds = file.eventLoopSpinMicroseconds
        maxConnections = file.maxConnections
        parserLimits = HTTPParserLimits(maxRequestLineBytes: file.limits.maxRequestLineBytes,
                                        maxHeaderBytes: file.limits.maxHeaderBytes,
                                        maxHeaderCount: file.limits.maxHeaderCount)
        maxRequestBodyBytes = UInt64(file.limits.maxRequestBodyBytes)
        http2 = file.http2
        timeouts = file.timeouts
        allowedConnectPorts = Set(file.connect.allowedPorts)
        maxIdleConnectionsPerOrigin = file.pool.maxIdlePerOrigin
        poolIdleTimeout = file.pool.idleTimeout
        dnsCacheTTL = file.dns.cacheTTL
        addVia = file.headers.via
        addForwarded = file.headers.forwarded
        access = AccessPolicy(file.access)
        proxyCredentialsRequired = file.auth.required ?? !file.policy.isConfigured
        policy = file.policy.isConfigured ? EgressPolicy(file.policy) : nil
        parentProxyRules = HostRuleSet(file.upstreamProxies.rules.map { ($0.hosts, ParentProxy($0.proxy)) })
        defaultParentProxy = ParentProxy(file.upstreamProxies.defaultProxy)
        reachabilityEnabled = file.reachability.enabled
        failFastWhenUnreachable = file.reachability.enabled && file.reachability.failFast
        headerRules = Self.headerRules(file.headers)
        cache = Self.cache(file)
        capture = Self.capture(file)
        proxyCredentials = file.auth.users
        adminToken = file.admin.token
        pacDirect = file.pac.direct
        monitorQueueLimit = file.log.queueLimit
        temporaryDirectory = file.stateDirectory + "/tmp"
        readRules(file)
        try readTLS(file, logger: logger, trustManager: trustManager)
    }

    /// `headers.rules`, with the edits built from checked settings.
    private static func headerRules(_ headers: LookoutConfiguration.Headers) -> HostRuleSet<HeaderRule> {
        HostRuleSet(headers.rules.map { settings in
            (settings.hosts, HeaderRule(name: settings.hosts.map(\.text).joined(separator: ", "),
                                        request: HeaderEdits(settings.request), response: HeaderEdits(settings.response)))
        })
    }

    /// `cache`, when enabled.
    private static func cache(_ file: LookoutConfiguration) -> CacheSettings? {
        guard file.cache.enabled else { return nil }
        return CacheSettings(
            directory: file.cache.path.isEmpty ? file.stateDirectory + "/cache" : file.cache.path,
            limits: CacheLimits(maxSizeBytes: Int64(file.cache.maxSizeBytes), maxObjectBytes: Int64(file.cache.maxObjectBytes),
                                memoryBytes: Int64(file.cache.memoryBytes)),
            rules: HostRuleSet(file.cache.rules.map { rule in
                (rule.hosts, !rule.store ? .doNotCache
                    : rule.defaultTTL > 0 || !rule.cdnCacheControl
                    ? .modify(defaultTTL: rule.defaultTTL, cdnCacheControl: rule.cdnCacheControl) : .cache)
            }))
    }

    /// `capture`, when it has rules.
    private static func capture(_ file: LookoutConfiguration) -> CaptureSettings? {
        guard !file.capture.rules.isEmpty else { return nil }
        return CaptureSettings(
            directory: file.capture.path.isEmpty ? file.stateDirectory + "/capture" : file.capture.path,
            maxTotalBytes: Int64(file.capture.maxTotalBytes),
            rules: HostRuleSet(file.capture.rules.map { rule in
                (rule.hosts, CaptureRule(name: rule.hosts.map(\.text).joined(separator: ", "), requestBodies: rule.requestBodies,
                                         responseBodies: rule.responseBodies, maxBodyBytes: Int64(rule.maxBodyBytes)))
            }))
    }

    /// Redirect, retry, map and shaping rules.
    private mutating func readRules(_ file: LookoutConfiguration) {
        redirectRules = HostRuleSet(file.redirects.rules.map { rule in
            (rule.hosts, RedirectRule(follow: rule.follow, maxHops: rule.maxHops, allowDowngrade: rule.allowDowngrade,
                                      allowCrossHost: rule.allowCrossHost, rewrites: rule.rewrites.map { ($0.from, $0.to) }))
        })
        retryRules = HostRuleSet(file.retry.rules.map { settings in
            var rule = RetryRule()
            rule.limit = settings.limit
            rule.methods = Set(settings.methods)
            rule.statuses = Set(settings.statuses)
            rule.errors = Set(settings.errors)
            rule.backoffBase = settings.backoffBase
            rule.backoffMultiplier = settings.backoffMultiplier
            rule.backoffMax = settings.backoffMax
            rule.jitter = settings.jitter
            rule.honorRetryAfter = settings.retryAfter
            rule.maxRetryAfter = settings.maxRetryAfter
            rule.replayBodyBytes = UInt64(settings.replayBodyBytes)
            rule.maxResumes = settings.resume ? settings.maxResumes : 0
            return (settings.hosts, rule)
        })
        mapRules = MapRules(
            remote: file.map.remote.map { rule in
                MapRemoteRule(from: .init(rule.from), toHost: rule.to.host, toPort: rule.to.port, toIsSecure: rule.to.isSecure,
                              toPath: rule.to.path, toText: rule.to.text, preserveHost: rule.preserveHost,
                              allowDowngrade: rule.allowDowngrade)
            },
            local: file.map.local.map { rule in
                MapLocalRule(from: .init(rule.from), file: rule.file, status: rule.status,
                             contentType: rule.contentType ?? MapRules.contentType(forFile: rule.file))
            })
        shapingRules = HostRuleSet(file.shaping.rules.map { settings in
            (settings.hosts, ShapingRule(
                name: settings.hosts.map(\.text).joined(separator: ", "), profile: settings.profile,
                latency: settings.latencyMilliseconds / 1000, jitter: settings.jitterMilliseconds / 1000,
                downloadKbps: settings.downloadKbps, uploadKbps: settings.uploadKbps, faultStatus: settings.faultStatus,
                faultStatusRate: settings.faultStatusRate, resetAfterBytes: UInt64(settings.resetAfterBytes),
                stall: settings.stallMilliseconds / 1000))
        })
        breakpoints = file.breakpoints
        hooks = file.hooks
        simulate = file.simulate
        messages = file.messages
        otel = file.otel
        if file.interception.learnPassthrough {
            passthrough = PassthroughStore(path: file.stateDirectory + "/passthrough.json")
        }
        if file.audit.enabled {
            audit = (Set(file.audit.disable), HostRuleSet(file.audit.rules.map { ($0.hosts, Set($0.disable)) }),
                     file.audit.certificateExpiryDays)
        }
    }

    /// Trust, interception and the CA (loaded or created when interception is on).
    private mutating func readTLS(_ file: LookoutConfiguration, logger: Logger, trustManager: ServerTrustManager?) throws {
        tls.minimumVersion = file.tls.minimumVersion
        tls.trustManager = try trustManager ?? ServerTrustManager(file.trust, logger: logger)
        tls.pinningWithoutInterception = file.trust.pinningWithoutInterception == .allow ? .allow : .refuse
        tls.interceptedHosts = file.interception.hosts
        if file.interception.isEnabled {
            let authority = try CertificateAuthority.loadOrCreate(directory: file.stateDirectory,
                                                                  leafCacheCapacity: file.interception.leafCacheSize)
            let path = file.stateDirectory + "/" + CertificateAuthority.certificateFileName
            logger.notice("interception on for \(file.interception.hosts.map(\.text).joined(separator: ", ")); \(authority.wasCreated ? "created" : "loaded") the Lookout CA \(path) (clients must trust it)")
            tls.certificateAuthority = authority
        }
    }
}

extension HeaderEdits {
    /// Built from checked settings: every name and value was validated when the file was read.
    init(_ settings: HeaderRuleSettings.Edits) {
        self.init(remove: settings.remove.compactMap { HTTPField.Name($0) },
                  set: settings.set.compactMap { field in HTTPField.Name(field.name).map { HTTPField(name: $0, value: field.value) } },
                  add: settings.add.compactMap { field in HTTPField.Name(field.name).map { HTTPField(name: $0, value: field.value) } })
    }
}

extension ParentProxy {
    /// nil for `direct`.
    init?(_ setting: ParentProxySetting) {
        switch setting {
        case .direct:
            return nil
        case .proxy(let host, let port, let user, let password):
            self.init(host: host, port: port, user: user, password: password)
        case .socks(let host, let port, let user, let password, let remoteNames):
            self.init(host: host, port: port, user: user, password: password, kind: remoteNames ? .socks5h : .socks5)
        }
    }
}

extension MapRemoteRule.Prefix {
    init(_ prefix: MapURLPrefix) {
        self.init(isSecure: prefix.isSecure, host: prefix.hostPattern, port: prefix.port, path: prefix.path, text: prefix.text)
    }
}

extension EgressPolicy {
    convenience init(_ settings: LookoutConfiguration.Policy) {
        let roles = settings.roles.map { role in
            EgressPolicy.Role(name: role.name, enforces: role.mode == .enforce, allow: role.allow, deny: role.deny,
                              methods: role.methods, rate: role.rate.map { ($0.requestsPerSecond, $0.burst) },
                              maxConcurrent: role.maxConcurrent)
        }
        let identities = settings.identities.map { identity -> EgressPolicy.Identity in
            switch identity.match {
            case .user(let user): return .user(user, role: identity.role)
            case .clients(let networks): return .clients(networks, role: identity.role)
            case .certificateSubject(let subject): return .certificateSubject(subject, role: identity.role)
            }
        }
        self.init(roles: roles, identities: identities, defaultRole: settings.defaultRole)
    }
}

extension AccessPolicy {
    init(_ settings: LookoutConfiguration.Access) {
        self.init()
        clients = settings.clients
        restrictsHosts = !settings.allowHosts.isEmpty
        allowHosts = HostRuleSet(settings.allowHosts.map { ([$0], $0.text) })
        denyHosts = HostRuleSet(settings.denyHosts.map { ([$0], $0.text) })
        denyNetworks = settings.denyNetworks
        methods = settings.methods
    }
}
