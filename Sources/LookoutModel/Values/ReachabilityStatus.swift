/// Whether the machine has a route to the outside, as Alamofire's `NetworkReachabilityManager`
/// reports it: unknown, not reachable, or reachable through a kind of interface.
public enum ReachabilityStatus: Sendable, Equatable, CustomStringConvertible {
    case unknown
    case notReachable
    case reachable(InterfaceKind)

    /// What the default route's interface is, from `/sys/class/net`.
    public enum InterfaceKind: String, Sendable, CaseIterable {
        case ethernet, wireless, cellular, tunnel, other
    }

    /// Every status there is, for exporters that show each one (a gauge per status).
    public static let all: [ReachabilityStatus] = [.unknown, .notReachable] + InterfaceKind.allCases.map { .reachable($0) }

    /// "unknown", "not_reachable", "reachable_via_ethernet", …
    public var description: String {
        switch self {
        case .unknown: return "unknown"
        case .notReachable: return "not_reachable"
        case .reachable(let kind): return "reachable_via_\(kind.rawValue)"
        }
    }
}
