import HTTPTypes

/// What is kept beside a stored body: the key, the response head, and the times §4.2.3 needs.
///
/// On disk it is text, one item per line (field values cannot hold CR or LF, RFC 9110 §5.5), after a
/// fixed binary prefix that carries its length, the body's length and a checksum of the text (see
/// `ObjectFile`).
public struct StoredMetadata: Sendable, Equatable {
    /// The primary key (RFC 9111 §4): the target URI.
    public var url: String
    /// The field names the response varies on, and the request's values for them (§4.1).
    public var varyNames: [String]
    public var varyValues: [String?]
    /// When the request was sent and the response received (seconds since 1970).
    public var requestTime: Double
    public var responseTime: Double
    public var status: Int
    public var reasonPhrase: String
    /// The stored response fields (hop-by-hop fields removed, `private="…"` fields removed).
    public var fields: HTTPFields

    public init(url: String, varyNames: [String], varyValues: [String?], requestTime: Double, responseTime: Double,
                status: Int, reasonPhrase: String, fields: HTTPFields) {
        self.url = url
        self.varyNames = varyNames
        self.varyValues = varyValues
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.status = status
        self.reasonPhrase = reasonPhrase
        self.fields = fields
    }

    /// The key of the object on disk: the URL and, for a varying response, its variant.
    public var objectKey: String { Self.objectKey(url: url, varyNames: varyNames, varyValues: varyValues) }

    public static func objectKey(url: String, varyNames: [String], varyValues: [String?]) -> String {
        varyNames.isEmpty ? url : url + "\n" + VaryKey.variantKey(names: varyNames, values: varyValues)
    }

    func encoded() -> [UInt8] {
        var text = "url \(url)\n"
        for (name, value) in zip(varyNames, varyValues) {
            text += value.map { "vary \(name): \($0)\n" } ?? "vary-absent \(name)\n"
        }
        text += "request_time \(requestTime)\nresponse_time \(responseTime)\nstatus \(status)\nreason \(reasonPhrase)\n"
        for field in fields { text += "field \(field.name.rawName): \(field.value)\n" }
        return Array(text.utf8)
    }

    init?(decoding bytes: UnsafeRawBufferPointer) {
        guard let text = String(validating: bytes.bindMemory(to: UInt8.self), as: UTF8.self) else { return nil }
        var url: String?, requestTime: Double?, responseTime: Double?, status: Int?, reason = ""
        var varyNames: [String] = [], varyValues: [String?] = []
        var fields = HTTPFields()
        // Lines split at LF bytes: split by Characters, a CR before the LF would join the two
        // lines into one ("\r\n" is one Character), and a damaged file would read as other
        // metadata than it holds.
        for bytesOfLine in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            let line = Substring(bytesOfLine)
            guard let space = line.firstIndex(of: " ") else { return nil }
            let tag = line[..<space], rest = line[line.index(after: space)...]
            switch tag {
            case "url": url = String(rest)
            case "request_time": requestTime = Double(rest)
            case "response_time": responseTime = Double(rest)
            case "status": status = Int(rest)
            case "reason": reason = String(rest)
            case "vary", "field":
                guard let colon = rest.firstIndex(of: ":") else { return nil }
                let name = String(rest[..<colon])
                var value = rest[rest.index(after: colon)...]
                if value.first == " " { value = value.dropFirst() }
                if tag == "vary" {
                    varyNames.append(name)
                    varyValues.append(String(value))
                } else {
                    guard let fieldName = HTTPField.Name(name) else { return nil }
                    fields.append(HTTPField(name: fieldName, value: String(value)))
                }
            case "vary-absent":
                varyNames.append(String(rest))
                varyValues.append(nil)
            default:
                return nil
            }
        }
        guard let url, let requestTime, let responseTime, let status else { return nil }
        self.init(url: url, varyNames: varyNames, varyValues: varyValues, requestTime: requestTime,
                  responseTime: responseTime, status: status, reasonPhrase: reason, fields: fields)
    }
}
