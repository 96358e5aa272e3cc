import Lookout
import LookoutTLS
import LookoutModel
import LookoutUpstream

/// `map.remote`: the request goes to another origin, the rest of its path kept. First in the
/// order, so every later stage and the upstream see the mapped request.
final class MapRemoteStage: ExchangeStage, Sendable {
    private let rule: MapRemoteRule

    init(rule: MapRemoteRule) {
        self.rule = rule
    }

    func requestHead(_ exchange: StageContext) -> StageVerdict {
        let route = exchange.facts.route
        let path = rule.targetPath(for: route.path)
        let target = Origin(host: rule.toHost, port: rule.toPort, isSecure: rule.toIsSecure)
        let mappedURL = target.url(path: path)
        let url = exchange.facts.url
        exchange.emit(RequestDidMapRemote(from: rule.from.text, to: rule.toText, url: url,
                                          mappedURL: mappedURL, preserveHost: rule.preserveHost))
        if route.origin.isSecure && !target.isSecure && !rule.allowDowngrade {
            return .fail(.mapFailed(reason: .downgradeRefused(from: url, to: mappedURL)))
        }
        exchange.record(.mapped(from: url, to: mappedURL))
        exchange.reroute(to: StageRoute(origin: target, path: path, url: mappedURL),
                         hostField: rule.preserveHost ? route.origin.hostFieldValue : nil)
        return .proceed
    }
}
