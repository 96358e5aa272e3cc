import CLookoutSSL

/// Helpers for OpenSSL memory BIOs, used to move PEM and DER text in and out of OpenSSL.
enum MemoryBIO {
    /// Runs `body` with a read-only memory BIO over `bytes`; the BIO is freed afterwards.
    static func withReadable<R, E: Error>(
        _ bytes: [UInt8], _ body: (OpaquePointer) throws(E) -> R
    ) throws(E) -> R {
        // BIO_new_mem_buf does not copy: `bytes` must outlive the BIO, which the closure
        // scope guarantees.
        let result: Result<R, E> = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else {
                fatalError("BIO_new_mem_buf failed: out of memory")
            }
            defer { BIO_free(bio) }
            do throws(E) {
                return .success(try body(bio))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Runs `body` with an empty writable memory BIO and returns everything written to it.
    static func collect(_ body: (OpaquePointer) -> Bool) -> [UInt8]? {
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        guard body(bio) else { return nil }
        return contents(of: bio)
    }

    /// The bytes currently held by a memory BIO, without consuming them.
    static func contents(of bio: OpaquePointer) -> [UInt8] {
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = lookout_BIO_get_mem_data(bio, &data)
        guard length > 0, let data else { return [] }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    /// The bytes written by `body` decoded as UTF-8 text.
    static func collectString(_ body: (OpaquePointer) -> Bool) -> String? {
        collect(body).map { String(decoding: $0, as: UTF8.self) }
    }
}
