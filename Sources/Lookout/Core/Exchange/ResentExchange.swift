#if canImport(Glibc)
import Glibc
#endif
import HTTPTypes
import LookoutHTTP
import LookoutModel
import LookoutTLS
import LookoutUpstream

/// A finished exchange's request sent again (`POST /exchanges/ID/resend`) as a new exchange through
/// the whole pipeline — rules, trust, retries, cache, capture, records — with the operator as its
/// client. The body comes from the edits, or from the first exchange's capture file, read in
/// 64 KiB pieces as the exchange takes them; the response is read and dropped (its record, and
/// its capture when a rule asks for one, are what the operator looks at).
final class ResentExchange: DetachedExchange, @unchecked Sendable {  // confined to `context.loop.queue`
    private var body: Body
    private var bodyEnded = false
    /// Called when the exchange ends (a replay hands its answer over then).
    private var ended: (() -> Void)?

    private enum Body {
        case none
        case memory([UInt8], sent: Bool)
        case file(descriptor: Int32, remaining: UInt64)
    }

    /// Starts the resend of `entry` with `edits`: the new exchange's id, or why it cannot be sent.
    static func start(_ entry: RecentRequests.Entry, edits: ExchangeEdits, operatorAddress: String,
                      environment: ExchangeEnvironment, context: LoopContext) -> Result<UInt64, ResendProblem> {
        let url = edits.url ?? entry.url
        guard case .absolute(let scheme, _, _, _)? = RequestTarget.parseAbsolute(url),
              scheme == "http" || scheme == "https" else {
            return .failure(ResendProblem(status: 400, "url: \"\(url)\" is not an absolute http or https URL"))
        }
        var head = entry.head
        if let text = edits.method {
            guard let method = HTTPRequest.Method(text), text != "CONNECT" else {
                return .failure(ResendProblem(status: 400, "method: \"\(text)\" is not a method a request can be sent with"))
            }
            head.method = method
        }
        var fields = head.headerFields
        if let problem = edits.apply(to: &fields) { return .failure(ResendProblem(status: 400, problem)) }
        let body: Body
        switch Self.body(of: entry, edits: edits) {
        case .success(let found): body = found
        case .failure(let problem): return .failure(problem)
        }
        head.headerFields = fields
        let resend = ResentExchange(body: body)
        let started = resend.launch(head: head, url: url, kind: entry.kind, client: DiscardingResponseWriter(),
                                    clientAddress: operatorAddress, environment: environment, context: context) { exchange in
            exchange.summary.resentFrom = entry.id
            exchange.summary.resentBy = operatorAddress
            if !edits.isEmpty { exchange.summary.modifiedBy.append("operator:\(operatorAddress)") }
        }
        return started.mapError { ResendProblem(status: 400, $0.message) }
    }

    /// Starts a request of a recording (`lookout replay`): its answer goes to `completion`.
    static func replay(_ request: ReplayRequest, environment: ExchangeEnvironment, context: LoopContext,
                       completion: @escaping @Sendable (ReplayResponse) -> Void) -> Result<UInt64, ReplayRefusal> {
        let body: Body
        switch request.body {
        case .none: body = .none
        case .bytes(let bytes): body = .memory(bytes, sent: false)
        case .file(let path):
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            var status = stat()
            guard descriptor >= 0, fstat(descriptor, &status) == 0 else {
                if descriptor >= 0 { close(descriptor) }
                return .failure(ReplayRefusal(message: "the recorded request body \(path) cannot be read: \(String(cString: strerror(errno)))"))
            }
            body = .file(descriptor: descriptor, remaining: UInt64(status.st_size))
        }
        guard let method = HTTPRequest.Method(request.method) else {
            return .failure(ReplayRefusal(message: "\(request.method) is not a method"))
        }
        var fields = HTTPFields()
        for (name, value) in request.headers {
            guard let field = HTTPField.Name(name), HTTPField.isValidValue(value) else { continue }
            fields.append(HTTPField(name: field, value: value))
        }
        HopByHopHeaders.remove(from: &fields)
        let head = RequestHead(method: method, rawTarget: request.url, target: .asterisk, version: .http1_1, headerFields: fields,
                               framing: .none, keepAlive: true, expectsContinue: false, upgrade: nil, headLength: 0)
        let replay = ResentExchange(body: body)
        let writer = CollectingResponseWriter(completion: completion)
        replay.ended = { writer.finish() }
        return replay.launch(head: head, url: request.url, kind: request.url.hasPrefix("https:") ? ExchangeSummary.Kind.intercepted : .http,
                             client: writer, clientAddress: "replay", environment: environment, context: context) { _ in }
    }

