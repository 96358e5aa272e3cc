import ArgumentParser
import Foundation

/// `lookout held`, `resume`, `abort`, `answer`, `resend` and `breakpoint`: the operator's loop from
/// a shell, through the running proxy's admin endpoint (the same pages the web UI uses).
struct HeldCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "held", abstract: "List the exchanges breakpoints hold now.")
    @OptionGroup var target: RunningProxyOptions
    @Flag(name: .long, help: "Print the admin endpoint's JSON as it is.")
    var json = false

    func run() throws {
        let body = try OperatorCall(target).perform("GET", "/exchanges?state=held", expect: [200])
        if json {
            print(body)
            return
        }
        let list = (OperatorCall.object(body)?["exchanges"] as? [[String: Any]]) ?? []
        if list.isEmpty { print("nothing is held") }
        for held in list {
            let request = held["request"] as? [String: Any] ?? [:]
            let status = (held["response"] as? [String: Any])?["status"].map { " → \($0)" } ?? ""
            let seconds = ((held["held_ms"] as? Int) ?? 0) / 1000
            print("\(held["id"] ?? "?")\t\(held["phase"] ?? "?")\t\(request["method"] ?? "?") \(request["url"] ?? "?")\(status)"
                + "\theld \(seconds) s\tbreakpoint \(held["rule"] ?? "?")")
        }
    }
}

/// Edits given on the command line, as the JSON the admin endpoint takes.
struct EditOptions: ParsableArguments {
    @Option(name: .long, help: "Set a header field, NAME:VALUE (repeatable).")
    var setHeader: [String] = []
    @Option(name: .long, help: "Remove a header field (repeatable).")
    var removeHeader: [String] = []
    @Option(name: .long, help: "Replace the body with this file's bytes.")
    var bodyFile: String?
    @Option(name: .long, help: "Replace the body with this text.")
    var body: String?
    @Option(name: .long, help: "Another method (a request only).")
    var method: String?
    @Option(name: .long, help: "Another absolute URL (a request only).")
    var url: String?

    func json(status: Int? = nil) throws -> [String: Any] {
        var object: [String: Any] = [:]
        if let method { object["method"] = method }
        if let url { object["url"] = url }
        if let status { object["status"] = status }
        var set: [[String]] = []
        for field in setHeader {
            guard let colon = field.firstIndex(of: ":") else {
                FileHandleOutput.standardError("--set-header wants NAME:VALUE, got \(field)\n")
                throw ExitCode(64)
            }
            set.append([String(field[..<colon]), String(field[field.index(after: colon)...]).trimmingCharacters(in: .whitespaces)])
        }
        if !set.isEmpty || !removeHeader.isEmpty { object["headers"] = ["set": set, "remove": removeHeader] }
        if body != nil && bodyFile != nil {
            FileHandleOutput.standardError("give --body or --body-file, not both\n")
            throw ExitCode(64)
        }
        if let body { object["body"] = body }
        if let bodyFile {
            guard let data = FileManager.default.contents(atPath: bodyFile) else {
                FileHandleOutput.standardError("cannot read \(bodyFile)\n")
                throw ExitCode(66)
            }
            object["body_base64"] = data.base64EncodedString()
        }
        return object
    }
}

struct ResumeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "resume", abstract: "Let a held exchange go on, with edits.")
    @OptionGroup var target: RunningProxyOptions
    @Argument(help: "The held exchange's id (lookout held).") var id: UInt64
    @OptionGroup var edits: EditOptions
    @Option(name: .long, help: "Another status (at a response breakpoint).") var status: Int?

    func run() throws {
        let body = try OperatorCall.encode(edits.json(status: status))
        print(try OperatorCall(target).perform("POST", "/exchanges/\(id)/resume", body: body, expect: [200]))
    }
}

struct AbortCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "abort",
                                                    abstract: "End a held exchange: its client gets 502 aborted_by_operator.")
    @OptionGroup var target: RunningProxyOptions
    @Argument(help: "The held exchange's id (lookout held).") var id: UInt64

    func run() throws {
        print(try OperatorCall(target).perform("POST", "/exchanges/\(id)/abort", expect: [200]))
    }
}

