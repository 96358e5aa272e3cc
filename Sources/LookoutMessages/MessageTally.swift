import LookoutModel

/// Counts what passed one way and the other into the summary's `messages` object, with the
/// times of the first and last message and the gaps between the origin's events.
public final class MessageTally: @unchecked Sendable {  // confined to the connection's loop queue
    private var summary: MessagesSummary
    private var gaps = GapRecorder()

    public init(protocolName: String) {
        summary = MessagesSummary(protocolName: protocolName)
    }

    /// One message (or event): who sent it, its payload bytes, and when (ms since the tally's zero).
    public func message(fromClient: Bool, bytes: Int, at milliseconds: Double) {
        if fromClient {
            summary.clientToUpstream.count += 1
            summary.clientToUpstream.bytes += UInt64(bytes)
        } else {
            summary.upstreamToClient.count += 1
            summary.upstreamToClient.bytes += UInt64(bytes)
            gaps.event(at: milliseconds)
        }
        if summary.firstMilliseconds == nil { summary.firstMilliseconds = milliseconds }
        summary.lastMilliseconds = milliseconds
    }

    /// The origin's first event came `milliseconds` after the request's end.
    public func firstEvent(after milliseconds: Double) {
        if summary.firstEventMilliseconds == nil { summary.firstEventMilliseconds = milliseconds }
    }

    /// The first close frame names how the WebSocket ended.
    public func closed(code: Int?, reason: String?, fromClient: Bool) {
        guard summary.closedBy == nil else { return }
        summary.closeCode = code
        summary.closeReason = reason
        summary.closedBy = fromClient ? "client" : "upstream"
    }

    /// The connection ended with no close frame either way: RFC 6455 §7.1.5 calls that code 1006.
    public func endedWithoutClose() {
        if summary.closedBy == nil, summary.closeCode == nil { summary.closeCode = 1006 }
    }

    public func setDeflate(_ on: Bool) { summary.deflate = on }
    public func setDecoding(_ state: String) { if summary.decoding == "full" { summary.decoding = state } }
    public func setGRPCStatus(_ status: Int?, message: String?) {
        summary.grpcStatus = status
        summary.grpcMessage = message
    }

    /// The `messages` object as it stands.
    public var current: MessagesSummary {
        var out = summary
        if let q = gaps.quantiles { out.gaps = MessagesSummary.Gaps(p50: q.p50, p99: q.p99, max: q.max) }
        out.gapSamples = gaps.gaps
        return out
    }
}
