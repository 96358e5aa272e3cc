/// The Public Suffix List (publicsuffix.org), read from Debian's `publicsuffix` package, so a
/// wildcard certificate name over a public suffix (`*.co.uk`, `*.s3.amazonaws.com`) never
/// names a host (CA/Browser Forum Baseline Requirements §3.2.2.6). Without the file there is no
/// list and no name is a public suffix but a single label.
public struct PublicSuffixList: Sendable {
    public static let debianPath = "/usr/share/publicsuffix/public_suffix_list.dat"
    /// Read once, on first use.
    public static let system = PublicSuffixList(file: debianPath)

    private var rules: Set<String> = []
    private var wildcards: Set<String> = []
    private var exceptions: Set<String> = []
    public private(set) var isLoaded = false

    public init(file: String) {
        guard let bytes = try? FileIO.read(file) else {
            self.init(text: "")
            isLoaded = false
            return
        }
        self.init(text: String(decoding: bytes, as: UTF8.self))
    }

    /// The list's format: one rule per line, `//` comments, `*.` wildcards, `!` exceptions.
    public init(text: String) {
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            guard let rule = line.split(separator: " ", maxSplits: 1).first, !rule.hasPrefix("//") else { continue }
            let lower = rule.lowercased()
            if lower.hasPrefix("!") {
                exceptions.insert(String(lower.dropFirst()))
            } else if lower.hasPrefix("*.") {
                wildcards.insert(String(lower.dropFirst(2)))
            } else {
                rules.insert(lower)
            }
        }
        isLoaded = true
    }

    /// Whether `domain` (lowercase, no trailing dot) is itself a public suffix.
    public func isPublicSuffix(_ domain: String) -> Bool {
        guard let dot = domain.firstIndex(of: ".") else { return true }  // the implicit "*" rule
        if exceptions.contains(domain) { return false }
        return rules.contains(domain) || wildcards.contains(String(domain[domain.index(after: dot)...]))
    }
}
