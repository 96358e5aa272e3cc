import LookoutTLS
import Yams

/// The `upstream_proxies` section: per-host rules and a default, each URL checked with its line.
extension ConfigReader {
    func readUpstreamProxies(_ section: [String: Node], into proxies: inout LookoutConfiguration.UpstreamProxies) {
        if let node = section["rules"] {
            let rules = ruleList(node, path: "upstream_proxies.rules", known: Schema.upstreamProxyRule,
                                 what: "parent proxy rules") { section, elementPath in
                var rule = UpstreamProxyRuleSettings()
                if let node = section["proxy"] {
                    rule.proxy = parentProxy(node, path: "\(elementPath).proxy") ?? .direct
                } else if let hosts = section["hosts"] {
                    fail(hosts, elementPath, "a parent proxy rule needs proxy (a URL or \"direct\")")
                }
                return rule
            } hosts: { $0.hosts = $1 }
            proxies.rules = rules ?? proxies.rules
        }
        if let node = section["default"] {
            proxies.defaultProxy = parentProxy(node, path: "upstream_proxies.default") ?? proxies.defaultProxy
        }
    }

    private func parentProxy(_ node: Node, path: String) -> ParentProxySetting? {
        guard case .text(let text, _) = scalarValue(node) else {
            fail(node, path, "expected \"direct\" or an http:// URL, \(got(node))")
            return nil
        }
        switch ParentProxySetting.parse(text) {
        case .success(let setting): return setting
        case .failure(let error):
            fail(node, path, error.message)
            return nil
        }
    }
}