struct AnswerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "answer",
                                                    abstract: "Answer a held exchange without (or instead of) its upstream.")
    @OptionGroup var target: RunningProxyOptions
    @Argument(help: "The held exchange's id (lookout held).") var id: UInt64
    @Option(name: .long, help: "The status.") var status: Int = 200
    @Option(name: .long, help: "A header field, NAME:VALUE (repeatable).") var header: [String] = []
    @Option(name: .long, help: "The body's text.") var body: String?
    @Option(name: .long, help: "The body from this file.") var bodyFile: String?

    func run() throws {
        var object = try EditOptions.parse(header.flatMap { ["--set-header", $0] }
            + (body.map { ["--body", $0] } ?? []) + (bodyFile.map { ["--body-file", $0] } ?? [])).json()
        object["status"] = status
        if let headers = object.removeValue(forKey: "headers") as? [String: Any] { object["headers"] = headers["set"] }
        print(try OperatorCall(target).perform("POST", "/exchanges/\(id)/answer", body: OperatorCall.encode(object),
                                               expect: [200]))
    }
}

struct ResendCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resend", abstract: "Send a finished exchange's request again (with edits) as a new exchange.")
    @OptionGroup var target: RunningProxyOptions
    @Argument(help: "The finished exchange's id (lookout log, the UI).") var id: UInt64
    @OptionGroup var edits: EditOptions

    func run() throws {
        let answer = try OperatorCall(target).perform("POST", "/exchanges/\(id)/resend", body: OperatorCall.encode(edits.json()),
                                                      expect: [202])
        print(answer)
    }
}

struct BreakpointCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "breakpoint", abstract: "List, add and remove a running proxy's breakpoints.",
        subcommands: [List.self, Add.self, Remove.self], defaultSubcommand: List.self)

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "The breakpoints, with their numbers.")
        @OptionGroup var target: RunningProxyOptions
        func run() throws { print(try OperatorCall(target).perform("GET", "/breakpoints", expect: [200])) }
    }

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "add", abstract: "Pause exchanges a filter matches.")
        @OptionGroup var target: RunningProxyOptions
        @Argument(help: "A filter, e.g. 'host:api.example.com and method:POST'.") var filter: String
        @Option(name: .long, help: "request, response, or request,response.") var on: String = "request"
        @Option(name: .long, help: "Seconds held before on-timeout applies.") var timeout: Double = 300
        @Option(name: .long, help: "continue or abort.") var onTimeout: String = "continue"

        func run() throws {
            let rule: [String: Any] = ["filter": filter, "on": on.split(separator: ",").map(String.init),
                                       "timeout": timeout, "on_timeout": onTimeout]
            print(try OperatorCall(target).perform("POST", "/breakpoints", body: OperatorCall.encode(rule), expect: [201]))
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove breakpoint N.")
        @OptionGroup var target: RunningProxyOptions
        @Argument(help: "The breakpoint's number (lookout breakpoint list).") var number: Int
        func run() throws { print(try OperatorCall(target).perform("DELETE", "/breakpoints/\(number)", expect: [200])) }
    }
}

/// One call to the admin endpoint; an unexpected status prints the endpoint's message and exits 1.
struct OperatorCall {
    let client: AdminClient

    init(_ options: RunningProxyOptions) throws {
        client = try options.client()
    }

    func perform(_ method: String, _ path: String, body: [UInt8] = [], expect: Set<Int>) throws -> String {
        let answer: (status: Int, body: String)
        do {
            answer = try client.request(method, path, body: body)
        } catch AdminClient.Failure.notRunning {
            FileHandleOutput.standardError("nothing listens at \(client.host):\(client.port): is Lookout running?\n")
            throw ExitCode(69)
        } catch AdminClient.Failure.failed(let message) {
            FileHandleOutput.standardError("\(message)\n")
            throw ExitCode(1)
        }
        let text = answer.body.trimmingCharacters(in: .whitespacesAndNewlines)
        guard expect.contains(answer.status) else {
            let message = (Self.object(text)?["error"] as? String) ?? text
            FileHandleOutput.standardError("lookout answered \(answer.status): \(message)\n")
            throw ExitCode(1)
        }
        return text
    }

    static func object(_ text: String) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
    }

    static func encode(_ object: [String: Any]) throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: object))
    }
}
