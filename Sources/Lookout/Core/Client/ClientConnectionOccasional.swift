import LookoutTLS
import LookoutUpstream

/// What only some client connections have, kept out of line: an admin page in progress, a TLS
/// listener's engine and the subject of its client's certificate, an interception's origin, a
/// transparent or SOCKS5 capture, a ClientHello read before choosing, the `auth.users` name.
///
/// Every idle keep-alive connection holds its `ClientConnection`, so each field a plain proxied
/// connection never sets costs memory by the thousand: inline, these were about 90 of its 450
/// bytes. Made on the first write of a field that is not empty; a plain connection makes none.
final class ClientConnectionOccasional {  // used on the client connection's `loop.queue` only
    var interceptedOrigin: Origin?
    var isAwaitingClientHandshake = false
    var adminStream: AdminStreamState?
    var awaitingAdminAnswer = false
    var pendingAdmin: PendingAdminRequest?
    var pendingHello: PendingHello?
    var capture: CaptureState?
    var authenticatedUser: String?
    var certificateSubject: String?
    var listenerTLS: TLSEngine?
}
