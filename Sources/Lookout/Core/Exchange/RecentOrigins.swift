import LookoutTLS
import LookoutUpstream

/// The origins a loop's clients asked for most recently, shared between its client connections.
/// Each kept-alive client connection keeps the `Origin` of its last request, to use it again;
/// taken from here, a thousand idle clients of one origin hold one `Origin` between them instead
/// of one each. Looked up only when a connection's own last origin does not match.
struct RecentOrigins {
    private static let capacity = 8
    private var slots: [Origin] = []
    private var next = 0

    init() { slots.reserveCapacity(Self.capacity) }

    mutating func origin(host: String, port: Int, isSecure: Bool, parent: ParentProxy?, ruleKey: HostRuleKey?) -> Origin {
        for index in slots.indices {
            let origin = slots[index]
            if origin.port == port, origin.isSecure == isSecure, origin.host == host, origin.parent == parent {
                return origin
            }
        }
        let origin = Origin(host: host, port: port, isSecure: isSecure, parent: parent, ruleKey: ruleKey)
        if slots.count < Self.capacity {
            slots.append(origin)
        } else {
            slots[next] = origin
            next = (next + 1) % Self.capacity
        }
        return origin
    }
}
