import CLookoutCompression
import LookoutHTTP

/// Content codings decoded for readers of captured bodies (HAR, the UI): gzip, deflate (zlib or
/// raw) and br, with the system's zlib and brotli. Bounded: a body that would decode past
/// `limit` bytes is reported as too large instead of being held.
public enum ContentDecoding {
    public enum Outcome: Equatable {
        case decoded([UInt8])
        /// A coding this does not know (or several): the body is given as it is.
        case unsupported(String)
        case corrupt(String)
        case tooLarge
    }

    public static func decode(_ body: [UInt8], contentEncoding: String?, limit: Int = 64 << 20) -> Outcome {
        guard let coding = contentEncoding?.trimmingOWS().lowercased(), !coding.isEmpty,
              coding != "identity" else { return .decoded(body) }
        if coding.contains(",") { return .unsupported(coding) }
        var capacity = min(limit, max(4096, body.count * 8))
        while true {
            var out = [UInt8](repeating: 0, count: capacity)
            let produced: Int = body.withUnsafeBufferPointer { input in
                out.withUnsafeMutableBufferPointer { output in
                    switch coding {
                    case "gzip", "x-gzip":
                        return lookout_inflate(input.baseAddress, input.count, output.baseAddress, output.count, 15 + 32)
                    case "deflate":
                        // RFC 9110 §8.4.1.2 says zlib; some servers send raw deflate.
                        let zlib = lookout_inflate(input.baseAddress, input.count, output.baseAddress, output.count, 15)
                        return zlib == -1 ? lookout_inflate(input.baseAddress, input.count, output.baseAddress, output.count, -15) : zlib
                    case "br":
                        return lookout_brotli_decode(input.baseAddress, input.count, output.baseAddress, output.count)
                    default:
                        return -3
                    }
                }
            }
            switch produced {
            case -3: return .unsupported(coding)
            case -1: return .corrupt(coding)
            case -2:
                if capacity >= limit { return .tooLarge }
                capacity = min(limit, capacity * 4)
            default:
                out.removeLast(out.count - produced)
                return .decoded(out)
            }
        }
    }
}
