import Lookout
import HTTPTypes
import LookoutHTTP
import LookoutModel
import LookoutRecordings

/// Answers from recordings (`simulate`): the request matched against the recorded ones (its body
/// too when `match.on` names it, held up to 1 MiB to compare), and the recorded answer sent in
/// its place — status, fields, and the body streamed from its capture file — after the recorded
/// wait when `latency: recorded`. The answer goes through the response stages like any other. A
/// miss is `502 simulation_miss` naming the closest recorded request, or goes upstream (`spy`).
final class SimulateStage: ExchangeStage, @unchecked Sendable {  // confined to the exchange's loop queue
    private let simulation: Simulation

    init(simulation: Simulation) {
        self.simulation = simulation
    }

    var heldPhase: String { "simulated" }

    func requestHead(_ exchange: StageContext) -> StageVerdict {
        if simulation.settings.matchBody && exchange.requestHead.framing != .none {
            return .holdWithBody(limit: RecordingMatcher.maximumMatchedBody, deadline: 60)
        }
        return decide(exchange, body: nil, held: false)
    }

    func requestBodyHeld(_ body: [UInt8], complete: Bool, exchange: StageContext) {
        exchange.resume(decide(exchange, body: complete ? body : nil, held: true), from: self)
    }

    private func decide(_ exchange: StageContext, body: [UInt8]?, held: Bool) -> StageVerdict {
        let head = exchange.requestHead
        let outcome = simulation.current.match(method: head.method.rawValue, url: exchange.facts.route.url,
                                               headers: head.headerFields.map { ($0.name.canonicalName, $0.value) },
                                               body: body)
        switch outcome {
        case .miss(let closest):
            guard simulation.mode == .simulate else { return .proceed }
            return .fail(.simulationMiss(detail: closest.map { "the closest recorded request is \($0)" }
                                         ?? "the recordings hold no request"))
        case .answer(let recorded):
            let answer: StageAnswer
            switch Self.answer(recorded) {
            case .success(let built): answer = built
            case .failure(let error): return .fail(error)
            }
            exchange.record(.simulated(recording: recorded.recording, entry: recorded.entry))
            guard simulation.settings.recordedLatency, let wait = recorded.waitMilliseconds, wait > 0 else {
                return .answer(answer)
            }
            // The recorded wait, then the answer, on a later turn of the loop.
            exchange.facts.loop.execute(after: wait / 1000) { [weak exchange, self] in
                exchange?.resume(.answer(answer), from: self)
            }
            return .hold(deadline: nil)
        }
    }

    /// The recorded answer: its status and end-to-end fields, its length from the body it sends.
    private static func answer(_ recorded: RecordingMatcher.Answer) -> Result<StageAnswer, ProxyError> {
        var fields = HTTPFields()
        for (name, value) in recorded.headers {
            guard let field = HTTPField.Name(name), HTTPField.isValidValue(value) else { continue }
            // A recording made through Lookout logged its own Via; the Via stage adds it again.
            if field == .via && value == "1.1 lookout" { continue }
            fields.append(HTTPField(name: field, value: value))
        }
        HopByHopHeaders.remove(from: &fields)
        fields[.contentLength] = nil
        let entryName = "\(recorded.recording) entry \(recorded.entry)"
        var body: (any ResponseBodySource)?
        var length: UInt64 = 0
        switch recorded.body {
        case .file(let path, _):
            switch LocalFileSender.open(path) {
            case .success(let sender):
                body = sender
                length = sender.size
            case .failure(let error):
                return .failure(.simulationMiss(detail: "the recorded body of \(entryName) cannot be read: \(error.message)"))
            }
        case .bytes(let bytes):
            // HAR keeps bodies decoded: they go out without the coding they were received with.
            fields[.contentEncoding] = nil
            body = bytes.isEmpty ? nil : BytesBodySource(bytes)
            length = UInt64(bytes.count)
        case .sizeOnly(let size) where size > 0:
            return .failure(.simulationMiss(detail: "\(entryName) was recorded without its body (capture.rules)"))
        case .sizeOnly, .none:
            break
        }
        let bodiless = recorded.status == 204 || recorded.status == 304 || (100..<200).contains(recorded.status)
        if !bodiless { fields[.contentLength] = String(length) }
        return .success(StageAnswer(status: recorded.status, reasonPhrase: ReasonPhrase.standard(for: recorded.status),
                                    fields: fields, framing: length == 0 || bodiless ? .none : .contentLength,
                                    body: bodiless ? nil : body, phase: "simulated"))
    }
}
