import HTTPTypes

/// Facts about framing and connection management gathered while parsing header fields.
struct FieldFacts {
    var contentLength: UInt64?
    /// Content-Length came as a list (`5,5`) or in several fields: a proxy forwards one value.
    var contentLengthIsList = false
    var hasTransferEncoding = false
    /// Number of "chunked" codings seen over all Transfer-Encoding lines.
    var chunkedCount = 0
    /// The last coding seen is "chunked".
    var chunkedIsFinal = false
    var unknownCoding = false
    var connectionClose = false
    var connectionKeepAlive = false
    var connectionUpgrade = false
    var hostCount = 0
    var expectContinue = false
    var upgrade: String?
}

enum FieldParsing {
    /// Iterates the lines of a complete section `bytes[from..<bytes.count]` (which ends with an empty line)
    /// and returns the fields. `from` is the start of the first field line.
    static func parseFields(
        _ h: Bytes, from: Int, expectedCount: Int, facts: inout FieldFacts, collectFacts: Bool
    ) throws(HTTPParseError) -> HTTPFields {
        var recall = FieldRecall(enabled: false)
        return try parseFields(h, from: from, expectedCount: expectedCount, facts: &facts,
                               collectFacts: collectFacts, recall: &recall)
    }

    /// As above, taking a line that repeats the remembered field at its position from `recall`,
    /// and remembering these fields for the next head.
    static func parseFields(
        _ h: Bytes, from: Int, expectedCount: Int, facts: inout FieldFacts, collectFacts: Bool,
        recall: inout FieldRecall
    ) throws(HTTPParseError) -> HTTPFields {
        var list: [HTTPField] = []
        if expectedCount > 0 { list.reserveCapacity(expectedCount) }
        var unchanged: UInt32 = 0
        var pos = from
        let n = h.count
        while pos < n {
            guard let lf = h.find(ASCII.lf, from: pos, to: n) else { break }  // unreachable: section ends in LF
            var end = lf
            if end > pos && h[end - 1] == ASCII.cr { end -= 1 }
            if end == pos { break }  // the empty line
            if let (field, colon, vs, ve) = recall.match(list.count, h, pos, end) {
                if collectFacts { try collect(h, pos, colon, vs, ve, &facts) }
                unchanged |= 1 << UInt32(list.count)
                list.append(field)
            } else {
                list.append(try parseFieldLine(h, pos, end, facts: &facts, collectFacts: collectFacts))
            }
            pos = lf + 1
        }
        recall.remember(list, unchanged: unchanged)
        return FieldListWrapping.fields(list)
    }

    /// Returns (contentStart, contentEnd, next) for the line starting at `pos` in a complete section.
    @inline(__always)
    static func line(_ h: Bytes, at pos: Int) -> (end: Int, next: Int) {
        let lf = h.find(ASCII.lf, from: pos, to: h.count) ?? h.count
        var end = lf
        if end > pos && h[end - 1] == ASCII.cr { end -= 1 }
        return (end, lf + 1)
    }

    @inline(__always)
    static func parseFieldLine(
        _ h: Bytes, _ start: Int, _ end: Int, facts: inout FieldFacts, collectFacts: Bool
    ) throws(HTTPParseError) -> HTTPField {
        let first = h[start]
        if first == ASCII.sp || first == ASCII.htab { throw .obsoleteLineFolding }
        if h.find(ASCII.cr, from: start, to: end) != nil { throw .bareCarriageReturn }
        guard let colon = h.find(ASCII.colon, from: start, to: end), colon > start,
            h.all(CharClass.token, from: start, to: colon)
        else { throw .invalidHeaderName }
        var vs = colon + 1
        var ve = end
        while vs < ve && isOWS(h[vs]) { vs += 1 }
        while ve > vs && isOWS(h[ve - 1]) { ve -= 1 }
        // Validate the value and note whether it is pure ASCII in the same pass.
        let (valid, ascii) = h.validateFieldValue(vs, ve)
        if !valid { throw .invalidHeaderValue }

        if collectFacts {
            try collect(h, start, colon, vs, ve, &facts)
        }
        let name = fieldName(h, start, colon)
        if ascii {
            // ASCII: the String initialiser from a buffer of UTF-8 is the fast, non-generic path.
            return HTTPField(name: name, value: h.string(vs, ve))
        }
        // obs-text: keep the raw bytes (HTTPField stores non-UTF-8 values as bytes).
        return HTTPField(name: name, value: h.raw(vs, ve))
    }

