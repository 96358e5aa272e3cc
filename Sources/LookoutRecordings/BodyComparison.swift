import Foundation
import LookoutLogQuery

/// Two recorded bodies compared: as JSON when both are JSON (key order aside, ignored paths left
/// out), else byte for byte. Bodies up to `inMemoryLimit` are read whole and their content coding
/// undone; two larger capture files are compared as they were received, streamed side by side.
public enum BodyComparison {
    public static let inMemoryLimit = 16 << 20

    public enum Difference: Sendable {
        /// Both JSON: the paths that differ.
        case json([JSONDiff.Change])
        /// Bytes: the sizes, and the first offset where they differ.
        case bytes(a: Int, b: Int, firstDifference: Int)
        /// Only one side has a body to compare (or a size to compare).
        case unknown(String)
    }

    public static func compare(_ a: RecordedBody, _ b: RecordedBody, ignoringJSON: [String]) -> Difference? {
        if a == .none && b == .none { return nil }
        if case .sizeOnly(let x) = a, let y = size(b) { return x == y ? nil : .bytes(a: x, b: y, firstDifference: 0) }
        if case .sizeOnly(let y) = b, let x = size(a) { return x == y ? nil : .bytes(a: x, b: y, firstDifference: 0) }
        if case .file(let x, _) = a, case .file(let y, _) = b,
           max(fileSize(x) ?? 0, fileSize(y) ?? 0) > inMemoryLimit {
            return streamed(x, y)
        }
        guard let x = load(a), let y = load(b) else {
            return .unknown("a body was not recorded on one side")
        }
        if let u = JSONDiff.parse(x), let v = JSONDiff.parse(y) {
            let changes = JSONDiff.changes(u, v, ignoring: ignoringJSON)
            return changes.isEmpty ? nil : .json(changes)
        }
        guard x != y else { return nil }
        return .bytes(a: x.count, b: y.count, firstDifference: firstDifference(x, y))
    }

    private static func size(_ body: RecordedBody) -> Int? {
        switch body {
        case .sizeOnly(let size): return size
        case .bytes(let bytes): return bytes.count
        case .file(let path, _): return fileSize(path)
        case .none: return 0
        }
    }

    private static func fileSize(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
    }

    /// The body's bytes, its content coding undone (HAR keeps bodies decoded).
    static func load(_ body: RecordedBody) -> [UInt8]? {
        switch body {
        case .bytes(let bytes): return bytes
        case .none: return []
        case .sizeOnly: return nil
        case .file(let path, let coding):
            guard let data = FileManager.default.contents(atPath: path), data.count <= inMemoryLimit else { return nil }
            if case .decoded(let plain) = ContentDecoding.decode(Array(data), contentEncoding: coding) { return plain }
            return Array(data)
        }
    }

    /// Two large files, 1 MiB at a time each.
    private static func streamed(_ a: String, _ b: String) -> Difference? {
        guard let x = FileHandle(forReadingAtPath: a), let y = FileHandle(forReadingAtPath: b) else {
            return .unknown("a captured body cannot be read")
        }
        defer { try? x.close(); try? y.close() }
        var offset = 0
        while true {
            let u = (try? x.read(upToCount: 1 << 20)) ?? Data(), v = (try? y.read(upToCount: 1 << 20)) ?? Data()
            if u.isEmpty && v.isEmpty { return nil }
            if u != v {
                return .bytes(a: fileSize(a) ?? 0, b: fileSize(b) ?? 0, firstDifference: offset + firstDifference(Array(u), Array(v)))
            }
            offset += u.count
        }
    }

    /// Where two byte strings that are not equal first differ (the shorter's length when one is
    /// the other's beginning).
    static func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> Int {
        zip(a.indices, zip(a, b)).first { $0.1.0 != $0.1.1 }?.0 ?? min(a.count, b.count)
    }
}
