import CLookoutSocket
import LookoutIO
#if canImport(Glibc)
import Glibc
#endif

/// Where a connection on a transparent listener was going before netfilter sent it here.
enum OriginalDestination: Sendable {
    case destination(SocketAddress)
    /// Nothing says (the connection was not redirected, or connection tracking is off).
    case unknown(String)
    /// The destination is one of Lookout's own listeners: relaying it would come back here.
    case loop(SocketAddress)

    /// Reads it for the accepted socket `fd`. Under TPROXY the socket's local address is the
    /// original destination; under REDIRECT the local address is the listener's, and
    /// SO_ORIGINAL_DST (IP6T_SO_ORIGINAL_DST for IPv6) asks connection tracking.
    static func read(fd: Int32, listener: SocketAddress, ownListeners: [SocketAddress]) -> OriginalDestination {
        guard let local = SocketAddress.local(of: fd) else { return .unknown("getsockname failed") }
        let destination: SocketAddress
        if !Self.isListener(local, listener) {
            destination = local
        } else {
            var storage = sockaddr_storage()
            var length = socklen_t(0)
            let error = lookout_original_destination(fd, local.family, &storage, &length)
            guard error == 0 else {
                return .unknown(error == ENOENT ? "connection tracking has no redirect for it"
                                                : "SO_ORIGINAL_DST: \(String(cString: strerror(error)))")
            }
            destination = SocketAddress(storage: storage, length: length)
        }
        if ([listener] + ownListeners).contains(where: { Self.isListener(destination, $0) }) {
            return .loop(destination)
        }
        return .destination(destination)
    }

    /// Whether `address` is where `listener` listens (any address, for a wildcard listener).
    private static func isListener(_ address: SocketAddress, _ listener: SocketAddress) -> Bool {
        guard address.port == listener.port else { return false }
        return listener.isUnspecified || address.ipText == listener.ipText
    }
}
