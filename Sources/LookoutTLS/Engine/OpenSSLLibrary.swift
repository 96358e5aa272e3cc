import CLookoutSSL

/// The OpenSSL library Lookout is linked against, as reported at run time.
public enum OpenSSLLibrary {
    /// OpenSSL's own version text, e.g. "OpenSSL 3.0.19 1 Jul 2025".
    public static var versionText: String {
        String(cString: OpenSSL_version(OPENSSL_VERSION))
    }

    /// The numeric version (major, minor, patch) of the running library.
    public static var version: (major: Int, minor: Int, patch: Int) {
        (Int(OPENSSL_version_major()), Int(OPENSSL_version_minor()), Int(OPENSSL_version_patch()))
    }

    /// "OpenSSL 3.0.19".
    public static var shortDescription: String {
        let v = version
        return "OpenSSL \(v.major).\(v.minor).\(v.patch)"
    }
}
