import CLookoutSSL

/// The leaf's own rules, name constraints, and wildcard names.
extension WebPKIProfile {
    /// BR §7.1.2.7: an end-entity certificate for TLS servers.
    static func checkLeaf(_ leaf: Certificate, _ extensions: [CertificateExtension]) throws(Violation) {
        let flags = leaf.extensionFlags
        if flags.flags & UInt32(EXFLAG_CA) != 0 {
            throw Violation("the leaf is a CA certificate (basicConstraints cA: BR §7.1.2.7.8)")
        }
        if flags.flags & UInt32(EXFLAG_KUSAGE) != 0, flags.keyUsage & UInt32(KU_KEY_CERT_SIGN) != 0 {
            throw Violation("the leaf may sign certificates (keyUsage keyCertSign: BR §7.1.2.7.11)")
        }
        guard let eku = extensions.first(where: { $0.nid == NID_ext_key_usage }) else {
            throw Violation("the leaf has no extendedKeyUsage (BR §7.1.2.7.10 requires id-kp-serverAuth)")
        }
        if eku.isCritical { throw Violation("the leaf's extendedKeyUsage is critical (BR §7.1.2.7.10)") }
        var reader = DERReader(eku.value)
        guard let list = reader.next(), list.tag == DERTag.sequence, let purposes = list.elements
        else { throw Violation("a malformed extendedKeyUsage") }
        let values = purposes.map { Array($0.content) }
        if values.contains(anyExtendedKeyUsage) { throw Violation("the leaf's extendedKeyUsage has anyExtendedKeyUsage (BR §7.1.2.7.10)") }
        if !values.contains(serverAuth) { throw Violation("the leaf's extendedKeyUsage lacks id-kp-serverAuth") }
        try RFC5280Profile.checkLeaf(leaf, extensions)
        try checkSubjectAltName(leaf, extensions)
    }

    /// BR §7.1.2.7.12, §7.1.4.3 beyond RFC 5280's rules for the names: subjectAltName is not
    /// critical beside a subject; a commonName is a character-for-character copy of one of them.
    static func checkSubjectAltName(_ leaf: Certificate, _ extensions: [CertificateExtension]) throws(Violation) {
        if let san = extensions.first(where: { $0.nid == NID_subject_alt_name }), san.isCritical, !leaf.hasEmptySubject {
            throw Violation("subjectAltName is critical although the subject is not empty (BR §7.1.2.7.12)")
        }
        let names = leaf.subjectAlternativeNames
        let commonNames = leaf.subjectCommonNames
        if commonNames.count > 1 { throw Violation("the leaf's subject has \(commonNames.count) commonNames (BR §7.1.4.3: one)") }
        let written = names.map { name in
            switch name {
            case .dnsName(let text), .ipAddress(let text): return text
            }
        }
        // A descriptive commonName ("Build server") names no host and is left alone.
        if let commonName = commonNames.first, looksLikeHostOrAddress(commonName), !written.contains(commonName) {
            throw Violation("the leaf's commonName \"\(commonName)\" is not one of its subjectAltNames as written (BR §7.1.4.3)")
        }
    }

    /// Whether a commonName reads as a DNS name or an IP address (dots or colons between
    /// letters, digits and hyphens, or a hexadecimal address such as 0xC0A80101), as a host name
    /// in the subject did before subjectAltName.
    static func looksLikeHostOrAddress(_ text: String) -> Bool {
        (text.contains(".") || text.contains(":") || text.lowercased().hasPrefix("0x")) && text.unicodeScalars.allSatisfy { scalar in
            scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "-.:*".unicodeScalars.contains(scalar)
        }
    }

    /// LDH labels (RFC 1034 §3.5, RFC 5890), a wildcard only as the whole leftmost label.
    static func isValidPresentedName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 253 else { return false }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        for (index, label) in labels.enumerated() {
            if index == 0 && label == "*" && labels.count > 1 { continue }
            guard !label.isEmpty, label.utf8.count <= 63, label.first != "-", label.last != "-",
                  label.utf8.allSatisfy({ ($0 | 0x20) >= 0x61 && ($0 | 0x20) <= 0x7A || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D })
            else { return false }
        }
        return true
    }

    /// The dNSName subtrees a CA excludes, after checking the extension's form: critical when
    /// `requireCritical` (RFC 5280 §4.2.1.10; BR §7.1.2.5.2 lets the Web PKI mark it either way), at
    /// least one non-empty subtree list, and valid DNS names.
    static func nameConstraints(_ extensions: [CertificateExtension], depth: Int,
                                requireCritical: Bool) throws(Violation) -> [String] {
        guard let constraints = extensions.first(where: { $0.nid == NID_name_constraints }) else { return [] }
        let at = "certificate \(depth)'s nameConstraints"
        if requireCritical, !constraints.isCritical { throw Violation("\(at) are not critical (RFC 5280 §4.2.1.10)") }
        var reader = DERReader(constraints.value)
        guard let sequence = reader.next(), sequence.tag == DERTag.sequence, let subtrees = sequence.elements else { throw Violation("\(at) are malformed") }
        if subtrees.isEmpty { throw Violation("\(at) have neither permitted nor excluded subtrees (RFC 5280 §4.2.1.10)") }
        var excluded: [String] = []
        for list in subtrees {
            guard let all = list.elements, !all.isEmpty else { throw Violation("\(at) have an empty subtree list (RFC 5280 §4.2.1.10)") }
            for entry in all {
                var parts = entry.children
                guard let base = parts.next() else { throw Violation("\(at) are malformed") }
                guard base.tag == DERTag.context(2, constructed: false) else { continue }  // dNSName
                let name = String(decoding: base.content, as: UTF8.self)
                if name.hasPrefix(".") || (!name.isEmpty && !isValidPresentedName(name)) || name.contains("*") {
                    throw Violation("\(at) name \"\(name)\", which is not a valid DNS name (RFC 5280 §4.2.1.10)")
                }
                if list.tag == DERTag.context(1, constructed: true) { excluded.append(name.lowercased()) }
            }
        }
        return excluded
    }

    /// A wildcard covers one label (RFC 9525 §6.3); it names nothing over a public suffix
    /// (BR §3.2.2.6), and nothing a CA on the path excludes.
    static func checkWildcards(_ leaf: Certificate, host: String, excludedDNS: [String]) throws(Violation) {
        let normalized = HostName.normalize(host).lowercased()
        guard !HostName.isIPAddress(normalized) else { return }
        var named = false
        for case .dnsName(let presented) in leaf.subjectAlternativeNames {
            let name = presented.lowercased()
            guard name.hasPrefix("*.") else {
                if name == normalized { named = true }
                continue
            }
            let base = String(name.dropFirst(2))
            for excluded in excludedDNS where excluded.hasSuffix("." + base) && !excluded.dropLast(base.count + 1).contains(".") {
                throw Violation("the wildcard \"\(presented)\" covers \(excluded), which a CA on the path excludes (RFC 5280 §4.2.1.10)")
            }
            if normalized.hasSuffix("." + base), !normalized.dropLast(base.count + 1).contains("."),
               !PublicSuffixList.system.isPublicSuffix(base) {
                named = true
            }
        }
        if !named {
            throw Violation("no subjectAltName names \(host) (a wildcard over a public suffix names nothing)", reason: .hostnameMismatch)
        }
    }
}
