import Lookout
import LookoutCache
import LookoutIO
import LookoutModel
import LookoutUpstream

/// One piece of a stored answer's body: bytes made for it (a multipart/byteranges part header),
/// or a span of the stored body.
enum BodySegment: Equatable {
    case literal([UInt8])
    case stored(ClosedRange<Int64>)

    var count: Int64 {
        switch self {
        case .literal(let bytes): return Int64(bytes.count)
        case .stored(let range): return range.upperBound - range.lowerBound + 1
        }
    }
}

/// Writes a stored answer's body to the client: from memory at once, from the file in 64 KiB
/// reads while the client keeps up (the exchange calls `send` again when it drains).
final class StoredBodySender: ResponseBodySource, @unchecked Sendable {  // confined to the exchange's loop queue

    private let object: CachedObject
    private let segments: [BodySegment]
    private var index = 0
    /// Bytes of `segments[index]` already written.
    private var offset: Int64 = 0
    private var buffer: [UInt8] = []
    /// The stored response's URL, for the error when its file cannot be read.
    private let url: String

    init(object: CachedObject, segments: [BodySegment], url: String) {
        self.object = object
        self.segments = segments
        self.url = url
    }

    var failure: ProxyError { .sessionUnavailable(reason: .cacheReadFailed(url: url)) }

    /// `observe` sees every body byte written (for the capture).
    func send(to client: ClientResponseWriter, observe: (UnsafeRawBufferPointer) -> Void) -> BodyProgress {
        while index < segments.count {
            switch segments[index] {
            case .literal(let bytes):
                index += 1
                bytes.withUnsafeBytes(observe)
                if !bytes.withUnsafeBytes({ client.writeBody($0) }) { return index == segments.count ? .done : .waiting }
            case .stored(let range):
                if case .memory(let body) = object.body {
                    // At most `memoryObjectLimit` bytes: queued whole, sent as the client reads.
                    let accepted = body.withUnsafeBytes {
                        let slice = UnsafeRawBufferPointer(rebasing: $0[Int(range.lowerBound)...Int(range.upperBound)])
                        observe(slice)
                        return client.writeBody(slice)
                    }
                    index += 1
                    if !accepted { return index == segments.count ? .done : .waiting }
                    continue
                }
                if buffer.isEmpty { buffer = [UInt8](repeating: 0, count: 64 * 1024) }
                let length = range.upperBound - range.lowerBound + 1
                while offset < length {
                    let want = Int(min(Int64(buffer.count), length - offset))
                    let (count, accepted) = buffer.withUnsafeMutableBytes { raw -> (Int, Bool) in
                        let n = object.readBody(at: range.lowerBound + offset, into: UnsafeMutableRawBufferPointer(rebasing: raw[..<want]))
                        guard n > 0 else { return (0, true) }
                        let read = UnsafeRawBufferPointer(rebasing: raw[..<n])
                        observe(read)
                        return (n, client.writeBody(read))
                    }
                    if count == 0 { return .failed }
                    offset += Int64(count)
                    if !accepted && offset < length { return .waiting }
                }
                index += 1
                offset = 0
            }
        }
        return .done
    }
}
