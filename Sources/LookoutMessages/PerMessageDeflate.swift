/// The permessage-deflate parameters the origin accepted in its 101 (RFC 7692 §7.1).
public struct PerMessageDeflate: Sendable, Equatable {
    public var serverNoContextTakeover = false
    public var clientNoContextTakeover = false

    public init(serverNoContextTakeover: Bool = false, clientNoContextTakeover: Bool = false) {
        self.serverNoContextTakeover = serverNoContextTakeover
        self.clientNoContextTakeover = clientNoContextTakeover
    }

    /// From the response's `Sec-WebSocket-Extensions` values; nil when permessage-deflate was not
    /// accepted.
    public static func negotiated(_ values: [String]) -> PerMessageDeflate? {
        for value in values {
            for offer in value.split(separator: ",") {
                let parameters = offer.split(separator: ";").map { $0.trimmingCharacters(in: " \t").lowercased() }
                guard parameters.first == "permessage-deflate" else { continue }
                var found = PerMessageDeflate()
                for parameter in parameters.dropFirst() {
                    let name = parameter.split(separator: "=").first.map(String.init) ?? parameter
                    if name == "server_no_context_takeover" { found.serverNoContextTakeover = true }
                    if name == "client_no_context_takeover" { found.clientNoContextTakeover = true }
                }
                return found
            }
        }
        return nil
    }
}

extension StringProtocol {
    /// Without leading and trailing characters from `set`.
    func trimmingCharacters(in set: String) -> String {
        let trimmed = drop { set.contains($0) }
        return String(trimmed.reversed().drop { set.contains($0) }.reversed())
    }
}
