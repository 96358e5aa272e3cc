/// Whether a trust rule's failures block the connection.
public enum TrustMode: String, Sendable, Hashable {
    /// A failed evaluation refuses the upstream connection (the default).
    case enforce = "enforce"
    /// A failed evaluation is reported (logged as a violation) and the connection proceeds.
    case reportOnly = "report-only"
}
