import LookoutLogQuery
import LookoutModel
import Yams

/// The `hooks` list: each hook's transport, filter, bounds and failure policy, checked here so that
/// `lookout config check` names the line of a bad one.
extension ConfigReader {
    func readHooks(_ node: Node) -> [HookSettings]? {
        if isNull(node) { return [] }
        guard case .sequence(let sequence) = node else {
            fail(node, "hooks", "expected a list of hooks ({name, command | url, …}), \(got(node))")
            return nil
        }
        var hooks: [HookSettings] = []
        var names: Set<String> = []
        let errorsBefore = errors.count
        for (index, element) in sequence.enumerated() {
            let path = "hooks[\(index)]"
            guard let entry = fields(of: element, path: path, known: Schema.hook),
                  let hook = hook(entry, element: element, path: path) else { continue }
            guard names.insert(hook.name).inserted else {
                fail(entry["name"] ?? element, "\(path).name", "another hook is named \(quoted(hook.name))")
                continue
            }
            hooks.append(hook)
        }
        return errors.count == errorsBefore ? hooks : nil
    }

    private func hook(_ entry: [String: Node], element: Node, path: String) -> HookSettings? {
        guard let nameNode = entry["name"], case .text(let name, _) = scalarValue(nameNode), !name.isEmpty else {
            fail(entry["name"] ?? element, "\(path).name", "a hook needs a name (records and errors use it)")
            return nil
        }
        guard let transport = hookTransport(entry, element: element, path: path) else { return nil }
        var hook = HookSettings(name: name, transport: transport)
        if let node = entry["filter"] {
            guard let filter = filterExpression(node, path: "\(path).filter", example: "'host:**.internal.example'") else {
                return nil
            }
            hook.filter = filter
        }
        if let node = entry["on"] {
            guard let (request, response) = phases(node, path: "\(path).on") else { return nil }
            (hook.onRequest, hook.onResponse) = (request, response)
        }
        if let node = entry["timeout_ms"] {
            hook.timeoutMilliseconds = integer(node, "\(path).timeout_ms", in: 1...600_000,
                                               rangeMessage: "must be from 1 to 600000 (ten minutes)") ?? hook.timeoutMilliseconds
        }
        if let node = entry["max_body_bytes"] {
            hook.maxBodyBytes = integer(node, "\(path).max_body_bytes", in: 0...(64 << 20),
                                        rangeMessage: "must be from 0 to 67108864 (64 MiB)") ?? hook.maxBodyBytes
        }
        if let node = entry["concurrency"] {
            hook.concurrency = integer(node, "\(path).concurrency", in: 1...256, rangeMessage: "must be from 1 to 256")
                ?? hook.concurrency
        }
        if let node = entry["queue_limit"] {
            hook.queueLimit = integer(node, "\(path).queue_limit", in: 0...100_000, rangeMessage: "must be from 0 to 100000")
                ?? hook.queueLimit
        }
        if let node = entry["on_failure"] {
            guard let action: HookSettings.FailureAction = continueOrAbort(node, path: "\(path).on_failure") else {
                return nil
            }
            hook.onFailure = action
        }
        return hook
    }

    private func hookTransport(_ entry: [String: Node], element: Node, path: String) -> HookSettings.Transport? {
        switch (entry["command"], entry["url"]) {
        case (let command?, nil):
            guard let words = stringList(command, path: "\(path).command", expected: "the program and its arguments"),
                  !words.isEmpty else {
                if case .sequence = command { fail(command, "\(path).command", "name at least the program to run") }
                return nil
            }
            return .command(words.map(\.0), workingDirectory: resolve(".") ?? ".")
        case (nil, let url?):
            guard case .text(let text, _) = scalarValue(url), text.hasPrefix("http://"), text.count > 7 else {
                fail(url, "\(path).url", "expected an http:// URL such as http://127.0.0.1:9000/hook, \(got(url))")
                return nil
            }
            return .url(text)
        case (.some, .some):
            fail(element, "\(path).command", "a hook has command or url, not both")
            return nil
        case (nil, nil):
            fail(element, "\(path).command", "a hook needs command (a program to keep running) or url (an HTTP endpoint)")
            return nil
        }
    }
}
