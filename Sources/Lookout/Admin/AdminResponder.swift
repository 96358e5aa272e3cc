import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutAdmin
import LookoutModel
import LookoutUpstream

/// Answers origin-form requests addressed to the proxy itself: a status page, a health check, the
/// cache's endpoints, then the session's `AdminEndpoint`s (`/metrics`).
enum AdminResponder {
    /// An answer ready to write: the head (and whole body), and for a streamed body its producer.
    struct Response {
        var status: Int
        var bytes: [UInt8]
        var stream: AdminStreamProducer?
        /// Set instead of the rest: the answer comes later (`AdminAnswer.deferred`).
        var deferred: (@Sendable (_ reply: @escaping @Sendable (AdminAnswer) -> Void) -> Void)?
    }

    /// The response for `path`, or nil when the path is not served (the client is told to use the proxy as a proxy).
    /// `setCookie`: the `admin.token` cookie for a browser that brought the token in the query.
    /// `listener`: the proxy listener the request came to, which `/proxy.pac` names (nil on an
    /// admin-only listener, which serves no proxy and so no proxy auto-config).
    static func response(for head: RequestHead, path: String, admin: AdminContext, status source: any AdminStatusSource,
                         keepAlive: Bool, listener: String? = nil,
                         clientAddress: String, setCookie: String?, body: [UInt8] = []) -> Response? {
        let parts = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let pathOnly = parts.first.map(String.init) ?? path
        let plainText = "text/plain; charset=utf-8"
        switch (head.method, pathOnly) {
        case (.get, "/healthz"), (.head, "/healthz"):
            return respond(head, status: 200, contentType: plainText, body: Array("ok\n".utf8), keepAlive: keepAlive,
                           setCookie: setCookie)
        case (.get, "/proxy.pac"), (.head, "/proxy.pac"):
            guard let listener else { return nil }
            return respond(head, status: 200, contentType: ProxyAutoConfig.contentType,
                           body: Array(ProxyAutoConfig.script(listener: listener, direct: admin.pacDirect,
                                                                        socks: source.socksListener).utf8),
                           keepAlive: keepAlive, setCookie: setCookie)
        case (.post, "/admin/reload"):
            return respond(head, source.reloadFromAdmin(), keepAlive: keepAlive, setCookie: setCookie)
        case (.post, "/capture/namespaces"):
            return respond(head, source.captureNamespace(body: body), keepAlive: keepAlive, setCookie: setCookie)
        case (.get, "/"), (.head, "/"):
            return respond(head, status: 200, contentType: plainText, body: Array(statusPage(admin, source).utf8),
                           keepAlive: keepAlive, setCookie: setCookie)
        default:
            let query = parts.count > 1 ? String(parts[1]) : nil
            if let answer = CacheAdminEndpoints.answer(method: head.method, path: pathOnly, query: query,
                                                       fields: head.headerFields, admin: admin) {
                return respond(head, status: answer.status, contentType: "application/json",
                               body: Array((answer.json + "\n").utf8), keepAlive: keepAlive, setCookie: setCookie)
            }
            let request = AdminRequest(method: head.method, path: pathOnly, query: query,
                                       headerFields: head.headerFields, statistics: source.statistics,
                                       clientAddress: clientAddress, exchanges: source, breakpoints: source, body: body)
            // Breakpoints and held exchanges are the core's own, whatever else is configured.
            if let answer = OperatorEndpoint.answer(request) {
                return respond(head, answer, keepAlive: keepAlive, setCookie: setCookie)
            }
            for endpoint in admin.endpoints {
                if let answer = endpoint.answer(request) {
                    return respond(head, answer, keepAlive: keepAlive, setCookie: setCookie)
                }
            }
            return nil
        }
    }

    /// The framed response: length, `no-store`, and `Connection: close` unless the connection stays.
    private static func respond(_ head: RequestHead, status: Int, contentType: String, body bodyBytes: [UInt8],
                                keepAlive: Bool, setCookie: String?) -> Response {
        respond(head, AdminAnswer(status: status, contentType: contentType, body: bodyBytes), keepAlive: keepAlive,
                setCookie: setCookie)
    }

    /// A streamed body is close-delimited (RFC 9112 §6.3): the connection ends with it.
    static func respond(_ head: RequestHead, _ answer: AdminAnswer, keepAlive: Bool, setCookie: String?) -> Response {
        if let deferred = answer.deferred {
            return Response(status: 0, bytes: [], deferred: deferred)
        }
        var fields = answer.headerFields
        fields[.contentType] = answer.contentType
        if answer.stream == nil {
            fields[.contentLength] = String(answer.body.count)
        } else if let length = answer.streamLength {
            fields[.contentLength] = String(length)
        }
        fields[.cacheControl] = "no-store"
        if let setCookie { fields[.setCookie] = setCookie }
        // A HEAD gets the head alone, so the connection may stay for the next request.
        let streams = answer.stream != nil && head.method != .head
        if !keepAlive || streams { fields[.connection] = "close" }
        let reason = HTTPResponse.Status(code: answer.status).reasonPhrase
        var bytes = HTTPSerializer.responseHead(status: answer.status, reasonPhrase: reason, version: .http1_1,
                                                headerFields: fields)
        if head.method == .head {
            // The body is never started: let its producer release what it holds (a file).
            answer.stream?.stop()
            return Response(status: answer.status, bytes: bytes)
        }
        bytes += answer.body
        return Response(status: answer.status, bytes: bytes, stream: answer.stream)
    }

    private static func reachabilityLine(_ source: any AdminStatusSource) -> String {
        guard let (status, interface) = source.reachabilitySnapshot else { return "not watched (reachability.enabled: false)" }
        return interface.map { "\(status) (\($0))" } ?? status
    }

    private static func spinLine(_ admin: AdminContext, _ statistics: SessionStatistics) -> String {
        let micros = admin.spinMicroseconds
        if micros == 0 { return "0 (event loops sleep as soon as they are idle)" }
        if !EventLoopGroup.canSpin { return "\(micros), unused: no /proc/pressure/cpu" }
        return "\(micros) (while traffic is dense and no thread waits for a CPU); "
            + "polled \(statistics.loopSpins) times, \(statistics.loopSpinNanoseconds / 1000) µs in all"
    }

    private static func cacheLine(_ admin: AdminContext) -> String {
        guard let cache = admin.cache else { return "off (cache.enabled: false)" }
        let s = cache.store.statistics
        return "\(s.objects) objects, \(s.bytes) bytes, hit ratio \(Int(cache.hitRatio * 100)) % (GET /cache/stats)"
    }

    private static func statusPage(_ admin: AdminContext, _ source: any AdminStatusSource) -> String {
        let uptime = Instant.now().milliseconds(since: admin.startTime) / 1000
        let statistics = source.statistics
        let endpointLines = admin.endpoints.compactMap(\.statusLine).map { $0 + "\n" }.joined()
        return """
        Lookout \(LookoutVersion.string): an event-monitoring HTTP forward proxy
        uptime_seconds: \(Int(uptime))
        event_loops: \(admin.loopCount)
        event_loop_spin_us: \(spinLine(admin, statistics))
        open_connections: \(statistics.openClientConnections)
        open_upstream_connections: \(statistics.openUpstreamConnections)
        exchanges_in_flight: \(statistics.exchangesInFlight)
        exchanges_finished: \(statistics.exchangesFinished)
        dropped_events: \(statistics.droppedEvents)
        reachability: \(reachabilityLine(source))
        cache: \(cacheLine(admin))
        \(endpointLines)
        Use me as a proxy: curl -x http://HOST:PORT http://example.com/

        """
    }
}
