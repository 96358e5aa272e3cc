import Yams

/// The top-level sections of a configuration document, read in an order where each check sees the
/// sections it depends on (the admin exposure and open-proxy checks come after `listen`, `auth`
/// and `access`).
extension ConfigReader {
    /// Where and how the proxy serves: addresses, loops, limits, timeouts, pooling, DNS.
    func readServer(_ top: [String: Node], into config: inout LookoutConfiguration) {
        if let node = top["listen"] {
            config.listen = listen(node, path: "listen", modes: true) ?? config.listen
        }
        if let node = top["config_watch"] {
            config.configWatch = boolean(node, "config_watch") ?? config.configWatch
        }
        if let node = top["state_dir"], let path = path(node, "state_dir", expected: "a folder path") {
            config.stateDirectory = path
        }
        if let node = top["event_loops"] {
            config.eventLoops = integer(node, "event_loops", in: 0...256,
                                        rangeMessage: "must be between 0 and 256 (0 = one per core)")
                ?? config.eventLoops
        }
        if let node = top["event_loop_spin_us"] {
            config.eventLoopSpinMicroseconds = integer(node, "event_loop_spin_us", in: 0...1000,
                                                       rangeMessage: "must be between 0 and 1000 microseconds (0 = never spin)")
                ?? config.eventLoopSpinMicroseconds
        }
        if let node = top["max_connections"] {
            config.maxConnections = integer(node, "max_connections", atLeast: 1) ?? config.maxConnections
        }
        if let node = top["limits"], let section = fields(of: node, path: "limits") {
            readLimits(section, into: &config.limits)
        }
        if let node = top["timeouts"], let section = fields(of: node, path: "timeouts") {
            readTimeouts(section, into: &config.timeouts)
        }
        if let node = top["connect"], let section = fields(of: node, path: "connect") {
            if let node = section["allowed_ports"] {
                config.connect.allowedPorts = ports(node, path: "connect.allowed_ports")
                    ?? config.connect.allowedPorts
            }
        }
        if let node = top["pool"], let section = fields(of: node, path: "pool") {
            if let node = section["max_idle_per_origin"] {
                config.pool.maxIdlePerOrigin = integer(
                    node, "pool.max_idle_per_origin", in: 0...Int.max,
                    rangeMessage: "must not be negative (0 = keep no idle connections)")
                    ?? config.pool.maxIdlePerOrigin
            }
            if let node = section["idle_timeout"] {
                config.pool.idleTimeout = seconds(node, "pool.idle_timeout") ?? config.pool.idleTimeout
            }
        }
        if let node = top["dns"], let section = fields(of: node, path: "dns") {
            if let node = section["cache_ttl"] {
                config.dns.cacheTTL = seconds(node, "dns.cache_ttl", allowZero: true) ?? config.dns.cacheTTL
            }
        }
    }

    /// Per-host policies and the features that do not depend on the admin settings.
    func readPolicies(_ top: [String: Node], into config: inout LookoutConfiguration) {
        if let node = top["headers"], let section = fields(of: node, path: "headers") {
            if let node = section["via"] {
                config.headers.via = boolean(node, "headers.via") ?? config.headers.via
            }
            if let node = section["forwarded"] {
                config.headers.forwarded = boolean(node, "headers.forwarded") ?? config.headers.forwarded
            }
            if let node = section["rules"] {
                config.headers.rules = headerRules(node, path: "headers.rules") ?? config.headers.rules
            }
        }
        if let node = top["auth"], let section = fields(of: node, path: "auth") {
            if let node = section["users"] {
                config.auth.users = credentials(node, path: "auth.users") ?? config.auth.users
            }
            if let node = section["required"], !isNull(node) {
                config.auth.required = boolean(node, "auth.required") ?? config.auth.required
            }
        }
        if let node = top["log"], let section = fields(of: node, path: "log") {
            readLog(section, into: &config.log)
        }
        if let node = top["tls"], let section = fields(of: node, path: "tls") {
            readTLS(section, into: &config.tls)
        }
        if let node = top["interception"], let section = fields(of: node, path: "interception") {
            readInterception(section, into: &config.interception)
        }
        if let node = top["trust"], let section = fields(of: node, path: "trust") {
            readTrust(section, into: &config.trust)
        }
        if let node = top["access"], let section = fields(of: node, path: "access") {
            readAccess(section, into: &config.access)
        }
        if let node = top["policy"], let section = fields(of: node, path: "policy") {
            readPolicy(section, node: node, into: &config.policy)
            let names = config.auth.names
            let asksForCertificates = config.listen.contains { $0.tls?.clientCA != nil }
            for (index, identity) in config.policy.identities.enumerated() {
                if case .user(let user) = identity.match, !names.contains(user) {
                    fail(node, "policy.identities[\(index)].user", "\(quoted(user)) is not one of auth.users, so no client could be it")
                }
                if case .certificateSubject = identity.match, !asksForCertificates {
                    fail(node, "policy.identities[\(index)].client_cert_subject",
                         "no listener asks clients for a certificate: add tls: {cert, key, client_ca} to a listen entry")
                }
            }
        }
        if let node = top["upstream_proxies"], let section = fields(of: node, path: "upstream_proxies") {
            readUpstreamProxies(section, into: &config.upstreamProxies)
        }
        if let node = top["reachability"], let section = fields(of: node, path: "reachability") {
            if let node = section["enabled"] {
                config.reachability.enabled = boolean(node, "reachability.enabled") ?? config.reachability.enabled
            }
            if let node = section["fail_fast"] {
                config.reachability.failFast = boolean(node, "reachability.fail_fast") ?? config.reachability.failFast
            }
        }
        if let node = top["cache"], let section = fields(of: node, path: "cache") {
            readCache(section, into: &config.cache)
        }
        if let node = top["capture"], let section = fields(of: node, path: "capture") {
            readCapture(section, into: &config.capture)
        }
        if let node = top["http2"], let section = fields(of: node, path: "http2") {
            readHTTP2(section, into: &config.http2)
        }
    }

