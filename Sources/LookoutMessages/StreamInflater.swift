import CLookoutCompression

/// Inflates raw deflate piece by piece, keeping its window between messages (permessage-deflate's
/// context takeover, RFC 7692 §7.2.3) unless told to start afresh. Output past `keep` bytes is
/// counted, not kept.
///
/// `@unchecked Sendable`: owned by one decoder, on its connection's loop queue.
final class StreamInflater: @unchecked Sendable {
    /// zlib points back at its `z_stream`: it lives at one fixed address.
    private let stream: UnsafeMutablePointer<z_stream>
    private(set) var failed = false

    init?() {
        stream = .allocate(capacity: 1)
        guard lookout_inflate_raw_init(stream) == Z_OK else {
            stream.deallocate()
            return nil
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deallocate()
    }

    /// Forgets the window (a peer that said `no_context_takeover`).
    func reset() {
        inflateReset(stream)
        failed = false
    }

    /// Inflates `input`, appending to `output` until it holds `keep` bytes; returns how many bytes
    /// it produced in all (kept or not). A corrupt stream marks the inflater failed.
    @discardableResult
    func inflate(_ input: UnsafeRawBufferPointer, into output: inout [UInt8], keep: Int) -> Int {
        guard !failed, input.count > 0 else { return 0 }
        var produced = 0
        var scratch = [UInt8](repeating: 0, count: 16 * 1024)
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress!.assumingMemoryBound(to: UInt8.self))
        stream.pointee.avail_in = UInt32(input.count)
        while true {
            let status: Int32 = scratch.withUnsafeMutableBufferPointer { out in
                stream.pointee.next_out = out.baseAddress
                stream.pointee.avail_out = UInt32(out.count)
                return CLookoutCompression.inflate(stream, Z_SYNC_FLUSH)
            }
            let n = scratch.count - Int(stream.pointee.avail_out)
            produced += n
            if output.count < keep { output.append(contentsOf: scratch[..<min(n, keep - output.count)]) }
            if status == Z_STREAM_END {
                // A sender that ended its deflate stream (BFINAL) starts the next message afresh.
                inflateReset(stream)
                break
            }
            if status != Z_OK && status != Z_BUF_ERROR {
                failed = true
                break
            }
            // Done once zlib neither filled the buffer nor has input left.
            if stream.pointee.avail_out != 0 || status == Z_BUF_ERROR { break }
        }
        stream.pointee.next_in = nil
        return produced
    }
}
