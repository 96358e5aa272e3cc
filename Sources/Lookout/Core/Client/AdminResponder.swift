import HTTPTypes
import LookoutHTTP

/// Answers origin-form requests addressed to the proxy itself: a status page and a health check.
enum AdminResponder {
    /// The response for `path`, or nil when the path is not served (the client is told to use the proxy as a proxy).
    static func response(for head: RequestHead, path: String, session: Session, keepAlive: Bool) -> (status: Int, bytes: [UInt8])? {
        let pathOnly = path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path
        let body: String
        switch (head.method, pathOnly) {
        case (.get, "/healthz"), (.head, "/healthz"):
            body = "ok\n"
        case (.get, "/"), (.head, "/"):
            body = statusPage(session)
        default:
            return nil
        }
        let bodyBytes = Array(body.utf8)
        var fields = HTTPFields()
        fields[.contentType] = "text/plain; charset=utf-8"
        fields[.contentLength] = String(bodyBytes.count)
        fields[.cacheControl] = "no-store"
        if !keepAlive { fields[.connection] = "close" }
        var bytes = HTTPSerializer.responseHead(status: 200, reasonPhrase: "OK", version: .http1_1, headerFields: fields)
        if head.method != .head { bytes += bodyBytes }
        return (200, bytes)
    }

    private static func reachabilityLine(_ session: Session) -> String {
        guard let reachability = session.reachability else { return "not watched (reachability.enabled: false)" }
        let (status, interface) = reachability.snapshot
        return interface.map { "\(status) (\($0))" } ?? status
    }

    private static func statusPage(_ session: Session) -> String {
        let uptime = Instant.now().milliseconds(since: session.startTime) / 1000
        return """
        Lookout \(Session.version): an event-monitoring HTTP forward proxy
        uptime_seconds: \(Int(uptime))
        event_loops: \(session.group.loops.count)
        open_connections: \(session.openConnections.load(ordering: .relaxed))
        exchanges_in_flight: \(session.exchangesInFlight.load(ordering: .relaxed))
        exchanges_finished: \(session.exchangesFinished.load(ordering: .relaxed))
        dropped_events: \(session.monitor.droppedEventCount)
        reachability: \(reachabilityLine(session))

        Use me as a proxy: curl -x http://HOST:PORT http://example.com/

        """
    }
}
