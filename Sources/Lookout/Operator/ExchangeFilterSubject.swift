import HTTPTypes
import LookoutHTTP
import LookoutLogQuery
import LookoutModel

/// An exchange on its way, as the filter language sees it (a breakpoint's or a hook's filter):
/// what is known before anything went upstream — host, method, URL, kind, client, version, ids,
/// request fields — and at a response, its status and fields. Phases, cache, trust and errors are
/// not known yet, so terms on them do not match.
struct ExchangeFilterSubject: FilterSubject {
    let host: String
    let method: String
    let url: String
    let summary: ExchangeSummary
    let requestFields: HTTPFields
    var status: Int?
    var responseFields: HTTPFields?

    init(_ exchange: any StageContext, status: Int? = nil, responseFields: HTTPFields? = nil) {
        let route = exchange.route
        host = route.origin.host
        url = route.url
        method = exchange.currentRequest.method.rawValue
        summary = exchange.summary
        requestFields = exchange.currentRequest.headerFields
        self.status = status
        self.responseFields = responseFields
    }

    func filterText(_ field: LogFilter.Field) -> String? {
        switch field {
        case .host: return host
        case .method: return method
        case .url: return url
        case .kind: return summary.kind.rawValue
        case .client: return summary.clientAddress
        case .version: return summary.httpVersion
        default: return nil
        }
    }

    func filterNumber(_ field: LogFilter.Field) -> Double? {
        switch field {
        case .status: return status.map(Double.init)
        case .id: return Double(summary.requestID)
        case .conn: return Double(summary.connectionID)
        default: return nil
        }
    }

    func filterHeaderValues(_ name: String) -> [String] {
        guard let fieldName = HTTPField.Name(name) else { return [] }
        return requestFields[values: fieldName] + (responseFields?[values: fieldName] ?? [])
    }

    var filterModified: Bool { !summary.modifiedBy.isEmpty }
}
