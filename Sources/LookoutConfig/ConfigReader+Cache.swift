import Yams

/// The `cache` section.
extension ConfigReader {
    func readCache(_ section: [String: Node], into cache: inout LookoutConfiguration.Cache) {
        if let node = section["enabled"] { cache.enabled = boolean(node, "cache.enabled") ?? cache.enabled }
        if let node = section["path"] {
            cache.path = directoryOrDefault(node, "cache.path", defaultName: "cache") ?? cache.path
        }
        if let node = section["max_size_bytes"] {
            cache.maxSizeBytes = integer(node, "cache.max_size_bytes", atLeast: 1) ?? cache.maxSizeBytes
        }
        if let node = section["max_object_bytes"] {
            cache.maxObjectBytes = integer(node, "cache.max_object_bytes", atLeast: 1) ?? cache.maxObjectBytes
        }
        if let node = section["memory_bytes"] {
            cache.memoryBytes = integer(node, "cache.memory_bytes", in: 0...Int.max,
                                        rangeMessage: "must not be negative (0 = no memory copies)") ?? cache.memoryBytes
        }
        if cache.maxObjectBytes > cache.maxSizeBytes, let node = section["max_object_bytes"] ?? section["max_size_bytes"] {
            fail(node, section["max_object_bytes"] != nil ? "cache.max_object_bytes" : "cache.max_size_bytes",
                 "cache.max_object_bytes (\(cache.maxObjectBytes)) must not exceed cache.max_size_bytes (\(cache.maxSizeBytes))")
        }
        if let node = section["rules"] {
            let rules = ruleList(node, path: "cache.rules", known: Schema.cacheRule, what: "cache rules") { section, elementPath in
                var rule = CacheRuleSettings()
                if let node = section["store"] { rule.store = boolean(node, "\(elementPath).store") ?? rule.store }
                if let node = section["cdn_cache_control"] {
                    rule.cdnCacheControl = boolean(node, "\(elementPath).cdn_cache_control") ?? rule.cdnCacheControl
                }
                if let node = section["default_ttl"] {
                    rule.defaultTTL = integer(node, "\(elementPath).default_ttl", in: 0...Int(Schema.maximumSeconds),
                                              rangeMessage: "must be between 0 and \(Int(Schema.maximumSeconds)) seconds (0 = heuristics only)")
                        ?? rule.defaultTTL
                }
                return rule
            } hosts: { $0.hosts = $1 }
            cache.rules = rules ?? cache.rules
        }
    }

    /// A directory path, or "" for the default under the state directory.
    func directoryOrDefault(_ node: Node, _ keyPath: String, defaultName: String) -> String? {
        if case .text(let text, _) = scalarValue(node), text.isEmpty { return "" }
        return path(node, keyPath, expected: "a directory path (\"\" for <state_dir>/\(defaultName))")
    }
}
