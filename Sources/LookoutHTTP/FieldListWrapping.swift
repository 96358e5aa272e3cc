import HTTPTypes

/// Turns an array of fields into `HTTPFields` without a copy per field.
///
/// `HTTPFields` keeps its fields in one stored `[HTTPField]`, but its only public way in,
/// `append`, goes through `insert(_:at:)` with a `CollectionOfOne`: each field is copied twice on
/// the way and released twice after (27 retains and as many releases per proxied request, counted
/// with uprobes, from parsing alone). When the layout is that single array — checked once, by
/// size and by wrapping a sample and reading it back — the array is taken as it is; otherwise
/// the fields are appended one by one.
enum FieldListWrapping {
    static let wrapsInPlace: Bool = {
        guard MemoryLayout<HTTPFields>.size == MemoryLayout<[HTTPField]>.size,
            MemoryLayout<HTTPFields>.alignment == MemoryLayout<[HTTPField]>.alignment
        else { return false }
        let sample = [HTTPField(name: .accept, value: "a"), HTTPField(name: .via, value: "b")]
        let wrapped = unsafeBitCast(sample, to: HTTPFields.self)
        return wrapped.count == 2 && wrapped[0] == sample[0] && wrapped[1] == sample[1]
            && wrapped[.via] == "b"
    }()

    /// The fields of `list`, in order. Names are never pseudo-header names here (a parsed name
    /// is a token, which cannot hold ':'), the one check `append` makes.
    @inline(__always)
    static func fields(_ list: consuming [HTTPField]) -> HTTPFields {
        if wrapsInPlace { return unsafeBitCast(list, to: HTTPFields.self) }
        var fields = HTTPFields()
        fields.reserveCapacity(list.count)
        for field in list { fields.append(field) }
        return fields
    }
}

extension HTTPFields {
    /// Appends `field` (not a pseudo-header field) without `append`'s copies.
    @inline(__always)
    public mutating func appendField(_ field: consuming HTTPField) {
        guard FieldListWrapping.wrapsInPlace else { return append(field) }
        var moving: HTTPField? = consume field  // moved into the array, not copied
        withFieldList { $0.append(moving.take()!) }
    }

    /// What `self[name] = value` does — the first field of that name takes the value, the others
    /// go, or the field is appended — without the copies of its generic path. Not for `Cookie`,
    /// which the subscript splits into crumbs.
    public mutating func setValue(_ value: String, for name: HTTPField.Name) {
        guard FieldListWrapping.wrapsInPlace, name != .cookie else {
            self[name] = value
            return
        }
        var moving: HTTPField? = HTTPField(name: name, value: value)
        withFieldList { list in
            guard let first = list.firstIndex(where: { $0.name == name }) else { return list.append(moving.take()!) }
            list[first] = moving.take()!
            var index = list.endIndex - 1
            while index > first {
                if list[index].name == name { list.remove(at: index) }
                index -= 1
            }
        }
    }

    /// Removes the fields `shouldRemove` picks, keeping the others in order, in one pass that
    /// moves the kept fields down (no field is copied).
    public mutating func removeFields(where shouldRemove: (borrowing HTTPField) -> Bool) {
        guard FieldListWrapping.wrapsInPlace else {
            var index = endIndex
            while index > startIndex {
                index -= 1
                if shouldRemove(self[index]) { remove(at: index) }
            }
            return
        }
        withFieldList { list in
            let kept = list.withUnsafeMutableBufferPointer { buffer in
                var kept = 0
                for index in buffer.indices where !shouldRemove(buffer[index]) {
                    if kept != index { buffer.swapAt(kept, index) }
                    kept += 1
                }
                return kept
            }
            if kept < list.count { list.removeLast(list.count - kept) }
        }
    }

    /// Calls `body` with the fields in order, lent rather than copied: iterating `HTTPFields` or
    /// reading `self[index]` copies each field (a retain and a release for each of its strings).
    @inline(__always)
    public func withFieldBuffer<R>(_ body: (UnsafeBufferPointer<HTTPField>) -> R) -> R {
        guard FieldListWrapping.wrapsInPlace else { return Array(self).withUnsafeBufferPointer(body) }
        return withUnsafePointer(to: self) { pointer in
            pointer.withMemoryRebound(to: [HTTPField].self, capacity: 1) { $0.pointee.withUnsafeBufferPointer(body) }
        }
    }

    /// The fields as the array they are stored in; only when `FieldListWrapping.wrapsInPlace`.
    @inline(__always)
    private mutating func withFieldList<R>(_ body: (inout [HTTPField]) -> R) -> R {
        withUnsafeMutablePointer(to: &self) { pointer in
            pointer.withMemoryRebound(to: [HTTPField].self, capacity: 1) { body(&$0.pointee) }
        }
    }
}
