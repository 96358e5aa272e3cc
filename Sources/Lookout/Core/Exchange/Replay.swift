import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutModel

/// One request of a recording sent again (`lookout replay`).
public struct ReplayRequest: Sendable {
    public enum Body: Sendable {
        case none
        case bytes([UInt8])
        /// A capture file, streamed.
        case file(String)
    }

    public var method: String
    public var url: String
    public var headers: [(name: String, value: String)]
    public var body: Body

    public init(method: String, url: String, headers: [(name: String, value: String)], body: Body) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// What a replayed request got back.
public struct ReplayResponse: Sendable {
    public var status: Int?
    public var headers: [(name: String, value: String)] = []
    /// The body as received, up to `CollectingResponseWriter.limit` bytes; `bodyBytes` counts all of it.
    public var body: [UInt8] = []
    public var bodyBytes = 0
    /// Lookout's error when there was no answer (or it broke off).
    public var error: ProxyError?
}

/// Where a replayed exchange's response goes: kept (bounded) for the comparison, then handed over
/// once when the exchange ends.
final class CollectingResponseWriter: ClientResponseWriter, @unchecked Sendable {  // confined to the exchange's loop queue
    /// The most of a body kept to compare; the rest is counted.
    static let limit = 16 << 20
    private var response = ReplayResponse()
    private var completion: (@Sendable (ReplayResponse) -> Void)?

    init(completion: @escaping @Sendable (ReplayResponse) -> Void) {
        self.completion = completion
    }

    func writeInformational(status: Int, reasonPhrase: String, fields: HTTPFields) {}
    func writeHead(status: Int, reasonPhrase: String, fields: HTTPFields, framing: ClientFraming) {
        response.status = status
        response.headers = fields.map { ($0.name.canonicalName, $0.value) }
    }
    func writeBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        response.bodyBytes += bytes.count
        let room = Self.limit - response.body.count
        if room > 0 { response.body.append(contentsOf: bytes.prefix(room)) }
        return true
    }
    func writeEnd(trailers: HTTPFields?) {}
    func writeError(_ error: ProxyError, requestID: UInt64) {
        response.error = error
        response.status = error.status
    }
    var switchableStream: ByteStream? { nil }

    func finish() {
        guard let completion else { return }
        self.completion = nil
        completion(response)
    }
}
