import LookoutHTTP
import LookoutIO
import LookoutModel
import LookoutTLS
import LookoutUpstream

/// A CONNECT waiting for its ClientHello (`interception.learn_passthrough`). A class: every
/// client connection has the slot and few ever fill it, so an idle connection holds a pointer,
/// not the state inline.
final class PendingHello {  // used on the client connection's `loop.queue` only
    let head: RequestHead
    let requestID: UInt64
    let origin: Origin
    let engine: TLSEngine
    let plain: Connection
    var gatherer = FirstRecordGatherer()
    var bytes: [UInt8] = []

    init(head: RequestHead, requestID: UInt64, origin: Origin, engine: TLSEngine, plain: Connection) {
        self.head = head
        self.requestID = requestID
        self.origin = origin
        self.engine = engine
        self.plain = plain
    }
}

/// Interception that learns who pins: a client that refuses Lookout's certificate is recorded
/// (`tls.clientRejectedInterception`) and, with `interception.learn_passthrough`, its (JA4, host)
/// pair is tunnelled blindly from its next connection on. For a host with such pairs, the
/// ClientHello is read before choosing, from the bytes behind the `200` — nothing is terminated
/// until the choice is made.
extension ClientConnection {
    /// Whether this CONNECT must read its ClientHello before interception starts.
    func waitsForHello(host: String) -> Bool {
        environment.passthrough?.hasHost(host) ?? false
    }

    func awaitClientHello(_ head: RequestHead, requestID: UInt64, origin: Origin, engine: TLSEngine, plain: Connection) {
        timer.cancel()
        plain.write(Tunnel.established)
        pendingHello = PendingHello(head: head, requestID: requestID, origin: origin, engine: engine, plain: plain)
        let early = stash
        stash = []
        if !early.isEmpty { early.withUnsafeBytes { helloArrived($0) } }
        guard pendingHello != nil else { return }
        let limit = environment.timeouts.tlsHandshake
        connection.loop.execute(after: limit) { [weak self] in
            guard let self, let pending = pendingHello, pending.requestID == requestID else { return }
            pendingHello = nil
            interceptionFailed(.clientFailed(reason: .tlsHandshakeTimedOut(after: limit)), head: pending.head,
                               requestID: requestID, origin: pending.origin, serverName: nil, start: .now())
        }
        plain.resumeReading()
    }

    /// Bytes of the client's first record; once it is whole: a blind tunnel for a learned pair,
    /// interception (with those bytes as its start) for the rest.
    func helloArrived(_ bytes: UnsafeRawBufferPointer) {
        guard let pending = pendingHello else { return }
        pending.bytes += bytes
        let ja4 = pending.gatherer.ja4(after: bytes)
        guard ja4 != nil || pending.gatherer.isDone else { return }
        pendingHello = nil
        pending.plain.pauseReading()
        if let ja4, environment.passthrough?.contains(ja4: ja4, host: pending.origin.host) ?? false {
            let tunnel = Tunnel(id: pending.requestID, head: pending.head, origin: pending.origin, client: connection,
                                delegate: self, environment: environment.exchanges, context: context, records: records)
            tunnel.alreadyEstablished = true
            tunnel.initialClientBytes = pending.bytes
            tunnel.setClientJA4(ja4)
            self.tunnel = tunnel
            tunnel.start()
            return
        }
        stash = pending.bytes
        beginInterception(pending.head, requestID: pending.requestID, origin: pending.origin, engine: pending.engine,
                          plain: pending.plain, established: true)
    }

    /// After an intercepted handshake failed: whether the client refused Lookout's certificate,
    /// and the alert (or "closed") that said so.
    static func refusal(of failure: TLSHandshakeFailure, sawHello: Bool) -> String? {
        switch failure {
        case .tls(let error):
            guard let alert = error.alertReceived?.lowercased() else { return nil }
            let refusals = ["unknown ca", "bad certificate", "certificate unknown", "unsupported certificate",
                            "certificate expired", "certificate revoked", "access denied"]
            return refusals.contains { alert.contains($0) } ? alert : nil
        case .closed(let reason):
            // Closing after its ClientHello, before finishing: a client that saw the certificate and left.
            return sawHello ? "closed: \(reason)" : nil
        case .timedOut:
            return nil
        }
    }

    /// Records a refusal and, when learning, the pair.
    func clientRejected(serverName: String?, ja4: String?, alert: String, origin: Origin) {
        var learned = false
        if let ja4, let store = environment.passthrough { learned = store.learn(ja4: ja4, host: origin.host, alert: alert) }
        environment.exchanges.emit(EventContext(connectionID: id),
                                   TLSClientRejectedInterception(serverName: serverName, ja4: ja4, alert: alert, learned: learned))
    }
}