    /// The admin endpoint, metrics and the live view; then whether the proxy or its admin pages are open to others.
    func readAdminSections(_ top: [String: Node], root: Node, into config: inout LookoutConfiguration) {
        if let node = top["admin"], let section = fields(of: node, path: "admin") {
            readAdmin(section, into: &config.admin)
            if let clash = config.admin.listen.first(where: { address in
                address.port != 0 && config.listen.contains { $0.host == address.host && $0.port == address.port }
            }) {
                fail(section["listen"] ?? node, "admin.listen",
                     "\(clash) is also a proxy address (listen); the admin pages are served there already")
            }
        }
        if let node = top["metrics"], let section = fields(of: node, path: "metrics") {
            readMetrics(section, into: &config.metrics)
        }
        if let node = top["ui"], let section = fields(of: node, path: "ui") {
            readUI(section, into: &config.ui)
        }
        if let node = top["pac"], let section = fields(of: node, path: "pac") {
            readPAC(section, into: &config.pac)
        }
        if let problem = config.adminExposureProblem {
            fail(top["admin"] ?? root, "admin.listen", problem)
        }
        applyAdminToken(&config, root: root, top: top)
        if let problem = config.openProxyProblem {
            fail(top["listen"] ?? top["auth"] ?? root, "listen", problem)
        }
    }

    /// Redirect, retry, map and shaping rules.
    func readRules(_ top: [String: Node], into config: inout LookoutConfiguration) {
        if let node = top["redirects"], let section = fields(of: node, path: "redirects"), let rules = section["rules"] {
            config.redirects.rules = redirectRules(rules, path: "redirects.rules") ?? config.redirects.rules
        }
        if let node = top["retry"], let section = fields(of: node, path: "retry"), let rules = section["rules"] {
            config.retry.rules = retryRules(rules, path: "retry.rules") ?? config.retry.rules
        }
        if let node = top["map"], let section = fields(of: node, path: "map") {
            readMap(section, into: &config.map)
        }
        if let node = top["shaping"], let section = fields(of: node, path: "shaping"), let rules = section["rules"] {
            config.shaping.rules = shapingRules(rules, path: "shaping.rules") ?? config.shaping.rules
        }
        if let node = top["breakpoints"], let section = fields(of: node, path: "breakpoints") {
            readBreakpoints(section, into: &config.breakpoints)
        }
        if let node = top["hooks"] { config.hooks = readHooks(node) ?? config.hooks }
        if let node = top["simulate"], let section = fields(of: node, path: "simulate") {
            readSimulate(section, into: &config.simulate)
        }
        if let node = top["messages"], let section = fields(of: node, path: "messages") {
            readMessages(section, into: &config.messages)
        }
        if let node = top["audit"], let section = fields(of: node, path: "audit") {
            readAudit(section, into: &config.audit)
        }
        if let node = top["otel"], let section = fields(of: node, path: "otel") {
            readOTel(section, into: &config.otel)
        }
        if let node = top["grpc"], let section = fields(of: node, path: "grpc"), let sets = section["descriptor_sets"] {
            config.grpcDescriptorSets = readDescriptorSets(sets)
        }
    }
}
