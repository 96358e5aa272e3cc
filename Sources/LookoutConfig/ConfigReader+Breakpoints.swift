import LookoutLogQuery
import LookoutModel
import Yams

/// The `breakpoints` section: its bounds and rules, each filter parsed here so that `lookout config
/// check` names the line and column of a bad one.
extension ConfigReader {
    func readBreakpoints(_ section: [String: Node], into settings: inout BreakpointSettings) {
        if let node = section["max_held"] {
            settings.maxHeld = integer(node, "breakpoints.max_held", in: 1...10_000,
                                       rangeMessage: "must be from 1 to 10000") ?? settings.maxHeld
        }
        if let node = section["max_body_bytes"] {
            settings.maxBodyBytes = integer(node, "breakpoints.max_body_bytes", in: 0...(64 << 20),
                                            rangeMessage: "must be from 0 to 67108864 (64 MiB)") ?? settings.maxBodyBytes
        }
        guard let node = section["rules"], !isNull(node) else { return }
        guard case .sequence(let sequence) = node else {
            fail(node, "breakpoints.rules", "expected a list of breakpoints ({filter, on, timeout, on_timeout}), \(got(node))")
            return
        }
        var rules: [BreakpointRuleSpec] = []
        for (index, element) in sequence.enumerated() {
            let path = "breakpoints.rules[\(index)]"
            guard let entry = fields(of: element, path: path, known: Schema.breakpointRule) else { continue }
            if let rule = breakpointRule(entry, element: element, path: path) { rules.append(rule) }
        }
        settings.rules = rules
    }

    private func breakpointRule(_ entry: [String: Node], element: Node, path: String) -> BreakpointRuleSpec? {
        guard let filterNode = entry["filter"] else {
            fail(element, "\(path).filter", "a breakpoint needs filter (an expression of lookout log's filter language)")
            return nil
        }
        guard let filter = filterExpression(filterNode, path: "\(path).filter", example: "'host:api.example.com and method:POST'")
        else { return nil }
        guard !filter.isEmpty else {
            fail(filterNode, "\(path).filter", "must not be empty (a breakpoint on every exchange is filter: 'id>0')")
            return nil
        }
        var rule = BreakpointRuleSpec(filter: filter)
        if let node = entry["on"] {
            guard let (request, response) = phases(node, path: "\(path).on") else { return nil }
            (rule.onRequest, rule.onResponse) = (request, response)
        }
        if let node = entry["timeout"] {
            guard let timeout = seconds(node, "\(path).timeout") else { return nil }
            guard timeout <= 86_400 else {
                fail(node, "\(path).timeout", "must be at most 86400 (a day)")
                return nil
            }
            rule.timeout = timeout
        }
        if let node = entry["on_timeout"] {
            guard let action: BreakpointRuleSpec.TimeoutAction = continueOrAbort(node, path: "\(path).on_timeout") else {
                return nil
            }
            rule.onTimeout = action
        }
        return rule
    }

    // MARK: - What breakpoints and hooks share

    /// A filter of `lookout log`'s language, parsed so that its error names the column.
    func filterExpression(_ node: Node, path: String, example: String) -> String? {
        guard case .text(let filter, _) = scalarValue(node) else {
            fail(node, path, "expected a filter such as \(example), \(got(node))")
            return nil
        }
        do {
            _ = try LogFilter.parse(filter)
        } catch {
            fail(node, path, error.description)
            return nil
        }
        return filter
    }

    /// `on`: `request`, `response`, or a list of them; whether each is named.
    func phases(_ node: Node, path: String) -> (request: Bool, response: Bool)? {
        let phases: [(String, Node, String)]?
        if case .text(let one, _) = scalarValue(node) { phases = [(one, node, path)] } else {
            phases = stringList(node, path: path, expected: "request or response")
        }
        guard let phases, !phases.isEmpty else {
            if phases != nil { fail(node, path, "name request, response or both") }
            return nil
        }
        for (phase, phaseNode, phasePath) in phases where phase != "request" && phase != "response" {
            fail(phaseNode, phasePath, "expected request or response, got \(quoted(shortened(phase)))")
            return nil
        }
        return (phases.contains { $0.0 == "request" }, phases.contains { $0.0 == "response" })
    }

    /// `on_timeout`, `on_failure`: `continue` or `abort`.
    func continueOrAbort<Action: RawRepresentable<String>>(_ node: Node, path: String) -> Action? {
        guard case .text(let text, _) = scalarValue(node), let action = Action(rawValue: text) else {
            fail(node, path, "expected continue or abort, \(got(node))")
            return nil
        }
        return action
    }
}
