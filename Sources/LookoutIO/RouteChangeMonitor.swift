import CLookoutSocket
#if canImport(Glibc)
import Glibc
#endif

/// Watches the kernel's link and route tables through an rtnetlink socket on one event loop:
/// the kernel notifies every change, so nothing is polled. Each batch of notifications calls
/// `onChange` once, on the loop.
public final class RouteChangeMonitor: PollHandler, @unchecked Sendable {  // confined to `loop.queue`
    private let loop: EventLoop
    private let fd: Int32
    private var registration: PollRegistration?
    private let onChange: () -> Void

    /// Nil when no rtnetlink socket can be opened (no such kernel support, or no permission).
    public init?(loop: EventLoop, onChange: @escaping () -> Void) {
        let fd = lookout_route_monitor_open()
        guard fd >= 0 else { return nil }
        self.loop = loop
        self.fd = fd
        self.onChange = onChange
    }

    /// Starts watching (on the loop).
    public func start() {
        loop.assertOnLoop()
        registration = loop.poller.add(fd, handler: self)
    }

    /// Stops watching and closes the socket (on the loop).
    public func stop() {
        loop.assertOnLoop()
        if let registration { loop.poller.removeBeforeClosing(registration) }
        registration = nil
        Glibc.close(fd)
    }

    func pollDidReport(_ mask: UInt32) {
        guard mask & .pollReadable != 0 else { return }
        if lookout_route_monitor_drain(fd) != 0 { onChange() }
    }

    /// The interface the default route leaves through, when there is one and it is up; nil when
    /// there is none; throws nothing: an unreadable table counts as unknown (`.failure`).
    public static func defaultRouteInterface() -> Result<String?, SocketError> {
        var name = [CChar](repeating: 0, count: 64)
        switch lookout_default_route_interface(&name, name.count) {
        case 1: return .success(String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        case 0: return .success(nil)
        default: return .failure(SocketError("netlink"))
        }
    }
}
