import HTTPTypes
import LookoutHTTP

/// The `Cache-Control` directives of one message (RFC 9111 §5.2), request or response.
///
/// Directive names are case-insensitive; arguments may be tokens or quoted strings (§5.2). A
/// directive that takes delta-seconds and carries an invalid argument, or appears twice with
/// different arguments, is recorded in `conflicts`: §4.2.1 says a cache may then treat the
/// response as stale, which is what this cache does for freshness directives (`max-age`,
/// `s-maxage`). Unknown directives are ignored (§5.2.3).
public struct CacheControl: Sendable, Equatable {
    // Both directions.
    public var maxAge: Int?
    public var noCache = false
    public var noStore = false
    public var noTransform = false

    // Response (§5.2.2).
    /// The fields named by a qualified `no-cache="a, b"`; empty for the unqualified form.
    public var noCacheFields: [String] = []
    public var mustRevalidate = false
    public var proxyRevalidate = false
    public var mustUnderstand = false
    public var isPublic = false
    public var isPrivate = false
    /// The fields named by a qualified `private="a, b"`: a shared cache stores the response without them.
    public var privateFields: [String] = []
    public var sMaxAge: Int?
    /// RFC 5861.
    public var staleWhileRevalidate: Int?
    public var staleIfError: Int?

    // Request (§5.2.1).
    /// `max-stale` with no argument accepts any staleness: `Int.max`.
    public var maxStale: Int?
    public var minFresh: Int?
    public var onlyIfCached = false

    /// Freshness directives whose argument was invalid or given twice differently.
    public var conflicts: Set<String> = []
    /// Read from `CDN-Cache-Control` (RFC 9213), which replaces `Cache-Control` and `Expires`.
    public var isTargeted = false

    /// No directive this parser knows was present.
    public var isEmpty: Bool { self == CacheControl() }

    public init() {}

    /// Parses every `Cache-Control` line of `fields` as one list (RFC 9110 §5.3).
    public init(_ fields: HTTPFields) {
        self.init()
        for line in fields[values: .cacheControl] { parse(line) }
    }

    /// Parses one field value; may be called again for further lines.
    public init(value: String) {
        self.init()
        parse(value)
    }

    /// delta-seconds (§1.2.2): 1*DIGIT; values too large saturate at 2^31.
    static func deltaSeconds(_ text: String?) -> Int? {
        guard let text, !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text).map { min($0, 2_147_483_648) } ?? 2_147_483_648
    }

    private mutating func parse(_ value: String) {
        value.withUTF8InPlace { bytes in
            CacheControl.forEachDirective(in: bytes) { name, argument in apply(name, argument) }
        }
    }

    mutating func apply(_ name: String, _ argument: String?) {
        switch name {
        case "max-age": maxAge = seconds(name, argument, current: maxAge)
        case "s-maxage": sMaxAge = seconds(name, argument, current: sMaxAge)
        case "stale-while-revalidate": staleWhileRevalidate = seconds(name, argument, current: staleWhileRevalidate)
        case "stale-if-error": staleIfError = seconds(name, argument, current: staleIfError)
        case "min-fresh": minFresh = seconds(name, argument, current: minFresh)
        case "max-stale":
            // No argument: any staleness is acceptable (§5.2.1.2).
            maxStale = argument == nil ? Int.max : seconds(name, argument, current: maxStale)
        case "no-cache":
            if let argument {
                if !noCache || !noCacheFields.isEmpty { noCacheFields += CacheControl.fieldNames(argument) }
            } else {
                noCacheFields = []  // the unqualified form wins over any qualified one
            }
            noCache = true
        case "private":
            if let argument {
                if !isPrivate || !privateFields.isEmpty { privateFields += CacheControl.fieldNames(argument) }
            } else {
                privateFields = []
            }
            isPrivate = true
        case "no-store": noStore = true
        case "no-transform": noTransform = true
        case "must-revalidate": mustRevalidate = true
        case "proxy-revalidate": proxyRevalidate = true
        case "must-understand": mustUnderstand = true
        case "public": isPublic = true
        case "only-if-cached": onlyIfCached = true
        default: break
        }
    }

    /// The directives a shared cache obeys for a response: `CDN-Cache-Control` when it is valid
    /// and `targeted` allows it (RFC 9213 §2.1), otherwise `Cache-Control`.
    public static func response(_ fields: HTTPFields, targeted: Bool) -> CacheControl {
        if targeted, let directives = CacheControl.targeted(fields) { return directives }
        return CacheControl(fields)
    }

    private mutating func seconds(_ name: String, _ argument: String?, current: Int?) -> Int? {
        guard let value = CacheControl.deltaSeconds(argument) else {
            conflicts.insert(name)
            return current
        }
        if let current, current != value {
            conflicts.insert(name)
            return min(current, value)
        }
        return value
    }

    /// The `name[=argument]` pairs of a list, names lowercased, quoted arguments unescaped.
    static func directives(in value: String) -> [(String, String?)] {
        var result: [(String, String?)] = []
        value.withUTF8InPlace { bytes in forEachDirective(in: bytes) { result.append(($0, $1)) } }
        return result
    }

    /// Calls `body` with each directive's lowercased name and its argument (quoted-string
    /// unescaped), reading the bytes in place (names up to 15 bytes are small strings: no allocation).
    static func forEachDirective(in bytes: UnsafeBufferPointer<UInt8>, _ body: (String, String?) -> Void) {
        var i = 0
        let count = bytes.count
        @inline(__always) func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }
        while i < count {
            while i < count, isSpace(bytes[i]) { i += 1 }
            let nameStart = i
            var hasUpper = false
            while i < count, bytes[i] != 0x2C, bytes[i] != 0x3D {
                if bytes[i] >= 0x41 && bytes[i] <= 0x5A { hasUpper = true }
                i += 1
            }
            var nameEnd = i
            while nameEnd > nameStart, isSpace(bytes[nameEnd - 1]) { nameEnd -= 1 }
            let raw = String(decoding: UnsafeBufferPointer(rebasing: bytes[nameStart..<nameEnd]), as: UTF8.self)
            let name = hasUpper ? raw.lowercased() : raw
            var argument: String?
            if i < count, bytes[i] == 0x3D {
                i += 1
                while i < count, isSpace(bytes[i]) { i += 1 }
                if i < count, bytes[i] == 0x22 {  // quoted-string (RFC 9110 §5.6.4)
                    i += 1
                    var text: [UInt8] = []
                    while i < count, bytes[i] != 0x22 {
                        if bytes[i] == 0x5C, i + 1 < count { i += 1 }
                        text.append(bytes[i])
                        i += 1
                    }
                    i += 1
                    argument = String(decoding: text, as: UTF8.self)
                    while i < count, bytes[i] != 0x2C { i += 1 }
                } else {
                    let start = i
                    while i < count, bytes[i] != 0x2C { i += 1 }
                    var end = i
                    while end > start, isSpace(bytes[end - 1]) { end -= 1 }
                    argument = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
                }
            }
            if nameEnd > nameStart { body(name, argument) }
            i += 1  // the comma
        }
    }

    /// The field names of a qualified directive's argument, lowercased.
    static func fieldNames(_ argument: String) -> [String] {
        argument.split(separator: ",").map { $0.trimmingOWS().lowercased() }.filter { !$0.isEmpty }
    }
}

extension HTTPField.Name {
    /// RFC 9111 §5.4 (deprecated, still sent by HTTP/1.0 clients).
    static let pragma = HTTPField.Name("Pragma")!
    /// RFC 9211.
    public static let cacheStatus = HTTPField.Name("Cache-Status")!
}
