import LookoutLogQuery

/// The live subscribers that asked for the same filter text (or for none): `LiveMonitor` runs
/// the filter once per record for all of them and skips them all when it does not match.
final class Audience {  // confined to `LiveMonitor.queue`
    let filter: LogFilter?
    private(set) var members: [EventSubscriber]
    /// Members that asked for lifecycle records (`&verbose=1`); without one, those records skip
    /// the audience before its filter runs.
    private(set) var verboseMembers: Int

    init(filter: LogFilter?, first: EventSubscriber) {
        self.filter = filter
        members = [first]
        verboseMembers = first.verbose ? 1 : 0
    }

    func add(_ subscriber: EventSubscriber) {
        members.append(subscriber)
        if subscriber.verbose { verboseMembers += 1 }
    }

    /// False when `subscriber` is not a member.
    func remove(_ subscriber: EventSubscriber) -> Bool {
        guard let index = members.firstIndex(where: { $0 === subscriber }) else { return false }
        members.remove(at: index)
        if subscriber.verbose { verboseMembers -= 1 }
        return true
    }
}
