#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPTypes

/// Serialization of HTTP/1.1 heads and chunked framing. Field names are written with their original
/// spelling (`rawName`), values as stored.
public enum HTTPSerializer {
    public static let crlf: [UInt8] = [ASCII.cr, ASCII.lf]

    public static func requestHead(method: HTTPRequest.Method, target: String, version: HTTPVersion, headerFields: HTTPFields) -> [UInt8] {
        var out: [UInt8] = []
        appendRequestHead(into: &out, method: method, target: target, version: version, headerFields: headerFields)
        return out
    }

    public static func responseHead(status: Int, reasonPhrase: String, version: HTTPVersion, headerFields: HTTPFields) -> [UInt8] {
        var out: [UInt8] = []
        appendResponseHead(into: &out, status: status, reasonPhrase: reasonPhrase, version: version, headerFields: headerFields)
        return out
    }

    /// Appends a request head to `out` (no intermediate allocation).
    public static func appendRequestHead(
        into out: inout [UInt8], method: HTTPRequest.Method, target: String, version: HTTPVersion, headerFields: HTTPFields
    ) {
        out.reserveCapacity(out.count + estimatedSize(headerFields) + target.utf8.count + 32)
        out.append(contentsOf: method.rawValue.utf8)
        out.append(ASCII.sp)
        out.append(contentsOf: target.utf8)
        out.append(ASCII.sp)
        appendVersion(&out, version)
        out.append(contentsOf: crlf)
        appendFields(&out, headerFields)
        out.append(contentsOf: crlf)
    }

    /// Appends a response head to `out` (no intermediate allocation).
    public static func appendResponseHead(
        into out: inout [UInt8], status: Int, reasonPhrase: String, version: HTTPVersion, headerFields: HTTPFields
    ) {
        out.reserveCapacity(out.count + estimatedSize(headerFields) + reasonPhrase.utf8.count + 32)
        appendVersion(&out, version)
        out.append(ASCII.sp)
        let s = min(max(status, 0), 999)
        out.append(UInt8(0x30 + s / 100))
        out.append(UInt8(0x30 + (s / 10) % 10))
        out.append(UInt8(0x30 + s % 10))
        out.append(ASCII.sp)
        out.append(contentsOf: reasonPhrase.utf8)
        out.append(contentsOf: crlf)
        appendFields(&out, headerFields)
        out.append(contentsOf: crlf)
    }

    /// "<lowercase hex length>\r\n"
    public static func chunkHeader(length: Int) -> [UInt8] {
        precondition(length >= 0, "negative chunk length")
        var out: [UInt8] = []
        out.reserveCapacity(18)
        appendHex(&out, UInt64(length))
        out.append(contentsOf: crlf)
        return out
    }

    /// "0\r\n" + trailer lines + "\r\n"
    public static func lastChunk(trailers: HTTPFields?) -> [UInt8] {
        var out: [UInt8] = [0x30, ASCII.cr, ASCII.lf]
        if let trailers {
            appendFields(&out, trailers)
        }
        out.append(contentsOf: crlf)
        return out
    }

    /// Appends "Name: value\r\n" for each field.
    ///
    /// Fields are read where they are stored (`withFieldBuffer`), and a value through its
    /// `String` when that is exactly its bytes: `for field in fields` and `withUnsafeBytesOfValue`
    /// copy each field and its value first (five retains and releases a field against two,
    /// counted with uprobes).
    public static func appendFields(_ out: inout [UInt8], _ fields: HTTPFields) {
        fields.withFieldBuffer { buffer in
            for index in buffer.indices {
                appendUTF8(&out, buffer[index].name.rawName)
                out.append(ASCII.colon)
                out.append(ASCII.sp)
                if !appendExactValue(&out, buffer[index].value) {
                    buffer[index].withUnsafeBytesOfValue { out.append(contentsOf: $0) }
                }
                out.append(ASCII.cr)
                out.append(ASCII.lf)
            }
        }
    }

    /// Appends `value`'s UTF-8 and returns true, unless it may differ from the bytes the field
    /// holds. A value held as bytes (obs-text, RFC 9110 §5.5) reads as a String with each invalid
    /// sequence replaced by U+FFFD, whose UTF-8 starts with 0xEF; a value with no 0xEF byte is
    /// therefore exactly the field's bytes.
    private static func appendExactValue(_ out: inout [UInt8], _ value: String) -> Bool {
        value.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            guard let base = bytes.baseAddress else { return true }  // empty
            guard memchr(base, 0xEF, bytes.count) == nil else { return false }
            out.append(contentsOf: bytes)
            return true
        } ?? false
    }

    private static func appendUTF8(_ out: inout [UInt8], _ string: String) {
        if string.utf8.withContiguousStorageIfAvailable({ out.append(contentsOf: $0) }) == nil {
            out.append(contentsOf: string.utf8)
        }
    }

    static func appendVersion(_ out: inout [UInt8], _ version: HTTPVersion) {
        out.append(contentsOf: "HTTP/".utf8)
        appendDecimal(&out, version.major)
        out.append(0x2E)
        appendDecimal(&out, version.minor)
    }

    /// A version number's digits, without making a String of them (every head has two).
    private static func appendDecimal(_ out: inout [UInt8], _ value: Int) {
        if (0...9).contains(value) {
            out.append(UInt8(0x30 + value))
        } else {
            out.append(contentsOf: String(value).utf8)
        }
    }

    static func appendHex(_ out: inout [UInt8], _ value: UInt64) {
        if value == 0 {
            out.append(0x30)
            return
        }
        let digits: StaticString = "0123456789abcdef"
        var shift = (UInt64.bitWidth - value.leadingZeroBitCount - 1) / 4 * 4
        while shift >= 0 {
            out.append(digits.utf8Start[Int((value >> UInt64(shift)) & 0xF)])
            shift -= 4
        }
    }

    /// A guess from the number of fields, not a pass over them: measuring each field copied it
    /// (three reference-count pairs per field) and showed in the profile; a longer head just
    /// grows the buffer.
    static func estimatedSize(_ fields: HTTPFields) -> Int {
        fields.count * 64 + 2
    }
}
