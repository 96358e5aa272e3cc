import Lookout
import HTTPTypes
import LookoutHTTP
import LookoutModel
import LookoutUpstream

/// `map.local`: the request is answered from a file, never sent upstream. After shaping, so a
/// shaped host's latency and faults apply to it too.
final class MapLocalStage: ExchangeStage, Sendable {
    private let rule: MapLocalRule

    init(rule: MapLocalRule) {
        self.rule = rule
    }

    var heldPhase: String { "map_local" }

    func requestHead(_ exchange: StageContext) -> StageVerdict {
        exchange.record(.mapped(from: exchange.facts.url, to: "file://" + rule.file))
        let sender: LocalFileSender
        switch LocalFileSender.open(rule.file) {
        case .failure(let error):
            return .fail(.mapFailed(reason: .localFileUnreadable(file: rule.file, detail: error.message)))
        case .success(let opened):
            sender = opened
        }
        exchange.emit(RequestDidMapLocal(from: rule.from.text, file: rule.file, status: rule.status,
                                         contentType: rule.contentType, bytes: sender.size))
        var fields = HTTPFields()
        fields[.contentType] = rule.contentType
        fields[.contentLength] = String(sender.size)
        let hasBody = sender.size > 0 && exchange.requestHead.method != .head && rule.status != 204 && rule.status != 304
        return .answer(StageAnswer(status: rule.status, reasonPhrase: ReasonPhrase.standard(for: rule.status),
                                   fields: fields, framing: hasBody ? .contentLength : .none,
                                   body: hasBody ? sender : nil))
    }
}
