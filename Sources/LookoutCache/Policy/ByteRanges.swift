import LookoutHTTP

/// `Range: bytes=…` against a stored representation (RFC 9110 §14.1.2, §14.2).
public enum ByteRanges {
    /// More ranges than this and the field is ignored (RFC 9110 §14.2 lets a server ignore
    /// ranges it finds abusive: many small or overlapping ranges).
    public static let maxRanges = 16

    public enum Outcome: Equatable {
        /// Ignore the field: send the whole representation (not bytes, bad syntax, too many ranges).
        case ignore
        /// 416: no range overlaps the representation.
        case unsatisfiable
        /// 206 with these inclusive (first, last) byte positions, in request order, overlaps coalesced.
        case ranges([ClosedRange<Int64>])
    }

    public static func evaluate(_ field: String, length: Int64) -> Outcome {
        let trimmed = field.drop(while: { $0 == " " })
        guard trimmed.lowercased().hasPrefix("bytes="), length >= 0 else { return .ignore }
        let specs = trimmed.dropFirst("bytes=".count).split(separator: ",", omittingEmptySubsequences: false)
        guard specs.count <= maxRanges else { return .ignore }
        var ranges: [ClosedRange<Int64>] = []
        for rawSpec in specs {
            let spec = rawSpec.trimmingOWS()
            if spec.isEmpty { continue }  // empty list elements are allowed (RFC 9110 §5.6.1)
            guard let dash = spec.firstIndex(of: "-") else { return .ignore }
            let first = spec[..<dash], last = spec[spec.index(after: dash)...]
            func number(_ text: Substring) -> Int64?? {
                if text.isEmpty { return .some(nil) }
                guard text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
                return .some(Int64(text) ?? Int64.max)
            }
            guard let start = number(first), let end = number(last) else { return .ignore }
            switch (start, end) {
            case (nil, nil):
                return .ignore
            case (nil, let suffix?):
                // The last `suffix` bytes.
                if suffix == 0 || length == 0 { continue }
                ranges.append(max(0, length - suffix)...(length - 1))
            case (let from?, let to):
                if let to, to < from { return .ignore }
                if from >= length { continue }
                ranges.append(from...min(to ?? (length - 1), length - 1))
            }
        }
        guard !ranges.isEmpty else { return .unsatisfiable }
        return .ranges(coalesced(ranges))
    }

    /// Overlapping or adjacent ranges merged, keeping the order of first appearance.
    static func coalesced(_ ranges: [ClosedRange<Int64>]) -> [ClosedRange<Int64>] {
        var result: [ClosedRange<Int64>] = []
        for range in ranges {
            var merged = range
            var position = result.count
            while let index = result.firstIndex(where: {
                $0.lowerBound <= merged.upperBound + 1 && merged.lowerBound <= $0.upperBound + 1
            }) {
                merged = min(result[index].lowerBound, merged.lowerBound)...max(result[index].upperBound, merged.upperBound)
                result.remove(at: index)
                position = min(position, index)
                if position > result.count { position = result.count }
            }
            result.insert(merged, at: min(position, result.count))
        }
        return result
    }
}
