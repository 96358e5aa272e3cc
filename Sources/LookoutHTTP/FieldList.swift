/// The elements of a comma-separated field value (RFC 9110 §5.6.1) for the layers above the
/// parser, split and compared by the same rules the parser applies to `Connection`,
/// `Transfer-Encoding` and `Expect`.
public enum FieldList {
    /// Calls `body` with each non-empty element of `value`, optional whitespace trimmed.
    public static func forEachElement(of value: String, _ body: (FieldListElement) -> Void) {
        value.withUTF8InPlace { utf8 in
            let bytes = Bytes(UnsafeRawBufferPointer(utf8))
            FieldParsing.forEachListElement(bytes, 0, bytes.count) { start, end in
                body(FieldListElement(bytes: bytes, start: start, end: end))
            }
        }
    }

    /// Whether `value` lists `token` (a lowercase literal), compared without regard to ASCII case.
    public static func contains(_ token: StaticString, in value: String) -> Bool {
        var found = false
        forEachElement(of: value) { element in
            if !found && element.equalsLowercase(token) { found = true }
        }
        return found
    }
}

/// One element of a field list; valid only during the `FieldList.forEachElement` call.
public struct FieldListElement {
    fileprivate let bytes: Bytes
    fileprivate let start: Int
    fileprivate let end: Int

    /// ASCII case-insensitive comparison with a lowercase token such as "keep-alive".
    public func equalsLowercase(_ literal: StaticString) -> Bool {
        bytes.equalsLowercase(start, end, literal)
    }

    public var string: String { bytes.string(start, end) }
}

extension StringProtocol {
    /// Without leading and trailing optional whitespace (OWS: spaces and tabs, RFC 9110 §5.6.3).
    public func trimmingOWS() -> SubSequence {
        var s = self[...]
        while let first = s.first, first == " " || first == "\t" { s = s.dropFirst() }
        while let last = s.last, last == " " || last == "\t" { s = s.dropLast() }
        return s
    }
}
