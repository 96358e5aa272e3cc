import LookoutTLS
import Yams

/// `listen` and `admin.listen`: addresses, and for `listen` the `{address, mode, tls}` mappings.
extension ConfigReader {
    /// `listen`: "host:port" strings, or `{address, mode}` mappings where `modes` allows them
    /// (the admin section's addresses are always plain).
    func listen(_ node: Node, path: String, allowEmpty: Bool = false, modes: Bool = false) -> [ListenAddress]? {
        let expected = modes ? "expected a list of \"host:port\" strings or {address, mode} mappings"
                             : "expected a list of \"host:port\" strings"
        guard case .sequence(let sequence) = node else {
            fail(node, path, "\(expected), \(got(node))")
            return nil
        }
        guard !sequence.isEmpty || allowEmpty else {
            fail(node, path, "\(expected) with at least one address")
            return nil
        }
        var addresses: [ListenAddress] = []
        var firstLine: [String: Int] = [:]
        var ok = true
        for (index, element) in sequence.enumerated() {
            let elementPath = "\(path)[\(index)]"
            guard let address = listenEntry(element, path: elementPath, modes: modes) else {
                ok = false
                continue
            }
            if address.port != 0, let line = firstLine[address.description] {
                fail(element, elementPath, "\(address) is listed twice (first on line \(line))")
                ok = false
                continue
            }
            firstLine[address.description] = element.mark?.line ?? 0
            addresses.append(address)
        }
        return ok ? addresses : nil
    }

    private func listenEntry(_ element: Node, path: String, modes: Bool) -> ListenAddress? {
        var mode = ListenAddress.Mode.proxy
        var tls: ListenAddress.TLS?
        var addressNode = element
        var addressPath = path
        if modes, case .mapping = element {
            guard let section = fields(of: element, path: path, known: Schema.listenEntry) else { return nil }
            guard let node = section["address"] else {
                fail(element, "\(path).address", "a listen mapping needs address (\"host:port\")")
                return nil
            }
            if let modeNode = section["mode"] {
                let names = ListenAddress.Mode.allCases.map(\.rawValue)
                guard case .text(let text, _) = scalarValue(modeNode), let value = ListenAddress.Mode(rawValue: text) else {
                    fail(modeNode, "\(path).mode", "expected \(names.joined(separator: ", ")), \(got(modeNode))")
                    return nil
                }
                mode = value
            }
            if let tlsNode = section["tls"] {
                guard mode == .proxy else {
                    fail(tlsNode, "\(path).tls", "tls is for proxy listeners (mode: proxy), not \(mode.rawValue)")
                    return nil
                }
                guard let settings = listenTLS(tlsNode, path: "\(path).tls") else { return nil }
                tls = settings
            }
            addressNode = node
            addressPath = "\(path).address"
        }
        guard case .text(let text, _) = scalarValue(addressNode) else {
            var message = "expected a \"host:port\" string, \(got(addressNode))"
            if case .sequence = addressNode {
                message += " (write IPv6 addresses in quotes: \"[::1]:8080\")"
            } else if case .mapping = addressNode, !modes {
                message += " (write addresses in quotes: \"[::1]:8080\")"
            }
            fail(addressNode, addressPath, message)
            return nil
        }
        do {
            var address = try ListenAddress(parsing: text)
            address.mode = mode
            address.tls = tls
            return address
        } catch {
            fail(addressNode, addressPath, error.message)
            return nil
        }
    }

    /// A listener's `tls`: its certificate and key (loaded now, so a bad file is a config error)
    /// and the client authorities.
    private func listenTLS(_ node: Node, path: String) -> ListenAddress.TLS? {
        guard let section = fields(of: node, path: path, known: Schema.listenTLS) else { return nil }
        guard let certNode = section["cert"], let certText = self.path(certNode, "\(path).cert", expected: "a PEM certificate file"),
              let keyNode = section["key"], let keyText = self.path(keyNode, "\(path).key", expected: "a PEM private key file"),
              let cert = resolve(certText), let key = resolve(keyText) else {
            if section["cert"] == nil || section["key"] == nil { fail(node, path, "a TLS listener needs cert and key") }
            return nil
        }
        do {
            _ = try ClientIdentity(certificateFile: cert, keyFile: key)
        } catch {
            fail(certNode, "\(path).cert", error.message)
            return nil
        }
        var clientCA: String?
        if let caNode = section["client_ca"], let caText = self.path(caNode, "\(path).client_ca", expected: "a PEM file of CA certificates"),
           let ca = resolve(caText) {
            do {
                guard !(try Certificate.loadAll(pemFile: ca)).isEmpty else {
                    fail(caNode, "\(path).client_ca", "\(ca) holds no certificate")
                    return nil
                }
            } catch {
                fail(caNode, "\(path).client_ca", error.message)
                return nil
            }
            clientCA = ca
        }
        return ListenAddress.TLS(certificate: cert, key: key, clientCA: clientCA)
    }
}
