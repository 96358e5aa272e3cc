/// Decoding of the request-target forms (RFC 9112 §3.2).
enum RequestTargetParsing {
    /// `h[s..<e]` is the raw target, already checked to consist of `CharClass.target` bytes.
    static func parse(_ h: Bytes, _ s: Int, _ e: Int, isConnect: Bool, isOptions: Bool) throws(HTTPParseError) -> RequestTarget {
        let first = h[s]
        if isConnect {
            let (host, port) = try parseAuthority(h, s, e, requirePort: true)
            guard let port else { throw .invalidRequestLine }
            return .authority(host: host, port: port)
        }
        if first == ASCII.slash {
            return .origin(path: h.string(s, e))
        }
        if first == ASCII.star && e - s == 1 {
            guard isOptions else { throw .invalidRequestLine }
            return .asterisk
        }
        return try parseAbsolute(h, s, e)
    }

    /// absolute-form: scheme "://" authority path-abempty [ "?" query ]
    static func parseAbsolute(_ h: Bytes, _ s: Int, _ e: Int) throws(HTTPParseError) -> RequestTarget {
        // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
        let c0 = h[s] | 0x20
        guard c0 >= 0x61 && c0 <= 0x7A else { throw .invalidRequestLine }
        var i = s + 1
        while i < e && charTable[Int(h[i])] & CharClass.scheme != 0 { i += 1 }
        guard i + 3 <= e, h[i] == ASCII.colon, h[i + 1] == ASCII.slash, h[i + 2] == ASCII.slash else {
            throw .invalidRequestLine
        }
        let scheme = h.lowercasedString(s, i)
        let authStart = i + 3
        var authEnd = authStart
        while authEnd < e {
            let b = h[authEnd]
            if b == ASCII.slash || b == ASCII.question { break }
            authEnd += 1
        }
        let (host, port) = try parseAuthority(h, authStart, authEnd, requirePort: false)
        let path: String
        if authEnd == e {
            path = "/"
        } else if h[authEnd] == ASCII.question {
            path = "/" + h.string(authEnd, e)
        } else {
            path = h.string(authEnd, e)
        }
        return .absolute(scheme: scheme, host: host, port: port, path: path)
    }

    /// authority = host [ ":" port ] (no userinfo). Host lowercased, IPv6 without brackets.
    static func parseAuthority(_ h: Bytes, _ s: Int, _ e: Int, requirePort: Bool) throws(HTTPParseError) -> (String, Int?) {
        guard e > s else { throw .invalidRequestLine }
        if h.find(ASCII.at, from: s, to: e) != nil { throw .invalidRequestLine }  // userinfo is not allowed
        var hostStart: Int
        var hostEnd: Int
        var portStart: Int?  // index after ':'
        if h[s] == ASCII.lbracket {
            guard let rb = h.find(ASCII.rbracket, from: s + 1, to: e) else { throw .invalidRequestLine }
            hostStart = s + 1
            hostEnd = rb
            // IPv6address: hex digits, ':' and '.' (embedded IPv4), at least one ':'
            guard hostEnd > hostStart, h.find(ASCII.colon, from: hostStart, to: hostEnd) != nil else {
                throw .invalidRequestLine
            }
            var k = hostStart
            while k < hostEnd {
                let b = h[k]
                guard charTable[Int(b)] & CharClass.hex != 0 || b == ASCII.colon || b == 0x2E else {
                    throw .invalidRequestLine
                }
                k += 1
            }
            if rb + 1 < e {
                guard h[rb + 1] == ASCII.colon else { throw .invalidRequestLine }
                portStart = rb + 2
            } else {
                portStart = nil
            }
        } else {
            hostStart = s
            if let colon = h.find(ASCII.colon, from: s, to: e) {
                hostEnd = colon
                portStart = colon + 1
            } else {
                hostEnd = e
                portStart = nil
            }
            guard hostEnd > hostStart, h.all(CharClass.regName, from: hostStart, to: hostEnd) else {
                throw .invalidRequestLine
            }
        }
        var port: Int?
        if let ps = portStart, ps < e {
            guard e - ps <= 5 else { throw .invalidRequestLine }
            var v = 0
            var k = ps
            while k < e {
                let b = h[k]
                guard b >= 0x30 && b <= 0x39 else { throw .invalidRequestLine }
                v = v * 10 + Int(b - 0x30)
                k += 1
            }
            guard v <= 65535 else { throw .invalidRequestLine }
            port = v
        }
        if requirePort && port == nil { throw .invalidRequestLine }
        let host = h.lowercasedString(hostStart, hostEnd)
        return (host, port)
    }
}

extension RequestTarget {
    /// Parses an absolute URL (`scheme://host[:port][/path][?query]`, no userinfo, no fragment) by the
    /// rules applied to absolute-form request targets; nil when it is not one. Raw bytes >= 0x80 must
    /// be valid UTF-8, as in a request line.
    public static func parseAbsolute(_ url: String) -> RequestTarget? {
        return url.withUTF8InPlace { utf8 -> RequestTarget? in
            let h = Bytes(UnsafeRawBufferPointer(utf8))
            guard h.count > 0, h.all(CharClass.target, from: 0, to: h.count) else { return nil }
            return try? RequestTargetParsing.parseAbsolute(h, 0, h.count)
        }
    }
}
