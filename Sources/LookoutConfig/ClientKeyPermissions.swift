#if canImport(Glibc)
import Glibc
#endif

/// A private key file others can read is a leaked key: Lookout warns (it still loads it).
public enum ClientKeyPermissions {
    /// The warning for `path`, or nil when its mode is 0600 or narrower (or it cannot be read).
    public static func warning(for path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 != 0 else { return nil }
        return "\(path) has mode \(String(mode, radix: 8)); a private key should be readable by its owner only (chmod 600)"
    }
}

extension LookoutConfiguration {
    /// What is worth a warning but not a refusal: client keys others can read.
    public var warnings: [String] {
        (trust.rules + [trust.defaultRule]).compactMap { rule in
            rule.clientKey.flatMap(ClientKeyPermissions.warning(for:))
        }
    }
}
