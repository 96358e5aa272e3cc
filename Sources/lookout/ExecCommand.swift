import ArgumentParser
import Foundation
import Logging
import LookoutConfig
#if canImport(Glibc)
import Glibc
#endif

/// Where the client variables point: `--proxy`, else the config's first listen address.
struct ClientOptions: ParsableArguments {
    @Option(name: .long, help: "The proxy URL to send programs to (default: http:// and the config's first listen address).")
    var proxy: String?

    @Option(name: .customLong("no-proxy"), help: "Hosts that go around the proxy (no_proxy); default none.")
    var noProxy: String = ""

    @Option(name: .long, help: "Config file for state_dir and listen (default: the one `lookout run` uses).")
    var config: String?

    func environment() throws -> ProxyClientEnvironment {
        var logger = Logger(label: "lookout")
        logger.logLevel = .warning
        let file = LoadedConfiguration.load(path: config, logger: logger)
        let listen = file.listen.first
        let host = listen.map { $0.host.contains(":") ? "[\($0.host)]" : $0.host } ?? "127.0.0.1"
        let url = proxy ?? "http://\(host == "0.0.0.0" ? "127.0.0.1" : host):\(listen?.port ?? 8080)"
        do {
            return try ProxyClientEnvironment.make(proxy: url, noProxy: noProxy, stateDirectory: file.stateDirectory)
        } catch {
            FileHandleOutput.standardError("lookout: cannot prepare the CA bundle in \(file.stateDirectory): \(error)\n")
            throw ExitCode(1)
        }
    }
}

/// `lookout exec -- CMD ARGS...`: runs a program through Lookout, trusting its CA.
struct ExecCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exec", abstract: "Run a command with the proxy variables set and Lookout's CA trusted.")

    @OptionGroup var options: ClientOptions

    @Argument(parsing: .captureForPassthrough, help: "The command and its arguments (after --).")
    var command: [String] = []

    func run() throws {
        let argv = command.first == "--" ? Array(command.dropFirst()) : command
        guard let program = argv.first else {
            FileHandleOutput.standardError("lookout exec: name a command after --, e.g. lookout exec -- curl https://example.com/\n")
            throw ExitCode(2)
        }
        let environment = try options.environment()
        for note in environment.notes { FileHandleOutput.standardError("lookout exec: \(note)\n") }
        for (name, value) in environment.variables { setenv(name, value, 1) }
        // The command takes this process's place: its exit status is the caller's.
        var cArguments = argv.map { strdup($0) } + [nil]
        execvp(program, &cArguments)
        FileHandleOutput.standardError("lookout exec: cannot run \(program): \(String(cString: strerror(errno)))\n")
        throw ExitCode(127)
    }
}

/// `lookout env`: the same variables, printed for `eval`.
struct EnvCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "env", abstract: "Print the proxy and CA variables for a shell to eval.")

    @OptionGroup var options: ClientOptions

    @Option(name: .long, help: "bash (also sh and zsh), fish or powershell.")
    var shell: String = "bash"

    func validate() throws {
        guard ["bash", "sh", "zsh", "fish", "powershell"].contains(shell) else {
            throw ValidationError("--shell must be bash, fish or powershell, got \(shell)")
        }
    }

    func run() throws {
        let environment = try options.environment()
        for note in environment.notes { FileHandleOutput.standardError("lookout env: \(note)\n") }
        print(environment.script(for: shell), terminator: "")
    }
}
