import CLookoutCompression

/// Writes a gzip stream (RFC 1952) piece by piece with the system's zlib: what goes in is
/// compressed as it comes, so an archive or an export is never built whole.
///
/// `@unchecked Sendable`: a writer has one owner at a time (the stream that holds it, under that
/// stream's lock); zlib's state is never touched from two threads.
public final class GzipWriter: @unchecked Sendable {
    /// zlib keeps a pointer back to its `z_stream`, so the stream lives at one fixed address.
    private let stream: UnsafeMutablePointer<z_stream>
    private var finished = false
    /// The output buffer each call writes into before its bytes are handed back.
    private static let outputBytes = 64 * 1024

    /// nil when zlib cannot start (out of memory).
    public init?(level: Int32 = 6) {
        stream = .allocate(capacity: 1)
        guard lookout_deflate_init_gzip(stream, level) == Z_OK else {
            stream.deallocate()
            return nil
        }
    }

    deinit {
        deflateEnd(stream)
        stream.deallocate()
    }

    /// Compresses `input`; the result may be empty (zlib keeps small inputs until it has a block).
    public func write(_ input: [UInt8]) -> [UInt8] {
        guard !finished, !input.isEmpty else { return [] }
        return input.withUnsafeBufferPointer { run($0, flush: Z_NO_FLUSH) }
    }

    /// The rest of the stream and its trailer (CRC-32 and length); nothing after the first call.
    public func finish() -> [UInt8] {
        guard !finished else { return [] }
        finished = true
        return run(UnsafeBufferPointer(start: nil, count: 0), flush: Z_FINISH)
    }

    private func run(_ input: UnsafeBufferPointer<UInt8>, flush: Int32) -> [UInt8] {
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
        stream.pointee.avail_in = UInt32(input.count)
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: Self.outputBytes)
        while true {
            let status: Int32 = buffer.withUnsafeMutableBufferPointer { out in
                stream.pointee.next_out = out.baseAddress
                stream.pointee.avail_out = UInt32(out.count)
                return deflate(stream, flush)
            }
            let produced = Self.outputBytes - Int(stream.pointee.avail_out)
            output.append(contentsOf: buffer[..<produced])
            // More to come while zlib filled the whole buffer; Z_FINISH is done at Z_STREAM_END.
            if flush == Z_FINISH ? status != Z_STREAM_END && status != Z_STREAM_ERROR : stream.pointee.avail_out == 0 {
                continue
            }
            break
        }
        stream.pointee.next_in = nil
        return output
    }
}
