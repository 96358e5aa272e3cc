import HTTPTypes
import LookoutHTTP
import LookoutLogQuery
import LookoutModel

/// An exchange on its way, as the filter language sees it (a breakpoint's or a hook's filter):
/// what is known before anything went upstream — host, method, URL, kind, client, version, ids,
/// request fields — and at a response, its status and fields. Phases, cache, trust and errors are
/// not known yet, so terms on them do not match. Read from the stage's handle once, when the
/// stage asks.
package struct ExchangeFilterSubject: FilterSubject {
    package let facts: ExchangeFacts
    let request: RequestHead
    let status: Int?
    let responseFields: HTTPFields?

    package init(_ exchange: StageContext, status: Int?, responseFields: HTTPFields?) {
        facts = exchange.facts
        request = exchange.requestHead
        self.status = status
        self.responseFields = responseFields
    }

    package func filterText(_ field: LogFilter.Field) -> String? {
        switch field {
        case .host: return facts.route.origin.host
        case .method: return request.method.rawValue
        case .url: return facts.route.url
        case .kind: return facts.kind.rawValue
        case .client: return facts.clientAddress
        case .version: return facts.httpVersion
        default: return nil
        }
    }

    package func filterNumber(_ field: LogFilter.Field) -> Double? {
        switch field {
        case .status: return status.map(Double.init)
        case .id: return Double(facts.requestID)
        case .conn: return Double(facts.connectionID)
        default: return nil
        }
    }

    package func filterHeaderValues(_ name: String) -> [String] {
        guard let fieldName = HTTPField.Name(name) else { return [] }
        return request.headerFields[values: fieldName] + (responseFields?[values: fieldName] ?? [])
    }

    package var filterModified: Bool { facts.modified }
}
