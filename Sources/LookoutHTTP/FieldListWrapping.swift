import HTTPTypes

/// Turns an array of fields into `HTTPFields` without a copy per field.
///
/// `HTTPFields` keeps its fields in one stored `[HTTPField]`, but its only public way in,
/// `append`, goes through `insert(_:at:)` with a `CollectionOfOne`: each field is copied twice on
/// the way and released twice after (36 retains and as many releases per proxied request, counted
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
