import LookoutHTTP

/// What to do with a redirect response from the upstream.
public enum RedirectDecision: String, Sendable {
    /// Hand the 3xx to the client unchanged, as a proxy normally does.
    case passThrough = "pass_through"
}

/// Decides how redirects are handled, like Alamofire's `RedirectHandler`.
public protocol RedirectHandler: Sendable {
    func decision(forStatus status: Int, location: String, requestURL: String) -> RedirectDecision
}

/// The stock redirect policies.
public struct Redirector: RedirectHandler {
    private let behavior: RedirectDecision

    /// Every redirect goes to the client as it came.
    public static let passThrough = Redirector(behavior: .passThrough)

    public func decision(forStatus status: Int, location: String, requestURL: String) -> RedirectDecision {
        behavior
    }
}
