import HTTPTypes
import LookoutHTTP

/// The secondary cache key of `Vary` (RFC 9111 §4.1).
public enum VaryKey {
    /// The field names a response varies on, lowercased, in order, without duplicates; nil for
    /// `Vary: *`, which no later request matches.
    public static func names(_ responseFields: HTTPFields) -> [String]? {
        var names: [String] = []
        for line in responseFields[values: .vary] {
            for element in line.split(separator: ",") {
                let name = element.trimmingOWS().lowercased()
                if name == "*" { return nil }
                if !name.isEmpty && !names.contains(name) { names.append(name) }
            }
        }
        return names
    }

    /// The request's normalised values of `names`, one per name: its lines combined, list
    /// elements trimmed and joined by ","; nil where the request lacks the field (absent and
    /// empty differ).
    public static func values(of names: [String], in requestFields: HTTPFields) -> [String?] {
        names.map { name in
            guard let fieldName = HTTPField.Name(name) else { return nil }
            let lines = requestFields[values: fieldName]
            if lines.isEmpty { return nil }
            return lines.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
                .map { String($0.trimmingOWS()) }
                .joined(separator: ",")
        }
    }

    /// One string for a set of values, for naming a variant on disk.
    public static func variantKey(names: [String], values: [String?]) -> String {
        zip(names, values).map { "\($0)=\($1.map { "\"\($0)\"" } ?? "-")" }.joined(separator: "\n")
    }
}
