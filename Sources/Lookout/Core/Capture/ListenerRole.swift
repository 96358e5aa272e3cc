/// What a listener's clients speak, which decides how a `ClientConnection` starts.
enum ListenerRole: Sendable {
    /// HTTP proxy requests and the admin pages (`listen`).
    case proxy
    /// Only the admin pages (`admin.listen`).
    case admin
    /// Connections that a REDIRECT or TPROXY rule sent here (`mode: transparent`).
    case transparent
    /// SOCKS5 clients (`mode: socks5`, RFC 1928).
    case socks5
}
