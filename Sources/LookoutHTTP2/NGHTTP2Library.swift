import CLookoutNGHTTP2

/// The nghttp2 library Lookout is linked against, as reported at run time.
public enum NGHTTP2Library {
    /// The version string nghttp2 reports, e.g. "1.52.0".
    public static var versionText: String {
        guard let info = nghttp2_version(0), let text = info.pointee.version_str else { return "unknown" }
        return String(cString: text)
    }

    /// "nghttp2 1.52.0".
    public static var shortDescription: String { "nghttp2 \(versionText)" }
}
