import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutModel
import LookoutUpstream

/// A revalidation nobody waits for (RFC 5861 §3, stale-while-revalidate): the stale response was
/// served, and this exchange asks the origin again so the store is fresh for the next request.
/// It is an ordinary exchange — same trust, pool, rules and events, its own summary record with
/// client `"background"` — whose response goes only into the store.
final class BackgroundRevalidation: DetachedExchange, @unchecked Sendable {  // confined to `context.loop.queue`
    private let environment: ExchangeEnvironment
    private let url: String

    /// Starts one unless this URL is already being revalidated.
    static func start(environment: ExchangeEnvironment, context: LoopContext, url: String, origin: Origin, path: String,
                      requestFields: HTTPFields) {
        guard let cache = environment.cache, cache.beginRevalidating(url) else { return }
        let revalidation = BackgroundRevalidation(environment: environment, url: url)
        var fields = requestFields
        // Its own conditions come from the stored response; the client's are not its business.
        for name in [HTTPField.Name.ifNoneMatch, .ifModifiedSince, .range, .ifRange, .cacheControl] { fields[name] = nil }
        fields[HTTPField.Name("Pragma")!] = nil
        let head = RequestHead(method: .get, rawTarget: url,
                               target: .absolute(scheme: origin.scheme, host: origin.host, port: origin.port, path: path),
                               version: .http1_1, headerFields: fields, framing: .none, keepAlive: true,
                               expectsContinue: false, upgrade: nil, headLength: 0)
        let records = ExchangeRecords(environment: environment, connectionID: 0, clientAddress: "background")
        let exchange = Exchange(id: environment.makeRequestID(), context: context,
                                client: DiscardingResponseWriter(), delegate: revalidation, records: records,
                                head: head, origin: origin, path: path, url: url, kind: .http, background: true)
        revalidation.keep(exchange)
        exchange.start()
    }

    private init(environment: ExchangeEnvironment, url: String) {
        self.environment = environment
        self.url = url
    }

    override func exchangeEnded() {
        environment.cache?.endRevalidating(url)
    }
}

/// Where a background exchange's response goes: nowhere (the store has its copy).
final class DiscardingResponseWriter: ClientResponseWriter {  // confined to the exchange's loop queue
    func writeInformational(status: Int, reasonPhrase: String, fields: HTTPFields) {}
    func writeHead(status: Int, reasonPhrase: String, fields: HTTPFields, framing: ClientFraming) {}
    func writeBody(_ bytes: UnsafeRawBufferPointer) -> Bool { true }
    func writeEnd(trailers: HTTPFields?) {}
    func writeError(_ error: ProxyError, requestID: UInt64) {}
    var switchableStream: ByteStream? { nil }
}
