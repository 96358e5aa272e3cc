import LookoutTLS
import LookoutModel
import LookoutUpstream

/// Resolving a `Location` against the URL of the request it answers (RFC 3986 §5.2), for the
/// `http` and `https` URLs a proxy follows. Fragments are dropped: they never go on the wire.
package enum URLReference {
    /// `reference` made absolute against `base` (an absolute `http(s)://authority/path` URL).
    package static func resolve(_ reference: String, against base: String) -> String {
        var reference = Substring(reference.trimmingASCIIWhitespace())
        if let hash = reference.firstIndex(of: "#") { reference = reference[..<hash] }
        let (baseScheme, baseAuthority, basePath, _) = split(Substring(base))
        if let colon = reference.firstIndex(of: ":"), isScheme(reference[..<colon]) {
            let (scheme, authority, path, query) = split(reference)
            return compose(scheme, authority, removeDotSegments(path.isEmpty ? "/" : path), query)
        }
        if reference.hasPrefix("//") {
            let (_, authority, path, query) = split(Substring(baseScheme + ":") + reference)
            return compose(baseScheme, authority, removeDotSegments(path.isEmpty ? "/" : path), query)
        }
        var path = reference
        var query: Substring?
        if let question = reference.firstIndex(of: "?") {
            path = reference[..<question]
            query = reference[reference.index(after: question)...]
        }
        if path.isEmpty {
            // Same path; a new query or none at all (§5.2.2).
            let (_, _, _, baseQuery) = split(Substring(base))
            return compose(baseScheme, baseAuthority, basePath, query ?? baseQuery)
        }
        if path.hasPrefix("/") {
            return compose(baseScheme, baseAuthority, removeDotSegments(path), query)
        }
        // Merge (§5.2.3): the base path up to its last "/", then the reference.
        let directory = basePath[...(basePath.lastIndex(of: "/") ?? basePath.startIndex)]
        let merged = (basePath.isEmpty ? "/" : String(directory)) + path
        return compose(baseScheme, baseAuthority, removeDotSegments(Substring(merged)), query)
    }

    /// scheme (lowercased), authority, path, query of an absolute URL.
    private static func split(_ url: Substring) -> (String, Substring, Substring, Substring?) {
        guard let colon = url.firstIndex(of: ":") else { return ("", "", url, nil) }
        let scheme = url[..<colon].lowercased()
        var rest = url[url.index(after: colon)...]
        var authority: Substring = ""
        if rest.hasPrefix("//") {
            rest = rest.dropFirst(2)
            let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
            authority = rest[..<end]
            rest = rest[end...]
        }
        if let question = rest.firstIndex(of: "?") {
            return (scheme, authority, rest[..<question], rest[rest.index(after: question)...])
        }
        return (scheme, authority, rest, nil)
    }

    private static func compose(_ scheme: String, _ authority: Substring, _ path: Substring, _ query: Substring?) -> String {
        var url = scheme + "://" + authority + path
        if let query { url += "?" + query }
        return url
    }

    private static func isScheme(_ text: Substring) -> Bool {
        guard let first = text.first, first.isASCII, first.isLetter else { return false }
        return text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") }
    }

    /// RFC 3986 §5.2.4.
    static func removeDotSegments(_ path: Substring) -> Substring {
        guard path.contains(".") else { return path }
        var input = path
        var output: [Substring] = []
        while !input.isEmpty {
            if input.hasPrefix("../") { input = input.dropFirst(3) }
            else if input.hasPrefix("./") { input = input.dropFirst(2) }
            else if input.hasPrefix("/./") { input = input.dropFirst(2) }
            else if input == "/." { input = "/" }
            else if input.hasPrefix("/../") {
                input = input.dropFirst(3)
                if !output.isEmpty { output.removeLast() }
            } else if input == "/.." {
                input = "/"
                if !output.isEmpty { output.removeLast() }
            } else if input == "." || input == ".." {
                input = ""
            } else {
                let start = input.hasPrefix("/") ? input.index(after: input.startIndex) : input.startIndex
                let end = input[start...].firstIndex(of: "/") ?? input.endIndex
                output.append(input[..<end])
                input = input[end...]
            }
        }
        return Substring(output.joined())
    }
}
