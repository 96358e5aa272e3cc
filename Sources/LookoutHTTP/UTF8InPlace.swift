extension String {
    /// Calls `body` with the string's UTF-8 where it lies.
    ///
    /// `withUTF8` hands over a buffer in every case but is mutating: reached through a copy, it
    /// retains and releases a large string's storage, on every field, URL and record written.
    /// A large native string's UTF-8 is contiguous and read in place; a small one (15 bytes or
    /// fewer) has no contiguous view, but holds no storage either, so its copy costs nothing.
    @inlinable @inline(__always)
    public func withUTF8InPlace<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
        var small = self
        return try small.withUTF8(body)
    }
}
