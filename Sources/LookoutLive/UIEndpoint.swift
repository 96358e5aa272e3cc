#if canImport(Glibc)
import Glibc
import LookoutModel
#endif
import HTTPTypes
import LookoutAdmin
import LookoutHTTP

/// The web UI at `/ui/`: static files shipped with Lookout (no CDN, no build step), read once at
/// start. They are looked for in `LOOKOUT_UI_DIR`, beside the executable (SwiftPM's resource
/// bundle, `make run`), then in `../share/lookout/ui` from it and `/usr/share/lookout/ui` (an
/// installed copy, the Docker image).
public final class UIEndpoint: AdminEndpoint {
    struct File: Sendable {
        let contentType: String
        let body: [UInt8]
    }

    private let files: [String: File]
    /// Where the files were found; nil when they were not.
    public let directory: String?

    /// The file names served, with their types.
    static let contentTypes = [
        "index.html": "text/html; charset=utf-8",
        "app.js": "text/javascript; charset=utf-8",
        "operator.js": "text/javascript; charset=utf-8",
        "messages.js": "text/javascript; charset=utf-8",
        "findings.js": "text/javascript; charset=utf-8",
        "style.css": "text/css; charset=utf-8",
    ]

    public init(directory: String? = UIEndpoint.defaultDirectory()) {
        var files: [String: File] = [:]
        if let directory {
            for (name, type) in Self.contentTypes {
                if let body = Self.read(directory + "/" + name) { files[name] = File(contentType: type, body: body) }
            }
        }
        self.files = files
        self.directory = files.count == Self.contentTypes.count ? directory : nil
    }

    public var statusLine: String? {
        directory == nil ? "ui: GET /ui/ (its files were not found; set LOOKOUT_UI_DIR)" : "ui: GET /ui/ (the web UI)"
    }

    public func answer(_ request: AdminRequest) -> AdminAnswer? {
        let path = request.path
        guard path == "/ui" || path.hasPrefix("/ui/") else { return nil }
        guard request.method == .get || request.method == .head else {
            return Self.text(405, "\(path) answers GET and HEAD only")
        }
        if path == "/ui" {
            // Relative links in the page need the trailing slash (RFC 9110 §15.4.9).
            var answer = Self.text(308, "the UI is at /ui/")
            answer.headerFields[.location] = "/ui/" + (request.query.map { "?" + $0 } ?? "")
            return answer
        }
        guard directory != nil else {
            return Self.text(503, "the UI's files were not found next to the executable or in /usr/share/lookout/ui; set LOOKOUT_UI_DIR")
        }
        let name = path == "/ui/" ? "index.html" : String(path.dropFirst("/ui/".count))
        guard let file = files[name] else { return Self.text(404, "no such file: \(path)") }
        var answer = AdminAnswer(contentType: file.contentType, body: file.body)
        answer.headerFields = Self.securityFields
        return answer
    }

    /// The page may load only its own files and talk only to its own origin; it is never framed.
    static let securityFields: HTTPFields = {
        var fields = HTTPFields()
        fields[HTTPField.Name("Content-Security-Policy")!] =
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
        fields[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        fields[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        return fields
    }()

    // MARK: - Finding the files

    public static func defaultDirectory() -> String? {
        var candidates: [String] = []
        if let named = getenv("LOOKOUT_UI_DIR").map({ String(cString: $0) }), !named.isEmpty { candidates.append(named) }
        if let executable = executableDirectory() {
            candidates.append(executable + "/Lookout_LookoutLive.resources/UI")
            candidates.append(executable + "/../share/lookout/ui")
        }
        candidates.append("/usr/share/lookout/ui")
        return candidates.first { access($0 + "/index.html", R_OK) == 0 }
    }

    private static func executableDirectory() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let path = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = path.lastIndex(of: "/") else { return nil }
        return String(path[..<slash])
    }

    private static func read(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            bytes += chunk[..<n]
        }
        return bytes
    }

    private static func text(_ status: Int, _ message: String) -> AdminAnswer {
        AdminAnswer(status: status, contentType: "text/plain; charset=utf-8", body: Array((message + "\n").utf8))
    }
}
