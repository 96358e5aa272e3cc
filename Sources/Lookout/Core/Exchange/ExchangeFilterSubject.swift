import HTTPTypes
import LookoutHTTP
import LookoutLogQuery
import LookoutModel

/// An exchange on its way, as the filter language sees it (a breakpoint's or a hook's filter):
/// what is known before anything went upstream — host, method, URL, kind, client, version, ids,
/// request fields — and at a response, its status and fields. Phases, cache, trust and errors are
/// not known yet, so terms on them do not match. Each field is read from the exchange only when a
/// term asks for it: a filter that fails on its first term costs that term alone.
struct ExchangeFilterSubject: FilterSubject {
    /// Used on the exchange's loop while the exchange runs a stage, so it is alive.
    unowned(unsafe) let exchange: Exchange
    let status: Int?
    let responseFields: HTTPFields?

    func filterText(_ field: LogFilter.Field) -> String? {
        switch field {
        case .host: return exchange.attempts.request.origin.host
        case .method: return exchange.head.method.rawValue
        case .url: return exchange.attempts.request.url
        case .kind: return exchange.summary.kind.rawValue
        case .client: return exchange.records.clientAddress
        case .version: return exchange.summary.httpVersion
        default: return nil
        }
    }

    func filterNumber(_ field: LogFilter.Field) -> Double? {
        switch field {
        case .status: return status.map(Double.init)
        case .id: return Double(exchange.id)
        case .conn: return Double(exchange.records.connectionID)
        default: return nil
        }
    }

    func filterHeaderValues(_ name: String) -> [String] {
        guard let fieldName = HTTPField.Name(name) else { return [] }
        return exchange.head.headerFields[values: fieldName] + (responseFields?[values: fieldName] ?? [])
    }

    var filterModified: Bool { !exchange.summary.modifiedBy.isEmpty }
}

extension Exchange {
    func filterSubject(status: Int?, responseFields: HTTPFields?) -> ExchangeFilterSubject {
        ExchangeFilterSubject(exchange: self, status: status, responseFields: responseFields)
    }
}
