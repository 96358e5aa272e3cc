#if canImport(Glibc)
import Glibc
#endif

/// The SOCKS5 messages a server reads and writes (RFC 1928; username/password, RFC 1929). Pure
/// functions of the bytes so far: each says it needs more, what it read and how many bytes that
/// took, or why the bytes are not that message.
enum Socks5 {
    enum Parse<Value> {
        case needMore
        case done(Value, consumed: Int)
        case invalid(String)
    }

    /// RFC 1928 §3 method numbers.
    static let noAuthentication: UInt8 = 0x00
    static let usernamePassword: UInt8 = 0x02
    static let noAcceptableMethods: UInt8 = 0xFF

    /// RFC 1928 §6 reply codes.
    enum Reply: UInt8 {
        case succeeded = 0x00
        case generalFailure = 0x01
        case commandNotSupported = 0x07
        case addressTypeNotSupported = 0x08
    }

    /// VER NMETHODS METHODS… (§3): the methods offered.
    static func greeting(_ bytes: ArraySlice<UInt8>) -> Parse<[UInt8]> {
        guard let version = bytes.first else { return .needMore }
        guard version == 5 else { return .invalid("version \(version) (SOCKS5 is 5; SOCKS4 is not served)") }
        guard bytes.count >= 2 else { return .needMore }
        let count = Int(bytes[bytes.startIndex + 1])
        guard count > 0 else { return .invalid("a greeting that offers no method") }
        guard bytes.count >= 2 + count else { return .needMore }
        return .done(Array(bytes.dropFirst(2).prefix(count)), consumed: 2 + count)
    }

    /// VER ULEN UNAME PLEN PASSWD (RFC 1929 §2).
    static func credentials(_ bytes: ArraySlice<UInt8>) -> Parse<(user: String, password: String)> {
        guard let version = bytes.first else { return .needMore }
        guard version == 1 else { return .invalid("username/password version \(version) (RFC 1929 is 1)") }
        let start = bytes.startIndex
        guard bytes.count >= 2 else { return .needMore }
        let userLength = Int(bytes[start + 1])
        guard bytes.count >= 3 + userLength else { return .needMore }
        let passwordLength = Int(bytes[start + 2 + userLength])
        let total = 3 + userLength + passwordLength
        guard bytes.count >= total else { return .needMore }
        let user = String(decoding: bytes[(start + 2)..<(start + 2 + userLength)], as: UTF8.self)
        let password = String(decoding: bytes[(start + 3 + userLength)..<(start + total)], as: UTF8.self)
        return .done((user, password), consumed: total)
    }

    /// A request (§4): the command, and the address with its port.
    struct Request: Equatable {
        var command: UInt8
        /// An IPv4 or IPv6 literal, or the name the client sent (ATYP 3, resolved by Lookout).
        var host: String
        var port: Int
    }

    /// Why a request could not be read, with the reply it gets (§6).
    struct RequestError: Error {
        var reply: Reply
        var message: String
    }

    /// VER CMD RSV ATYP DST.ADDR DST.PORT (§4).
    static func request(_ bytes: ArraySlice<UInt8>) -> Parse<Result<Request, RequestError>> {
        guard let version = bytes.first else { return .needMore }
        guard version == 5 else { return .invalid("request version \(version) (SOCKS5 is 5)") }
        guard bytes.count >= 5 else { return .needMore }
        let start = bytes.startIndex
        let command = bytes[start + 1]
        let addressType = bytes[start + 3]
        let addressLength: Int
        switch addressType {
        case 1: addressLength = 4
        case 3: addressLength = 1 + Int(bytes[start + 4])
        case 4: addressLength = 16
        default:
            return .done(.failure(RequestError(reply: .addressTypeNotSupported,
                                               message: "address type \(addressType) (1, 3 and 4 are defined)")),
                         consumed: bytes.count)
        }
        let total = 4 + addressLength + 2
        guard bytes.count >= total else { return .needMore }
        let address = bytes[(start + 4)..<(start + 4 + addressLength)]
        let port = Int(bytes[start + total - 2]) << 8 | Int(bytes[start + total - 1])
        let host: String
        switch addressType {
        case 1:
            host = address.map(String.init).joined(separator: ".")
        case 4:
            host = ipv6Text(Array(address))
        default:
            let name = address.dropFirst()
            guard !name.isEmpty, !name.contains(0) else {
                return .done(.failure(RequestError(reply: .generalFailure, message: "an empty or NUL-bearing domain name")),
                             consumed: total)
            }
            host = String(decoding: name, as: UTF8.self)
        }
        return .done(.success(Request(command: command, host: host, port: port)), consumed: total)
    }

    /// VER REP RSV ATYP BND.ADDR BND.PORT (§6), with an unspecified IPv4 bound address: the
    /// stream goes on over this connection, and no client reads the address.
    static func reply(_ code: Reply) -> [UInt8] {
        [5, code.rawValue, 0, 1, 0, 0, 0, 0, 0, 0]
    }

    /// The RFC 5952 text of a 16-byte address (inet_ntop's).
    private static func ipv6Text(_ bytes: [UInt8]) -> String {
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes.prefix(16)) }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil else { return "::" }
        return String(cString: text)
    }
}