    /// Builds the field name, using the predefined names when the wire spelling matches them exactly.
    @inline(__always)
    static func fieldName(_ h: Bytes, _ start: Int, _ end: Int) -> HTTPField.Name {
        let len = end - start
        @inline(__always) func eq(_ s: StaticString) -> Bool { h.equalsExact(start, end, s) }
        switch len {
        case 3:
            if eq("Age") { return .age }
            if eq("Via") { return .via }
        case 4:
            if eq("Host") { return .host }
            if eq("host") { return KnownNames.hostLower }
            if eq("Date") { return .date }
            if eq("ETag") { return .eTag }
            if eq("Vary") { return .vary }
        case 6:
            if eq("Accept") { return .accept }
            if eq("Cookie") { return .cookie }
            if eq("Server") { return .server }
        case 10:
            if eq("User-Agent") { return .userAgent }
            if eq("Connection") { return .connection }
            if eq("Set-Cookie") { return .setCookie }
        case 7:
            if eq("Expires") { return .expires }
        case 8:
            if eq("Location") { return .location }
        case 12:
            if eq("Content-Type") { return .contentType }
        case 13:
            if eq("Authorization") { return .authorization }
            if eq("Cache-Control") { return .cacheControl }
            if eq("Last-Modified") { return .lastModified }
            if eq("Accept-Ranges") { return .acceptRanges }
        case 14:
            if eq("Content-Length") { return .contentLength }
        case 15:
            if eq("Accept-Encoding") { return .acceptEncoding }
            if eq("Accept-Language") { return .acceptLanguage }
        case 16:
            if eq("Content-Encoding") { return .contentEncoding }
        case 17:
            if eq("Transfer-Encoding") { return .transferEncoding }
        default:
            break
        }
        // The bytes were validated as a token above, so neither initialiser can fail. An already
        // lowercase name skips the lowercasing copy.
        let string = h.string(start, end)
        if !h.containsUppercase(start, end), let name = HTTPField.Name(parsed: string) {
            return name
        }
        return HTTPField.Name(string)!
    }

    /// Records framing-relevant fields.
    @inline(__always)
    static func collect(_ h: Bytes, _ ns: Int, _ ne: Int, _ vs: Int, _ ve: Int, _ facts: inout FieldFacts) throws(HTTPParseError) {
        switch ne - ns {
        case 4:
            if h.equalsLowercase(ns, ne, "host") { facts.hostCount += 1 }
        case 6:
            if h.equalsLowercase(ns, ne, "expect") {
                forEachListElement(h, vs, ve) { s, e in
                    if h.equalsLowercase(s, e, "100-continue") { facts.expectContinue = true }
                }
            }
        case 7:
            if h.equalsLowercase(ns, ne, "upgrade") {
                let v = h.string(vs, ve)
                if let existing = facts.upgrade {
                    facts.upgrade = existing + ", " + v
                } else {
                    facts.upgrade = v
                }
            }
        case 10:
            if h.equalsLowercase(ns, ne, "connection") {
                forEachListElement(h, vs, ve) { s, e in
                    if h.equalsLowercase(s, e, "close") {
                        facts.connectionClose = true
                    } else if h.equalsLowercase(s, e, "keep-alive") {
                        facts.connectionKeepAlive = true
                    } else if h.equalsLowercase(s, e, "upgrade") {
                        facts.connectionUpgrade = true
                    }
                }
            }
        case 14:
            if h.equalsLowercase(ns, ne, "content-length") {
                try parseContentLength(h, vs, ve, &facts)
            }
        case 17:
            if h.equalsLowercase(ns, ne, "transfer-encoding") {
                try parseTransferEncoding(h, vs, ve, &facts)
            }
        default:
            break
        }
    }

    /// Calls `body` with each non-empty, OWS-trimmed element of a comma-separated list.
    @inline(__always)
    static func forEachListElement<E: Error>(_ h: Bytes, _ vs: Int, _ ve: Int, _ body: (Int, Int) throws(E) -> Void) throws(E) {
        var s = vs
        while s <= ve {
            let comma = h.find(ASCII.comma, from: s, to: ve) ?? ve
            var a = s
            var b = comma
            while a < b && isOWS(h[a]) { a += 1 }
            while b > a && isOWS(h[b - 1]) { b -= 1 }
            if b > a { try body(a, b) }
            s = comma + 1
        }
    }

