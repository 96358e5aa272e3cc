import CLookoutDeflate

/// gzip (RFC 1952) of one whole export request at a time, with libdeflate at level 1: a batch
/// is in memory as one buffer anyway, and libdeflate compresses such a buffer at about twice
/// zlib's level-1 speed for the same size (OTLP batches are repetitive; level 1 already shrinks
/// them five to ten times). The exporter shares the machine with the traffic, so its speed is
/// the traffic's.
///
/// `@unchecked Sendable`: used on the exporter's thread only; the compressor's state is never
/// touched from two threads.
final class BatchGzip: @unchecked Sendable {
    private let compressor: OpaquePointer

    /// nil when libdeflate cannot allocate its state.
    init?(level: Int32 = 1) {
        guard let compressor = libdeflate_alloc_compressor(level) else { return nil }
        self.compressor = compressor
    }

    deinit { libdeflate_free_compressor(compressor) }

    /// `input` as one gzip member.
    func compress(_ input: [UInt8]) -> [UInt8] {
        let bound = libdeflate_gzip_compress_bound(compressor, input.count)
        return input.withUnsafeBytes { source in
            [UInt8](unsafeUninitializedCapacity: bound) { out, count in
                // Never 0 here: the buffer is the bound libdeflate gives for this input.
                count = libdeflate_gzip_compress(compressor, source.baseAddress, source.count, out.baseAddress, out.count)
            }
        }
    }
}
