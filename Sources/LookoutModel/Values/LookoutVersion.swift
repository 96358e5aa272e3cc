/// Lookout's version, as `lookout --version`, the status page, HAR's `creator` and
/// `lookout_build_info` give it.
public enum LookoutVersion {
    public static let string = "0.1.0"
}
