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

    func environment(transparent: Bool = false) throws -> ProxyClientEnvironment {
        let file = loadConfiguration()
        let listen = file.listen.first { $0.mode == .proxy }
        let host = listen.map { $0.host.contains(":") ? "[\($0.host)]" : $0.host } ?? "127.0.0.1"
        let url = proxy ?? "http://\(host == "0.0.0.0" ? "127.0.0.1" : host):\(listen?.port ?? 8080)"
        do {
            return try ProxyClientEnvironment.make(proxy: transparent ? nil : url, noProxy: noProxy,
                                                   stateDirectory: file.stateDirectory)
        } catch {
            FileHandleOutput.standardError("lookout: cannot prepare the CA bundle in \(file.stateDirectory): \(error)\n")
            throw ExitCode(1)
        }
    }
}

extension ClientOptions {
    func loadConfiguration() -> LookoutConfiguration {
        var logger = Logger(label: "lookout")
        logger.logLevel = .warning
        return LoadedConfiguration.load(path: config, logger: logger)
    }

    /// The running Lookout's admin pages: `--proxy`'s address, else the config's admin address
    /// or first proxy listener.
    func adminClient() -> AdminClient {
        let file = loadConfiguration()
        var host = "127.0.0.1", port = 8080
        if let proxy, let url = URL(string: proxy), let urlHost = url.host {
            host = urlHost.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            port = url.port ?? 8080
        } else if let listen = (file.admin.listen + file.listen.filter { $0.mode == .proxy }).first {
            host = listen.host == "0.0.0.0" ? "127.0.0.1" : listen.host == "::" ? "::1" : listen.host
            port = listen.port
        }
        return AdminClient(host: host, port: port, credentials: file.auth.users.first, token: file.admin.token)
    }
}

/// `lookout exec -- CMD ARGS...`: runs a program through Lookout, trusting its CA.
struct ExecCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exec", abstract: "Run a command with the proxy variables set and Lookout's CA trusted.")

    @OptionGroup var options: ClientOptions

    @Flag(name: .long, help: "Run the command in a network namespace where every TCP connection goes through Lookout, proxy settings or not (root; needs ip and nft).")
    var transparent = false

    @Option(name: .long, help: "With --transparent: where the namespace's DNS queries go, HOST:PORT (default: the first nameserver of /etc/resolv.conf).")
    var dns: String?

    @Argument(parsing: .captureForPassthrough, help: "The command and its arguments (after --).")
    var command: [String] = []

    func run() throws {
        let argv = command.first == "--" ? Array(command.dropFirst()) : command
        guard let program = argv.first else {
            FileHandleOutput.standardError("lookout exec: name a command after --, e.g. lookout exec -- curl https://example.com/\n")
            throw ExitCode(2)
        }
        var tools: (ip: String, nft: String)?
        if transparent {
            do { tools = try TransparentExec.tools() } catch {
                FileHandleOutput.standardError("lookout exec: \(error.message)\n")
                throw ExitCode(1)
            }
        }
        let environment = try options.environment(transparent: transparent)
        for note in environment.notes { FileHandleOutput.standardError("lookout exec: \(note)\n") }
        for (name, value) in environment.variables { setenv(name, value, 1) }
        if let tools {
            // A proxy variable would send a program to Lookout's own listener: a loop.
            for name in ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] {
                unsetenv(name)
            }
            do {
                try TransparentExec.enterNamespace(admin: options.adminClient(), dns: dns ?? TransparentExec.systemResolver(),
                                                   tools: tools)
            } catch {
                FileHandleOutput.standardError("lookout exec: \(error.message)\n")
                throw ExitCode(1)
            }
        }
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
