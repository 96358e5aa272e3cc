import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutTLS
import LookoutModel
import LookoutUpstream

/// What the exchange's stages may see and do of it.
extension Exchange: StageContext {
    /// Lent, not copied: a stage that reads one field of it (most read the method) does not
    /// retain every string of the head.
    var requestHead: RequestHead {
        _read { yield head }
    }

    var heldResponse: (status: Int, fields: HTTPFields)? {
        holding.response.map { ($0.status, $0.fields) }
    }

    var facts: ExchangeFacts {
        ExchangeFacts(requestID: id, connectionID: records.connectionID, clientAddress: records.clientAddress,
                      clientKey: traits.clientKey, kind: summary.kind, httpVersion: summary.httpVersion,
                      startedAt: summary.start, loop: context.loop, url: summary.url, route: route,
                      isFirstHop: summary.redirects == 0, asksForUpgrade: traits.upgradeProtocol != nil,
                      modified: !summary.modifiedBy.isEmpty, requestSentAt: upstream.task?.metrics.requestEnd,
                      upstreamTLS: upstream.task?.metrics.tls)
    }

    var route: StageRoute {
        StageRoute(origin: upstream.ledger.request.origin, path: upstream.ledger.upstreamPath, url: upstream.ledger.request.url)
    }

    func emit<Kind: EventKind>(_ make: @autoclosure () -> Kind, for attempt: AttemptFacts?) {
        // The context reads the clock: built only when a monitor takes the record.
        environment.emit(EventContext(connectionID: records.connectionID, requestID: id, taskID: attempt?.taskID), make())
    }

    func reroute(to route: StageRoute, hostField: String?) {
        let key = HostRuleKey(route.origin.host)
        let origin = Origin(host: route.origin.host, port: route.origin.port, isSecure: route.origin.isSecure,
                            parent: environment.parentProxy(for: key), ruleKey: key)
        upstream.ledger.hostOverride = hostField
        upstream.ledger.upstreamPath = route.path
        upstream.ledger.firstHost = origin.host
        upstream.ledger.request = UpstreamRequest(origin: origin, method: head.method, url: route.url, target: route.path, fields: [:],
                                  bodyIsChunked: false, hasBody: head.framing != .none, asksForUpgrade: false,
                                  acceptsTrailers: false)
        // The new origin's rules say whether the body is kept for another attempt (none read yet).
        upload?.keep(replayableBody())
    }

    func revalidateInBackground() {
        BackgroundRevalidation.start(environment: environment, context: context, url: summary.url, origin: upstream.ledger.request.origin,
                                     path: upstream.ledger.upstreamPath, requestFields: head.headerFields)
    }

    func record(_ part: StageRecord) {
        summary.apply(part)
    }

    func attach(_ value: any ExchangeStage, replacing stage: any ExchangeStage) {
        guard let index = stages.firstIndex(where: { $0 === stage }) else { return }
        stages[index] = value
    }

    func shape(with rule: ShapingRule) -> ExchangeShaping {
        let shaping = ExchangeShaping(rule: rule)
        self.shaping = shaping
        if rule.shapesResponse {
            let writer = ShapedResponseWriter(base: response.client, rule: rule, loop: context.loop, delegate: self)
            shaping.response = writer
            response.client = writer
        }
        if head.framing != .none {
            shaping.upload = ExchangeShaping.pacer(kbps: rule.uploadKbps, bytesPerSecond: rule.uploadBytesPerSecond,
                                                   loop: context.loop, sink: { [unowned self] bytes in
                takeBody(bytes)
                return !(upload?.pausedForUpstream ?? false) && !finished
            }, ready: { [unowned self] in
                guard !finished else { return }
                delegate.exchangeCanTakeInput()
            })
        }
        return shaping
    }
}

extension Exchange: ShapedResponseWriterDelegate {
    func shapedWriterCanTakeMore() {
        guard !finished else { return }
        response.resumeResponse(owner: self)
    }

    func shapedWriterReachedResetPoint(after bytes: UInt64) {
        guard !finished, !(shaping?.resetInjected ?? false) else { return }
        fail(injectReset(after: bytes))
    }

    /// `faults.reset_after_bytes` hit: its record, and the error the exchange breaks off with.
    func injectReset(after bytes: UInt64) -> ProxyError {
        shaping?.resetInjected = true
        ExchangeShaping.record(.resetAfterBytes(bytes), rule: shaping?.rule, exchange: self)
        return .injectedFault(reason: .resetAfterBytes(bytes, rule: shaping?.rule.name ?? ""))
    }
}
