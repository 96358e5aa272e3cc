import Foundation

/// Where two JSON documents differ, as paths (`$.items[2].count`), leaving out ignored paths
/// (`$.requestId`, `$.items[*].ts`). Objects compare by key, whatever their order.
public enum JSONDiff {
    public struct Change: Sendable, Equatable {
        public let path: String
        /// "changed", "added" (only in B), "removed" (only in A).
        public let kind: String
        public let a: String?
        public let b: String?
    }

    /// Parses a body as JSON (an object or an array at the top); nil when it is not JSON.
    public static func parse(_ bytes: [UInt8]) -> Any? {
        guard let first = bytes.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }),
              first == UInt8(ascii: "{") || first == UInt8(ascii: "[") else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
    }

    public static func changes(_ a: Any, _ b: Any, ignoring ignored: [String] = [], limit: Int = 100) -> [Change] {
        var found: [Change] = []
        walk(a, b, path: "$", ignored: ignored.map(components), into: &found, limit: limit)
        return found
    }

    private static func walk(_ a: Any, _ b: Any, path: String, ignored: [[String]], into found: inout [Change], limit: Int) {
        guard found.count < limit, !isIgnored(path, ignored) else { return }
        switch (a, b) {
        case (let x as [String: Any], let y as [String: Any]):
            for key in Set(x.keys).union(y.keys).sorted() {
                let child = path + "." + key
                switch (x[key], y[key]) {
                case (let u?, let v?): walk(u, v, path: child, ignored: ignored, into: &found, limit: limit)
                case (let u?, nil): record(child, "removed", u, nil, ignored, &found)
                case (nil, let v?): record(child, "added", nil, v, ignored, &found)
                default: break
                }
            }
        case (let x as [Any], let y as [Any]):
            for index in 0..<max(x.count, y.count) {
                let child = "\(path)[\(index)]"
                if index < x.count && index < y.count {
                    walk(x[index], y[index], path: child, ignored: ignored, into: &found, limit: limit)
                } else if index < x.count {
                    record(child, "removed", x[index], nil, ignored, &found)
                } else {
                    record(child, "added", nil, y[index], ignored, &found)
                }
            }
        default:
            if !equal(a, b) { record(path, "changed", a, b, ignored, &found) }
        }
    }

    private static func record(_ path: String, _ kind: String, _ a: Any?, _ b: Any?, _ ignored: [[String]],
                               _ found: inout [Change]) {
        guard !isIgnored(path, ignored) else { return }
        found.append(Change(path: path, kind: kind, a: a.map(text), b: b.map(text)))
    }

    private static func equal(_ a: Any, _ b: Any) -> Bool {
        switch (a, b) {
        case (let x as String, let y as String): return x == y
        case (is NSNull, is NSNull): return true
        case (let x as NSNumber, let y as NSNumber):
            // JSONSerialization gives booleans as NSNumber too: a boolean never equals a number.
            return isBoolean(x) == isBoolean(y) && x == y
        default: return false
        }
    }

    private static func isBoolean(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c"
    }

    /// A value as JSON text, cut at 200 characters.
    static func text(_ value: Any) -> String {
        let data = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys])
        let text = data.map { String(decoding: $0, as: UTF8.self) } ?? "\(value)"
        return text.count > 200 ? String(text.prefix(200)) + "…" : text
    }

    /// `$.a.b[2]` → ["a", "b", "[2]"]; `[*]` matches any index.
    static func components(_ path: String) -> [String] {
        var parts: [String] = []
        var current = ""
        for character in path.hasPrefix("$") ? String(path.dropFirst()) : path {
            if character == "." || character == "[" {
                if !current.isEmpty { parts.append(current) }
                current = character == "[" ? "[" : ""
            } else {
                current.append(character)
            }
        }
        if !current.isEmpty { parts.append(current) }
        return parts
    }

    private static func isIgnored(_ path: String, _ ignored: [[String]]) -> Bool {
        guard !ignored.isEmpty else { return false }
        let parts = components(path)
        return ignored.contains { pattern in
            pattern.count <= parts.count && zip(pattern, parts).allSatisfy { $0 == $1 || ($0 == "[*]" && $1.hasPrefix("[")) }
        }
    }
}
