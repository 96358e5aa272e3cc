import LookoutHTTP

/// One JSON-lines record, read in place: its top-level members located, values decoded on demand.
/// Valid only while the line's bytes are.
public struct LogRecord {
    public let bytes: UnsafeBufferPointer<UInt8>
    public let members: [(key: String, value: JSONSpan)]

    /// Nil when the line is not a JSON object.
    public init?(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let members = JSONScan.members(bytes) else { return nil }
        self.bytes = bytes
        self.members = members
    }

    /// The span of `path` (nested object keys).
    public func span(_ path: [String]) -> JSONSpan? {
        var current = members
        for (index, key) in path.enumerated() {
            guard let found = current.first(where: { $0.key == key })?.value else { return nil }
            if index == path.count - 1 { return found }
            guard let inner = JSONScan.members(bytes, from: found.start) else { return nil }
            current = inner
        }
        return nil
    }

    public func string(_ path: String...) -> String? {
        guard let span = span(path), bytes[span.start] == UInt8(ascii: "\"") else { return nil }
        return JSONScan.decodeString(bytes, span.start, span.end)
    }

    /// A number as a whole one, or nil when it is not one Int can hold (a record is input: a
    /// damaged or hand-written line must not stop `lookout log`).
    public static func wholeNumber(_ value: Double) -> Int? { Int(exactly: value.rounded(.towardZero)) }

    /// A whole number's text, or the number's own beyond Int's range.
    public static func integerText(_ value: Double) -> String { wholeNumber(value).map(String.init) ?? String(value) }

    public func number(_ path: String...) -> Double? {
        guard let span = span(path) else { return nil }
        return Double(String(decoding: UnsafeBufferPointer(rebasing: bytes[span.start..<span.end]), as: UTF8.self))
    }

    public func bool(_ path: String...) -> Bool? {
        guard let span = span(path) else { return nil }
        let first = bytes[span.start]
        return first == UInt8(ascii: "t") ? true : first == UInt8(ascii: "f") ? false : nil
    }

    /// The string members of the object at `path` (e.g. a header map), decoded.
    public func stringMembers(_ path: String...) -> [(String, String)] {
        guard let span = span(path), let inner = JSONScan.members(bytes, from: span.start) else { return [] }
        return inner.compactMap { key, value in
            guard bytes[value.start] == UInt8(ascii: "\"") else { return nil }
            return JSONScan.decodeString(bytes, value.start, value.end).map { (key, $0) }
        }
    }

    /// The record's raw text.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// The host of the record's `url`: lowercased, without user info, port or brackets.
    public var host: String? {
        guard let url = string("url") else { return nil }
        return Self.host(of: url)
    }

    public static func host(of url: String) -> String {
        let host = URLAuthority.host(in: url)
        if host.hasPrefix("[") { return host.dropFirst().prefix { $0 != "]" }.lowercased() }
        return host.lowercased()
    }
}
