extension String {
    /// Calls `body` with the string's UTF-8 where it lies.
    ///
    /// `withUTF8` hands over a buffer in every case but is mutating: reached through a copy, it
    /// retains and releases a large string's storage, on every field, URL and record written.
    /// A native string's UTF-8 is read where it lies (a small one, 15 bytes or fewer, from its
    /// bytes spilled to the stack); only a string without fast UTF-8 (none that Lookout makes)
    /// goes through `withUTF8` on a copy, which makes it native first.
    @inlinable @inline(__always)
    public func withUTF8InPlace<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
        var small = self
        return try small.withUTF8(body)
    }
}
