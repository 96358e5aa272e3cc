import CLookoutSocket
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `lookout exec --transparent`: the command runs in a network namespace of its own, where every
/// TCP connection is redirected (nftables, in the namespace) to listeners the running Lookout
/// opens inside it, and every DNS query to Lookout's relay. This process makes the namespace,
/// asks Lookout for the listeners, writes the rules, then becomes the command: its exit status,
/// standard streams and signals are the command's. The namespace dies with its last process, so
/// nothing of it is left after the command, whatever becomes of Lookout.
enum TransparentExec {
    struct Failure: Error {
        let message: String
    }

    /// The tools the namespace is set up with, found before anything is changed.
    static func tools() throws(Failure) -> (ip: String, nft: String) {
        guard geteuid() == 0 else {
            throw Failure(message: "--transparent needs root: it makes a network namespace and nftables rules (CAP_SYS_ADMIN, CAP_NET_ADMIN)")
        }
        let ip = executable("ip")
        let nft = executable("nft")
        let missing = [ip == nil ? "ip (Debian: apt install iproute2)" : nil, nft == nil ? "nft (Debian: apt install nftables)" : nil]
            .compactMap { $0 }
        guard missing.isEmpty, let ip, let nft else {
            throw Failure(message: "--transparent needs \(missing.joined(separator: " and ")); nothing was run")
        }
        return (ip, nft)
    }

    /// Moves this thread into a new network namespace, has `admin` open Lookout's listeners in it,
    /// and writes the redirect rules. Afterwards `execvp` from this thread runs the command inside.
    static func enterNamespace(admin: AdminClient, dns: String?, tools: (ip: String, nft: String)) throws(Failure) {
        let home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)
        guard home >= 0 else { throw Failure(message: "cannot open this process's network namespace: \(errorText(errno))") }
        defer { close(home) }
        let error = lookout_unshare_network()
        guard error == 0 else { throw Failure(message: "cannot make a network namespace: \(errorText(error))") }
        // Loopback up, and every destination routed to it: nothing leaves the namespace but
        // through the redirect (a namespace without a route would refuse a connect before the
        // rules see it).
        try run(tools.ip, ["link", "set", "lo", "up"])
        // From the loopback address: the answers of what is redirected then come back through
        // connection tracking's reverse mapping (a stub resolver drops a DNS answer from elsewhere).
        try run(tools.ip, ["route", "add", "default", "dev", "lo", "src", "127.0.0.1"])
        try? run(tools.ip, ["-6", "route", "add", "default", "dev", "lo", "src", "::1"])
        let answer = try askForListeners(admin: admin, dns: dns, home: home)
        var rules = """
        table inet lookout {
          chain output {
            type nat hook output priority -100; policy accept;
            meta nfproto ipv4 meta l4proto tcp redirect to :\(answer.port)

        """
        if let port6 = answer.port6 { rules += "    meta nfproto ipv6 meta l4proto tcp redirect to :\(port6)\n" }
        if let dnsPort = answer.dnsPort { rules += "    meta nfproto ipv4 udp dport 53 redirect to :\(dnsPort)\n" }
        rules += "  }\n}\n"
        try run(tools.nft, ["-f", "-"], input: rules)
    }

    /// The request goes out from Lookout's namespace: a thread of its own enters it, while this
    /// one stays in the new namespace that Lookout reads from /proc/PID/ns/net.
    private static func askForListeners(admin: AdminClient, dns: String?, home: Int32)
        throws(Failure) -> (port: Int, port6: Int?, dnsPort: Int?) {
        var body = "{\"pid\":\(getpid())"
        if let dns { body += ",\"dns\":\"\(dns)\"" }
        body += "}"
        let bytes = Array(body.utf8)
        let result = Locked<Result<(status: Int, body: String), AdminClient.Failure>?>(nil)
        let thread = Thread {
            guard lookout_enter_network(home) == 0 else {
                result.value = .failure(.failed("cannot return to Lookout's network namespace: \(errorText(errno))"))
                return
            }
            do { result.value = .success(try admin.request("POST", "/capture/namespaces", body: bytes)) }
            catch let failure as AdminClient.Failure { result.value = .failure(failure) } catch { result.value = .failure(.failed("\(error)")) }
        }
        thread.start()
        while result.value == nil { usleep(1000) }
        switch result.value! {
        case .failure(.notRunning):
            throw Failure(message: "no Lookout answers at \(admin.host):\(admin.port); start it with lookout run (or name it with --proxy)")
        case .failure(.failed(let message)):
            throw Failure(message: message)
        case .success(let answer):
            guard answer.status == 201,
                  let object = try? JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any],
                  let port = object["port"] as? Int else {
                let reason = (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])?["error"] as? String
                throw Failure(message: "Lookout refused the capture (\(answer.status)): \(reason ?? answer.body)")
            }
            return (port, object["port6"] as? Int, object["dns_port"] as? Int)
        }
    }

    /// The first `nameserver` of /etc/resolv.conf, as HOST:PORT.
    static func systemResolver() -> String? {
        guard let text = try? String(contentsOfFile: "/etc/resolv.conf", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if words.count >= 2, words[0] == "nameserver" {
                let address = String(words[1])
                return address.contains(":") ? "[\(address)]:53" : "\(address):53"
            }
        }
        return nil
    }

    /// Runs `tool` from this thread (so in its namespace), and waits.
    private static func run(_ tool: String, _ arguments: [String], input: String? = nil) throws(Failure) {
        var inputPipe: [Int32] = [-1, -1]
        if input != nil { guard pipe(&inputPipe) == 0 else { throw Failure(message: "pipe: \(errorText(errno))") } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if input != nil {
            posix_spawn_file_actions_adddup2(&actions, inputPipe[0], 0)
            posix_spawn_file_actions_addclose(&actions, inputPipe[1])
        }
        let argv = ([tool] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let error = posix_spawn(&pid, tool, &actions, nil, argv, environ)
        if input != nil { close(inputPipe[0]) }
        guard error == 0 else {
            if input != nil { close(inputPipe[1]) }
            throw Failure(message: "cannot run \(tool): \(errorText(error))")
        }
        if let input {
            _ = Array(input.utf8).withUnsafeBytes { write(inputPipe[1], $0.baseAddress, $0.count) }
            close(inputPipe[1])
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        guard status == 0 else {
            throw Failure(message: "\(([tool] + arguments).joined(separator: " ")) failed (status \(status))")
        }
    }

    private static func executable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/sbin:/usr/bin:/sbin:/bin"
        for folder in path.split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(folder)/\(name)") {
            return "\(folder)/\(name)"
        }
        return nil
    }

    private static func errorText(_ code: Int32) -> String { String(cString: strerror(code)) }
}

/// A value one thread sets and another polls.
private final class Locked<Value>: @unchecked Sendable {  // guarded by `lock`
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
