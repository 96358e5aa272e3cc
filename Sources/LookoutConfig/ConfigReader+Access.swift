import LookoutIO
import LookoutTLS
import Yams

/// The `access` section: address ranges, host patterns and methods, each checked with its line.
extension ConfigReader {
    func readAccess(_ section: [String: Node], into access: inout LookoutConfiguration.Access) {
        if let node = section["clients"] { access.clients = networks(node, path: "access.clients") ?? access.clients }
        if let node = section["allow_hosts"] {
            access.allowHosts = hostPatterns(node, path: "access.allow_hosts", allowEmpty: true) ?? access.allowHosts
        }
        if let node = section["deny_hosts"] {
            access.denyHosts = hostPatterns(node, path: "access.deny_hosts", allowEmpty: true) ?? access.denyHosts
        }
        if let node = section["deny_networks"] {
            access.denyNetworks = networks(node, path: "access.deny_networks") ?? access.denyNetworks
        }
        if let node = section["methods"] {
            if isNull(node) {
                access.methods = []
            } else if let methods = methodList(node, path: "access.methods") {
                access.methods = methods
            }
        }
    }

    /// CIDRs ("10.0.0.0/8", "::1/128", a lone address) and the names loopback, private,
    /// link-local and multicast.
    func networks(_ node: Node, path: String) -> [IPNetwork]? {
        if isNull(node) { return [] }
        guard let texts = stringList(node, path: path, expected: "address ranges (CIDRs or \(IPNetwork.names.joined(separator: ", ")))") else {
            return nil
        }
        var result: [IPNetwork] = []
        var ok = true
        for (text, element, elementPath) in texts {
            guard let networks = IPNetwork.parseList(entry: text) else {
                fail(element, elementPath, "\"\(text)\" is not an address range: write a CIDR such as 10.0.0.0/8 or fd00::/8 "
                     + "(host bits zero), an address, or one of \(IPNetwork.names.joined(separator: ", "))")
                ok = false
                continue
            }
            result += networks
        }
        return ok ? result : nil
    }
}
