import ArgumentParser
import Foundation
import LookoutConfig

/// How a command finds a running Lookout: the config file it runs with, or an explicit address.
struct RunningProxyOptions: ParsableArguments {
    @Option(name: .long, help: "The config file (default: the one `lookout run` would use).")
    var config: String?

    @Option(name: .long, help: "The running proxy's address, HOST:PORT (default: the config's admin.listen, else its first listen address).")
    var proxy: String?

    /// The configuration, and a client for the admin endpoint when an address is known.
    func resolve() throws -> (LookoutConfiguration, AdminClient?) {
        let path = config ?? ConfigurationLoader.defaultConfigurationPath()
        let configuration: LookoutConfiguration
        do {
            if let path {
                configuration = try ConfigurationLoader.load(contentsOf: path)
            } else {
                configuration = LookoutConfiguration()
            }
        } catch {
            FileHandleOutput.standardError("\(error.description)\n")
            throw ExitCode(78)
        }
        var host: String?, port: Int?
        if let proxy {
            guard let colon = proxy.lastIndex(of: ":"), let number = Int(proxy[proxy.index(after: colon)...]) else {
                FileHandleOutput.standardError("--proxy wants HOST:PORT, got \(proxy)\n")
                throw ExitCode(64)
            }
            host = String(proxy[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            port = number
        } else if let listen = (configuration.admin.listen + configuration.listen).first, listen.port != 0 {
            // The admin-only address when there is one, else the first proxy address.
            // A wildcard listener answers on loopback too.
            host = listen.host == "0.0.0.0" ? "127.0.0.1" : listen.host == "::" ? "::1" : listen.host
            port = listen.port
        }
        guard let host, let port else { return (configuration, nil) }
        let client = AdminClient(host: host, port: port, credentials: configuration.auth.users.first,
                                 token: configuration.admin.token)
        return (configuration, client)
    }

    /// A client for a proxy that must be running (these commands have nothing to do offline).
    func client() throws -> AdminClient {
        guard let client = try resolve().1 else {
            FileHandleOutput.standardError("no address to ask: give --proxy HOST:PORT or a config with listen\n")
            throw ExitCode(64)
        }
        return client
    }
}
