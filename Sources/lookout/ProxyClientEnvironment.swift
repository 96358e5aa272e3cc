import Foundation
import LookoutTLS

/// What a program needs to go through Lookout and trust its CA: the proxy variables and, per
/// tool family, the variable naming a CA bundle (the system's roots plus Lookout's CA, written
/// under `state_dir/trust/`). `lookout exec` sets them; `lookout env` prints them.
struct ProxyClientEnvironment {
    let variables: [(String, String)]
    /// What could not be set up (Java's trust store without `keytool`), for stderr.
    let notes: [String]

    /// `proxy`: the URL clients send to; `stateDirectory`: where the CA is (made when missing).
    /// `proxy` nil: the CA variables only (a transparent capture, where the proxy variables would
    /// send programs to Lookout's own listener, a loop).
    static func make(proxy: String?, noProxy: String, stateDirectory: String) throws -> ProxyClientEnvironment {
        let authority = try CertificateAuthority.loadOrCreate(directory: stateDirectory)
        let caPath = (stateDirectory as NSString).appendingPathComponent(CertificateAuthority.certificateFileName)
        let folder = (stateDirectory as NSString).appendingPathComponent("trust")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        // The bundle: every system root, then Lookout's CA (tools that replace their roots with the file).
        let bundle = (folder as NSString).appendingPathComponent("ca-bundle.pem")
        var pem = (try? String(contentsOfFile: TrustStore.systemBundlePath, encoding: .utf8)) ?? ""
        if !pem.isEmpty, !pem.hasSuffix("\n") { pem += "\n" }
        pem += authority.certificate.pemString
        try pem.write(toFile: bundle, atomically: true, encoding: .utf8)
        var variables: [(String, String)] = []
        if let proxy {
            for name in ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"] { variables.append((name, proxy)) }
            variables += [("no_proxy", noProxy), ("NO_PROXY", noProxy)]
        }
        variables += [
            ("CURL_CA_BUNDLE", bundle),          // curl
            ("SSL_CERT_FILE", bundle),           // OpenSSL's default verify paths: Python ssl/httpx, Go, Ruby
            ("REQUESTS_CA_BUNDLE", bundle),      // Python requests
            ("PIP_CERT", bundle),                // pip
            ("NODE_EXTRA_CA_CERTS", caPath),     // Node: added to its own roots
            ("NODE_USE_ENV_PROXY", "1"),         // Node 24+: fetch and http honour the proxy variables
            ("GIT_SSL_CAINFO", bundle),          // git
            ("CARGO_HTTP_CAINFO", bundle),       // Cargo
            ("AWS_CA_BUNDLE", bundle),           // the AWS CLI and SDKs
        ]
        var notes: [String] = []
        if let java = try javaOptions(proxy: proxy, noProxy: noProxy, folder: folder, caPath: caPath) {
            variables.append(("JAVA_TOOL_OPTIONS", java))
        } else {
            notes.append("Java: no keytool on PATH, so no trust store was made (JAVA_TOOL_OPTIONS is not set)")
        }
        return ProxyClientEnvironment(variables: variables, notes: notes)
    }

    /// `-D` properties for the JVM: the proxy (Java ignores `http_proxy`) and a PKCS#12 trust store
    /// of the JDK's roots plus Lookout's CA, made with `keytool` once per CA.
    private static func javaOptions(proxy: String?, noProxy: String, folder: String, caPath: String) throws -> String? {
        guard let keytool = executable("keytool") else { return nil }
        let store = (folder as NSString).appendingPathComponent("java-truststore.p12")
        let caDate = (try? FileManager.default.attributesOfItem(atPath: caPath)[.modificationDate] as? Date) ?? Date()
        let storeDate = try? FileManager.default.attributesOfItem(atPath: store)[.modificationDate] as? Date
        if storeDate == nil || storeDate! < caDate {
            try? FileManager.default.removeItem(atPath: store)
            let javaHome = URL(fileURLWithPath: keytool).resolvingSymlinksInPath().deletingLastPathComponent().deletingLastPathComponent()
            let cacerts = javaHome.appendingPathComponent("lib/security/cacerts").path
            if FileManager.default.fileExists(atPath: cacerts) {
                _ = run(keytool, ["-importkeystore", "-noprompt", "-srckeystore", cacerts, "-srcstorepass", "changeit",
                                  "-destkeystore", store, "-deststoretype", "PKCS12", "-deststorepass", "changeit"])
            }
            guard run(keytool, ["-importcert", "-noprompt", "-alias", "lookout", "-file", caPath, "-keystore", store,
                                "-storetype", "PKCS12", "-storepass", "changeit"]) else { return nil }
        }
        var options = ""
        if let proxy {
            let url = URL(string: proxy)
            let host = url?.host ?? "127.0.0.1"
            let port = url?.port ?? 8080
            let nonProxyHosts = noProxy.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: "|")
            options = "-Dhttp.proxyHost=\(host) -Dhttp.proxyPort=\(port) -Dhttps.proxyHost=\(host) -Dhttps.proxyPort=\(port)"
            // Java's own default bypasses loopback; an empty list sends everything through Lookout.
            options += " -Dhttp.nonProxyHosts=\(nonProxyHosts.isEmpty ? "''" : nonProxyHosts) "
        }
        options += "-Djavax.net.ssl.trustStore=\(store) -Djavax.net.ssl.trustStoreType=PKCS12 -Djavax.net.ssl.trustStorePassword=changeit"
        return options
    }

    private static func executable(_ name: String) -> String? {
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(folder)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    private static func run(_ tool: String, _ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    /// The variables as `shell` sets them: `bash` (also sh, zsh), `fish` or `powershell`.
    func script(for shell: String) -> String {
        variables.map { name, value in
            switch shell {
            case "fish": "set -gx \(name) \(Self.singleQuoted(value))"
            case "powershell": "$env:\(name) = \(Self.singleQuoted(value, doubling: true))"
            default: "export \(name)=\(Self.singleQuoted(value))"
            }
        }.joined(separator: "\n") + "\n"
    }

    /// POSIX single quotes (a quote inside as '\''), or PowerShell's (a quote doubled).
    private static func singleQuoted(_ value: String, doubling: Bool = false) -> String {
        "'" + value.replacingOccurrences(of: "'", with: doubling ? "''" : "'\\''") + "'"
    }
}
