import LookoutLogQuery
import LookoutModel

/// The session's hooks, in the order they run, each with its parsed filter and its transport.
/// Built with the configuration; a command hook's program starts with it and stops when a reload
/// has replaced it and nothing that started under it runs any more, or with the session.
package final class Hooks: Sendable {
    package struct Hook: Sendable {
        package let settings: HookSettings
        /// Nil matches every exchange.
        let filter: LogFilter?
        package let transport: any HookTransport
    }

    struct SetupError: Error, CustomStringConvertible {
        let description: String
    }

    let all: [Hook]

    /// `restarted` hears when a command hook's program is started again (for `hook.didRestart`).
    init(settings: [HookSettings],
         restarted: @escaping @Sendable (_ hook: String, _ reason: String, _ backoff: Double) -> Void) throws(SetupError) {
        var hooks: [Hook] = []
        for hook in settings {
            var filter: LogFilter?
            if !hook.filter.isEmpty {
                do { filter = try LogFilter.parse(hook.filter) } catch {
                    throw SetupError(description: "hooks: \(hook.name): filter: \(error.description)")
                }
            }
            let transport: any HookTransport
            switch hook.transport {
            case .command(let arguments, let directory):
                guard !arguments.isEmpty else { throw SetupError(description: "hooks: \(hook.name): command: name a program") }
                let name = hook.name
                transport = CommandHook(settings: hook, arguments: arguments, directory: directory) { reason, backoff in
                    restarted(name, reason, backoff)
                }
            case .url(let url):
                guard let http = HTTPHook(settings: hook, url: url) else {
                    throw SetupError(description: "hooks: \(hook.name): url: \(url) is not an http://host[:port]/path URL")
                }
                transport = http
            }
            hooks.append(Hook(settings: hook, filter: filter, transport: transport))
        }
        all = hooks
    }

    package var isEmpty: Bool { all.isEmpty }

    /// The hooks that see this exchange at this phase, in order.
    package func matching<Subject: FilterSubject>(_ subject: Subject, request: Bool) -> [Hook] {
        all.filter { hook in
            (request ? hook.settings.onRequest : hook.settings.onResponse) && (hook.filter?.matches(subject) ?? true)
        }
    }

    func stop() {
        for hook in all { hook.transport.stop() }
    }

    /// A reload replaced these hooks, and the last exchange that ran under them is over: their
    /// programs stop.
    deinit { stop() }
}