    static func parseContentLength(_ h: Bytes, _ vs: Int, _ ve: Int, _ facts: inout FieldFacts) throws(HTTPParseError) {
        var s = vs
        var sawElement = false
        while s <= ve {
            let comma = h.find(ASCII.comma, from: s, to: ve) ?? ve
            var a = s
            var b = comma
            while a < b && isOWS(h[a]) { a += 1 }
            while b > a && isOWS(h[b - 1]) { b -= 1 }
            if a == b { throw .invalidContentLength }  // empty element (or empty value)
            var value: UInt64 = 0
            var i = a
            while i < b {
                let c = h[i]
                guard c >= 0x30 && c <= 0x39 else { throw .invalidContentLength }
                let (m, o1) = value.multipliedReportingOverflow(by: 10)
                let (r, o2) = m.addingReportingOverflow(UInt64(c - 0x30))
                if o1 || o2 { throw .invalidContentLength }
                value = r
                i += 1
            }
            if let existing = facts.contentLength {
                if existing != value { throw .invalidContentLength }
                facts.contentLengthIsList = true
            }
            facts.contentLength = value
            sawElement = true
            s = comma + 1
        }
        if !sawElement { throw .invalidContentLength }
    }

    static func parseTransferEncoding(_ h: Bytes, _ vs: Int, _ ve: Int, _ facts: inout FieldFacts) throws(HTTPParseError) {
        facts.hasTransferEncoding = true
        var sawElement = false
        try forEachListElement(h, vs, ve) { (s, e) throws(HTTPParseError) in
            sawElement = true
            // coding = token *( OWS ";" OWS transfer-parameter )
            var te = s
            while te < e && charTable[Int(h[te])] & CharClass.token != 0 { te += 1 }
            if te == s { throw .unsupportedTransferCoding }
            var rest = te
            while rest < e && isOWS(h[rest]) { rest += 1 }
            let hasParameters = rest < e
            if hasParameters && h[rest] != ASCII.semicolon { throw .unsupportedTransferCoding }
            if h.equalsLowercase(s, te, "chunked") {
                // Parameters on chunked (RFC 9112 §7.1 defines none) cannot change where the body
                // ends; the field is forwarded in canonical form without them (`TransferCoding`).
                facts.chunkedCount += 1
                facts.chunkedIsFinal = true
            } else if h.equalsLowercase(s, te, "identity") {
                // "identity" (no transformation; dropped from the registry by RFC 7230 §8.4) changes
                // nothing, but written after chunked it still leaves chunked not final.
                facts.chunkedIsFinal = false
            } else {
                facts.chunkedIsFinal = false
                if !(h.equalsLowercase(s, te, "gzip") || h.equalsLowercase(s, te, "x-gzip")
                    || h.equalsLowercase(s, te, "deflate") || h.equalsLowercase(s, te, "compress")
                    || h.equalsLowercase(s, te, "x-compress"))
                {
                    facts.unknownCoding = true
                }
            }
        }
        if !sawElement {
            // "Transfer-Encoding:" with an empty value.
            facts.unknownCoding = true
            facts.chunkedIsFinal = false
        }
    }

    /// Validates Transfer-Encoding for a message that has a body; true when chunked applies.
    static func transferEncodingIsValidChunked(_ facts: FieldFacts) -> Bool {
        facts.chunkedIsFinal && facts.chunkedCount == 1 && !facts.unknownCoding
    }

    /// Parses "HTTP/d.d" at h[s..<e]. Returns nil when it is not of that shape.
    @inline(__always)
    static func parseVersion(_ h: Bytes, _ s: Int, _ e: Int) -> (Int, Int)? {
        guard e - s == 8, h[s] == 0x48, h[s + 1] == 0x54, h[s + 2] == 0x54, h[s + 3] == 0x50, h[s + 4] == ASCII.slash,
            h[s + 6] == 0x2E
        else { return nil }
        let ma = h[s + 5]
        let mi = h[s + 7]
        guard ma >= 0x30 && ma <= 0x39 && mi >= 0x30 && mi <= 0x39 else { return nil }
        return (Int(ma - 0x30), Int(mi - 0x30))
    }
}

extension HTTPField.Name {
    /// HTTPTypes models Host as the :authority pseudo-field; on the HTTP/1.1 wire it is a plain field.
    public static let host = HTTPField.Name("Host")!
}

enum KnownNames {
    static let hostLower = HTTPField.Name("host")!
}
