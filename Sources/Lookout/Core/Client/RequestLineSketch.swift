import LookoutModel
import LookoutUpstream
/// The method, target and version of a request line that belongs to a head which failed to parse,
/// so the log can still say what was asked. Best effort: nil unless the line is well formed and
/// complete within the same read.
struct RequestLineSketch {
    let method: String
    let target: String
    let version: String

    /// Longest target kept; longer ones are the reason for the rejection and are cut.
    private static let maxTarget = 2048

    init?(_ bytes: UnsafeRawBufferPointer) {
        guard let end = bytes.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        var line = bytes[..<end]
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        let parts = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy({ (0x21...0x7e).contains($0) }),
              !parts[1].isEmpty, parts[2].starts(with: Array("HTTP/".utf8)) else { return nil }
        method = String(decoding: parts[0], as: UTF8.self)
        target = String(decoding: parts[1].prefix(RequestLineSketch.maxTarget), as: UTF8.self)
        version = String(decoding: parts[2].prefix(16), as: UTF8.self)
    }
}
