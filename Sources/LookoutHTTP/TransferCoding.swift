import HTTPTypes

/// The `Transfer-Encoding` a proxy forwards for a chunked message (RFC 9112 §6.1, §7).
///
/// Lookout decodes the chunked framing and re-chunks it on the next hop, so the field it sends must
/// say exactly what it frames: the codings that describe the body itself (gzip, deflate, compress and
/// their x- aliases, lowercased, in order), then one `chunked`. `identity` (a no-op) and parameters
/// (none is defined for these codings) are dropped, so the next hop can never frame the message
/// differently from Lookout. Only meant for messages the parser accepted as chunked.
public enum TransferCoding {
    public static func canonicalField(_ fields: HTTPFields) -> String {
        let values = fields[values: .transferEncoding]
        if values.count == 1 && values[0] == "chunked" { return "chunked" }
        var codings: [String] = []
        for value in values {
            FieldList.forEachElement(of: value) { element in
                var name = Substring(element.string)
                if let semicolon = name.firstIndex(of: ";") { name = name[..<semicolon] }
                while let last = name.last, last == " " || last == "\t" { name = name.dropLast() }
                let coding = name.lowercased()
                if coding != "identity" && coding != "chunked" { codings.append(coding) }
            }
        }
        codings.append("chunked")
        return codings.joined(separator: ", ")
    }

    /// The `Transfer-Encoding` of a close-delimited response whose codings are relayed undecoded
    /// (RFC 9112 §6.3 rule 4): the origin's values as they are, as one list.
    public static func relayedField(_ fields: HTTPFields) -> String? {
        let values = fields[values: .transferEncoding]
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }
}
