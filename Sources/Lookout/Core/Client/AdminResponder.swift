import HTTPTypes
import LookoutHTTP

/// Answers origin-form requests addressed to the proxy itself: a status page and a health check.
enum AdminResponder {
    /// The response for `path`, or nil when the path is not served (the client is told to use the proxy as a proxy).
    static func response(for head: RequestHead, path: String, session: Session, keepAlive: Bool) -> (status: Int, bytes: [UInt8])? {
        let parts = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let pathOnly = parts.first.map(String.init) ?? path
        let body: String
        var status = 200
        var contentType = "text/plain; charset=utf-8"
        switch (head.method, pathOnly) {
        case (.get, "/healthz"), (.head, "/healthz"):
            body = "ok\n"
        case (.get, "/"), (.head, "/"):
            body = statusPage(session)
        default:
            guard let answer = CacheAdminEndpoints.answer(method: head.method, path: pathOnly,
                                                          query: parts.count > 1 ? String(parts[1]) : nil,
                                                          fields: head.headerFields, session: session) else { return nil }
            body = answer.json + "\n"
            status = answer.status
            contentType = "application/json"
        }
        let bodyBytes = Array(body.utf8)
        var fields = HTTPFields()
        fields[.contentType] = contentType
        fields[.contentLength] = String(bodyBytes.count)
        fields[.cacheControl] = "no-store"
        if !keepAlive { fields[.connection] = "close" }
        let reason = HTTPResponse.Status(code: status).reasonPhrase
        var bytes = HTTPSerializer.responseHead(status: status, reasonPhrase: reason, version: .http1_1, headerFields: fields)
        if head.method != .head { bytes += bodyBytes }
        return (status, bytes)
    }

    private static func reachabilityLine(_ session: Session) -> String {
        guard let reachability = session.reachability else { return "not watched (reachability.enabled: false)" }
        let (status, interface) = reachability.snapshot
        return interface.map { "\(status) (\($0))" } ?? status
    }

    private static func cacheLine(_ session: Session) -> String {
        guard let cache = session.cache else { return "off (cache.enabled: false)" }
        let s = cache.store.statistics
        return "\(s.objects) objects, \(s.bytes) bytes, hit ratio \(Int(cache.hitRatio * 100)) % (GET /cache/stats)"
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
        cache: \(cacheLine(session))

        Use me as a proxy: curl -x http://HOST:PORT http://example.com/

        """
    }
}
