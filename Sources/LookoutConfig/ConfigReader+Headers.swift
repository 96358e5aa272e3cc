import LookoutTLS
import Yams

/// The `headers.rules` list: each rule's field names and values checked here, so that
/// `lookout config check` names the line of a bad one.
extension ConfigReader {
    func headerRules(_ node: Node, path: String) -> [HeaderRuleSettings]? {
        ruleList(node, path: path, known: Schema.headerRule, what: "header rules") { section, elementPath in
            var rule = HeaderRuleSettings()
            if let node = section["request"] { rule.request = edits(node, path: "\(elementPath).request") }
            if let node = section["response"] { rule.response = edits(node, path: "\(elementPath).response") }
            if section["request"] == nil && section["response"] == nil, let hosts = section["hosts"] {
                fail(hosts, elementPath, "a header rule needs request or response edits")
            }
            return rule
        } hosts: { $0.hosts = $1 }
    }

    private func edits(_ node: Node, path: String) -> HeaderRuleSettings.Edits {
        var edits = HeaderRuleSettings.Edits()
        if isNull(node) { return edits }
        guard let section = fields(of: node, path: path, known: Schema.headerEdits) else { return edits }
        if let node = section["set"] { edits.set = fieldMap(node, path: "\(path).set") }
        if let node = section["add"] { edits.add = fieldMap(node, path: "\(path).add") }
        if let node = section["remove"] { edits.remove = fieldNames(node, path: "\(path).remove") }
        return edits
    }

    /// `{Name: value, …}` in the order written.
    private func fieldMap(_ node: Node, path: String) -> [HeaderRuleSettings.Field] {
        if isNull(node) { return [] }
        guard case .mapping(let mapping) = node else {
            fail(node, path, "expected a mapping of field names to values, \(got(node))")
            return []
        }
        var result: [HeaderRuleSettings.Field] = []
        for (keyNode, valueNode) in mapping {
            guard case .text(let name, _) = scalarValue(keyNode) else {
                fail(keyNode, path, "expected a field name, \(got(keyNode))")
                continue
            }
            guard checkFieldName(name, keyNode, path: path) else { continue }
            let valuePath = "\(path).\(name)"
            guard case .text(let value, _) = scalarValue(valueNode) else {
                fail(valueNode, valuePath, "expected a field value (a string), \(got(valueNode))")
                continue
            }
            if let problem = Self.fieldValueProblem(value) {
                fail(valueNode, valuePath, problem)
                continue
            }
            result.append(.init(name: name, value: value))
        }
        return result
    }

    private func fieldNames(_ node: Node, path: String) -> [String] {
        if isNull(node) { return [] }
        guard case .sequence(let sequence) = node else {
            fail(node, path, "expected a list of field names, \(got(node))")
            return []
        }
        var names: [String] = []
        for (index, element) in sequence.enumerated() {
            guard case .text(let name, _) = scalarValue(element) else {
                fail(element, "\(path)[\(index)]", "expected a field name, \(got(element))")
                continue
            }
            if checkFieldName(name, element, path: "\(path)[\(index)]") { names.append(name) }
        }
        return names
    }

    /// A token (RFC 9110 §5.1) that is not one of the fields Lookout sets per hop.
    private func checkFieldName(_ name: String, _ node: Node, path: String) -> Bool {
        guard !name.isEmpty, name.utf8.allSatisfy(Self.isTokenByte) else {
            fail(node, path, "\"\(name)\" is not a valid field name (RFC 9110 §5.1: letters, digits and !#$%&'*+-.^_`|~)")
            return false
        }
        if HeaderRuleSettings.protectedNames.contains(name.lowercased()) {
            fail(node, path, "\(name) cannot be changed by a header rule: Lookout sets the hop-by-hop, framing and Host fields itself")
            return false
        }
        return true
    }

    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// Why `value` cannot be a field value (RFC 9110 §5.5), or nil: no CR, LF, NUL or other
    /// control characters but tab, and no whitespace at either end.
    static func fieldValueProblem(_ value: String) -> String? {
        for byte in value.utf8 {
            if byte == 0x0D || byte == 0x0A { return "a field value cannot contain CR or LF" }
            if byte == 0 { return "a field value cannot contain NUL" }
            if (byte < 0x20 && byte != 0x09) || byte == 0x7F { return "a field value cannot contain control characters" }
        }
        if let first = value.utf8.first, first == 0x20 || first == 0x09 { return "a field value cannot start with whitespace" }
        if let last = value.utf8.last, last == 0x20 || last == 0x09 { return "a field value cannot end with whitespace" }
        return nil
    }
}
