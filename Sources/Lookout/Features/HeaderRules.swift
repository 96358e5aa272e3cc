import HTTPTypes
import LookoutModel
import LookoutUpstream

/// Field edits for one direction of one header rule (`headers.rules[i].request` or `.response`),
/// applied in the order remove, set, add. Names were checked when the configuration was read:
/// none is a hop-by-hop, framing or `Host` field, so an edit can never change how a message is
/// delimited or routed.
public struct HeaderEdits: Sendable {
    /// Every line of each of these fields is dropped.
    public var remove: [HTTPField.Name]
    /// Each replaces every line of its field, or adds it.
    public var set: [HTTPField]
    /// Each is appended as one more line.
    public var add: [HTTPField]

    public init(remove: [HTTPField.Name] = [], set: [HTTPField] = [], add: [HTTPField] = []) {
        self.remove = remove
        self.set = set
        self.add = add
    }

    public var isEmpty: Bool { remove.isEmpty && self.set.isEmpty && add.isEmpty }

    /// Applies the edits to `fields` and says what changed: the fields set and added, and the
    /// names of those removed that were there.
    public func apply(to fields: inout HTTPFields) -> HeaderChanges {
        var changes = HeaderChanges()
        for name in remove where fields[name] != nil {
            fields[name] = nil
            changes.removed.append(name.canonicalName)
        }
        for field in self.set {
            fields[field.name] = field.value
            changes.set.append(field)
        }
        for field in add {
            fields.append(field)
            changes.added.append(field)
        }
        return changes
    }
}

/// One `headers.rules[i]`: its edits for requests to, and responses from, the hosts it names.
public struct HeaderRule: Sendable {
    /// The rule's host patterns as written, which its events name.
    public var name: String
    public var request: HeaderEdits
    public var response: HeaderEdits

    public init(name: String, request: HeaderEdits = HeaderEdits(), response: HeaderEdits = HeaderEdits()) {
        self.name = name
        self.request = request
        self.response = response
    }
}

/// The RFC 7239 `Forwarded` element Lookout adds for the client it forwards for (`headers.forwarded`).
package enum ForwardedElement {
    package static let name = HTTPField.Name("Forwarded")!

    /// `for=<client address>;proto=<scheme>`. The port is left out; an IPv6 address is bracketed
    /// and quoted (RFC 7239 §6: `node` is `nodename [":" node-port]`, and ":" needs a quoted-string).
    package static func value(clientAddress: String, scheme: String) -> String {
        "for=\(node(clientAddress));proto=\(scheme)"
    }

    /// The address part of "1.2.3.4:port" or "[v6]:port".
    static func node(_ clientAddress: String) -> String {
        if clientAddress.hasPrefix("["), let close = clientAddress.firstIndex(of: "]") {
            return "\"\(clientAddress[...close])\""
        }
        if let colon = clientAddress.lastIndex(of: ":") { return String(clientAddress[..<colon]) }
        return clientAddress.isEmpty ? "unknown" : clientAddress
    }
}
