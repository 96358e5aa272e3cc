#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LookoutHTTP

/// `<id>.messages.jsonl`: one line per message as it passed — who sent it, when, its kind and
/// size, and its payload (text as text, the rest base64) as far as it was decoded. A failed write
/// stops the file and says why; the traffic never waits for it.
public final class MessageCaptureFile: @unchecked Sendable {  // confined to the connection's loop queue
    public let path: String
    private var fd: Int32
    private let maxBytes: Int64
    public private(set) var written: Int64 = 0
    public private(set) var truncated = false
    public private(set) var error: String?

    /// `fd` open for writing; at most `maxBytes` written (the capture rule's `max_body_bytes`).
    public init(fd: Int32, path: String, maxBytes: Int64) {
        self.fd = fd
        self.path = path
        self.maxBytes = maxBytes
    }

    /// One line. `kind`: the opcode (WebSocket) or `event`/`message`; `extra`: more members, their
    /// values as JSON text.
    public func write(from: String, milliseconds: Double, kind: String, bytes: Int?, payload: [UInt8], isText: Bool,
                      whole: Bool, extra: [(String, String)] = []) {
        guard fd >= 0 else { return }
        var line = "{\"from\":\(JSONText.quoted(from)),\"ms\":\(Self.number(milliseconds)),\"type\":\(JSONText.quoted(kind))"
        if let bytes { line += ",\"bytes\":\(bytes)" }
        for (key, json) in extra { line += ",\(JSONText.quoted(key)):\(json)" }
        if isText, let text = String(validating: payload, as: UTF8.self) {
            line += ",\"text\":\(JSONText.quoted(text))"
        } else if !payload.isEmpty {
            line += ",\"base64\":\"\(Data(payload).base64EncodedString())\""
        }
        if !whole { line += ",\"truncated\":true" }
        line += "}\n"
        let bytesOut = Array(line.utf8)
        guard written + Int64(bytesOut.count) <= maxBytes else {
            truncated = true
            close()
            return
        }
        var offset = 0
        while offset < bytesOut.count {
            let n = bytesOut[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                error = String(cString: strerror(errno))
                close()
                return
            }
            offset += n
        }
        written += Int64(bytesOut.count)
    }

    public func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    private static func number(_ value: Double) -> String {
        let rounded = (value * 1000).rounded() / 1000
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }
}
