import CLookoutSocket
import LookoutIO
import Synchronization
import LookoutModel
import LookoutSync
import LookoutUpstream
#if canImport(Glibc)
import Glibc
#endif

/// Keeps the reachability status from the kernel's route table: an rtnetlink socket on one event
/// loop reports every link and route change, and the status is the default route (IPv4, then
/// IPv6) through an interface that is up. Each change is a `session.reachabilityDidChange` event.
final class NetworkReachabilityManager: @unchecked Sendable {  // mutable state confined to `loop.queue`
    private let loop: EventLoop
    /// Where each change is recorded (`session.reachabilityDidChange`).
    private let events: CompositeEventMonitor
    private var monitor: RouteChangeMonitor?
    /// Written on the loop, read by the status page from any thread.
    private let current = Guarded<(status: ReachabilityStatus, interface: String?)>((.unknown, nil))
    /// `current.status == .notReachable`, read without a lock on every new connection (fail fast).
    let isNotReachable = Atomic<Bool>(false)

    init(loop: EventLoop, events: CompositeEventMonitor) {
        self.loop = loop
        self.events = events
    }

    /// Opens the netlink socket and reads the status now (on the loop).
    func start() {
        loop.assertOnLoop()
        monitor = RouteChangeMonitor(loop: loop) { [unowned self] in update() }
        monitor?.start()
        update()
    }

    func stop() {
        loop.assertOnLoop()
        monitor?.stop()
        monitor = nil
    }

    /// The status and interface, for the status page (any thread).
    var snapshot: (status: String, interface: String?) { current.withLock { ($0.status.description, $0.interface) } }

    /// The status alone (any thread).
    var status: ReachabilityStatus { current.withLock { $0.status } }

    private func update() {
        let new: ReachabilityStatus
        var newInterface: String?
        switch RouteChangeMonitor.defaultRouteInterface() {
        case .success(let name?):
            new = .reachable(Self.kind(of: name))
            newInterface = name
        case .success(nil):
            new = .notReachable
        case .failure:
            new = .unknown
        }
        let old: ReachabilityStatus? = current.withLock { state in
            guard new != state.status || newInterface != state.interface else { return nil }
            defer { state = (new, newInterface) }
            return state.status
        }
        guard let old else { return }
        isNotReachable.store(new == .notReachable, ordering: .relaxed)
        let change = SessionReachabilityDidChange(old: old.description, new: new.description, interface: newInterface)
        if events.wants(SessionReachabilityDidChange.interest) {
            events.post(LookoutEvent(EventContext(connectionID: 0), change))
        }
    }

    /// The kind of `interface`: asked of the kernel with ioctls, which answer for the process's
    /// own network namespace (`/sys/class/net` may show another one's), plus sysfs for a modem.
    static func kind(of interface: String) -> ReachabilityStatus.InterfaceKind {
        if lookout_interface_is_wireless(interface) == 1 { return .wireless }
        if read("/sys/class/net/\(interface)/uevent")?.contains("DEVTYPE=wwan") == true { return .cellular }
        switch lookout_interface_hardware_type(interface) {
        case 1: return .ethernet  // ARPHRD_ETHER (veth and bridges too)
        case 65534, 768, 769, 776, 778: return .tunnel  // ARPHRD_NONE (tun, WireGuard), IP-in-IP, SIT, GRE
        case 519: return .cellular  // ARPHRD_RAWIP (wwan modems)
        default: return .other
        }
    }

    private static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = Glibc.read(fd, &buffer, buffer.count)
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : nil
    }
}
