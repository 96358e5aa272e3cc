import CLookoutSSL

/// Standard base64 (RFC 4648 §4, with padding) through OpenSSL's EVP block coder, so the
/// library needs no Foundation.
public enum Base64 {
    /// Encodes `bytes` with padding.
    public static func encode(_ bytes: [UInt8]) -> String {
        if bytes.isEmpty { return "" }
        let outputLength = 4 * ((bytes.count + 2) / 3)
        var output = [UInt8](repeating: 0, count: outputLength + 1)
        let written = output.withUnsafeMutableBufferPointer { out in
            bytes.withUnsafeBufferPointer { input in
                EVP_EncodeBlock(out.baseAddress, input.baseAddress, Int32(input.count))
            }
        }
        return String(decoding: output[0..<Int(written)], as: UTF8.self)
    }

    /// Decodes padded standard base64; unpadded input is padded first. Returns nil for any
    /// character outside the alphabet or a malformed length.
    public static func decode(_ text: String) -> [UInt8]? {
        var input = Array(text.utf8)
        if input.isEmpty { return [] }
        switch input.count % 4 {
        case 0: break
        case 2: input += [UInt8(ascii: "="), UInt8(ascii: "=")]
        case 3: input += [UInt8(ascii: "=")]
        default: return nil
        }
        let alphabet: (UInt8) -> Bool = { c in
            (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39)
                || c == UInt8(ascii: "+") || c == UInt8(ascii: "/")
        }
        // Padding only at the end, at most two characters.
        let padding = input.reversed().prefix(while: { $0 == UInt8(ascii: "=") }).count
        guard padding <= 2, input.dropLast(padding).allSatisfy(alphabet) else { return nil }
        var output = [UInt8](repeating: 0, count: input.count / 4 * 3)
        let decoded = output.withUnsafeMutableBufferPointer { out in
            input.withUnsafeBufferPointer { inp in
                EVP_DecodeBlock(out.baseAddress, inp.baseAddress, Int32(inp.count))
            }
        }
        // EVP_DecodeBlock counts the zero bytes that padding stands for; drop them.
        guard decoded >= 0, Int(decoded) - padding >= 0 else { return nil }
        return Array(output[0..<(Int(decoded) - padding)])
    }

    /// Decodes base64url (RFC 4648 §5: `-` and `_` for `+` and `/`), unpadded as `HTTP2-Settings`
    /// carries it (RFC 7540 §3.2.1); nil for anything else.
    public static func decodeURLSafe(_ text: String) -> [UInt8]? {
        var standard = [UInt8]()
        standard.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "-"): standard.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): standard.append(UInt8(ascii: "/"))
            case UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="): return nil
            default: standard.append(byte)
            }
        }
        return decode(String(decoding: standard, as: UTF8.self))
    }
}