    /// Frames the body in the head, then starts the exchange on this loop and sends the body.
    private func launch(head: RequestHead, url: String, kind: ExchangeSummary.Kind, client: ClientResponseWriter,
                        clientAddress: String, environment: ExchangeEnvironment, context: LoopContext,
                        configure: (Exchange) -> Void) -> Result<UInt64, ReplayRefusal> {
        guard case .absolute(let scheme, let host, let port, let path)? = RequestTarget.parseAbsolute(url),
              scheme == "http" || scheme == "https" else {
            return .failure(ReplayRefusal(message: "url: \"\(url)\" is not an absolute http or https URL"))
        }
        var head = head
        var fields = head.headerFields
        switch body {
        case .none:
            head.framing = .none
            fields[.contentLength] = nil
        case .memory(let bytes, _):
            head.framing = .contentLength(UInt64(bytes.count))
            fields[.contentLength] = String(bytes.count)
        case .file(_, let size):
            head.framing = .contentLength(size)
            fields[.contentLength] = String(size)
        }
        fields[.transferEncoding] = nil
        head.contentLengthIsList = false
        head.headerFields = fields
        head.rawTarget = url
        head.expectsContinue = false
        head.keepAlive = true
        let secure = scheme == "https"
        let key = HostRuleKey(host)
        let origin = Origin(host: host, port: port ?? (secure ? 443 : 80), isSecure: secure,
                            parent: environment.parentProxy(for: key), ruleKey: key)
        head.target = .absolute(scheme: scheme, host: host, port: port, path: path)
        let records = ExchangeRecords(environment: environment, connectionID: 0, clientAddress: clientAddress)
        let id = environment.makeRequestID()
        let exchange = Exchange(id: id, context: context, client: client, delegate: self,
                                records: records, head: head, origin: origin, path: path, url: url, kind: kind)
        configure(exchange)
        keep(exchange)
        exchange.start()
        sendBody()
        return .success(id)
    }

    /// The body to send: the edited one, none for a request that had none, or the capture file
    /// when it holds the whole body.
    private static func body(of entry: RecentRequests.Entry, edits: ExchangeEdits) -> Result<Body, ResendProblem> {
        if let bytes = edits.body { return .success(.memory(bytes, sent: false)) }
        if entry.head.framing == .none || entry.bodyBytes == 0 && entry.capturePath == nil {
            return .success(.none)
        }
        guard let path = entry.capturePath else {
            return .failure(ResendProblem(status: 409, "exchange \(entry.id)'s request body (\(entry.bodyBytes) bytes) was not captured "
                + "(capture.rules), so it cannot be sent again; send one with \"body\" or \"body_base64\""))
        }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        var status = stat()
        guard descriptor >= 0, fstat(descriptor, &status) == 0 else {
            if descriptor >= 0 { close(descriptor) }
            return .failure(ResendProblem(status: 409, "exchange \(entry.id)'s captured request body \(path) cannot be read: "
                + String(cString: strerror(errno))))
        }
        guard UInt64(status.st_size) == entry.bodyBytes else {
            close(descriptor)
            return .failure(ResendProblem(status: 409, "exchange \(entry.id)'s captured request body holds \(status.st_size) of its "
                + "\(entry.bodyBytes) bytes (max_body_bytes), so it cannot be sent again whole"))
        }
        return .success(.file(descriptor: descriptor, remaining: entry.bodyBytes))
    }

    private init(body: Body) {
        self.body = body
    }

    deinit {
        if case .file(let descriptor, _) = body { close(descriptor) }
    }

    /// Gives the exchange body bytes while it takes them, then the end.
    private func sendBody() {
        guard let exchange else { return }
        switch body {
        case .none:
            return
        case .memory(let bytes, let sent):
            guard !sent, exchange.acceptsRequestBody else { return }
            body = .memory([], sent: true)
            bytes.withUnsafeBytes { exchange.clientSentBody($0) }
            exchange.clientFinishedBody(trailers: nil)
        case .file(let descriptor, var remaining):
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while remaining > 0, self.exchange != nil, exchange.acceptsRequestBody {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, Int(min(UInt64($0.count), remaining))) }
                guard count > 0 else {
                    exchange.clientSentInvalidBody(.clientFailed(reason: .closed("the captured body ended early")))
                    return
                }
                remaining -= UInt64(count)
                body = .file(descriptor: descriptor, remaining: remaining)
                buffer.withUnsafeBytes { exchange.clientSentBody(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            }
            if remaining == 0, !bodyEnded, self.exchange != nil, !exchange.finished {
                bodyEnded = true
                exchange.clientFinishedBody(trailers: nil)
            }
        }
    }

    override func exchangeCanTakeInput() { sendBody() }
    override func exchangeEnded() { ended?() }
}

/// Why a resend cannot go (the status the admin endpoint answers with).
struct ResendProblem: Error {
    let status: Int
    let message: String
    init(status: Int, _ message: String) {
        self.status = status
        self.message = message
    }
}
