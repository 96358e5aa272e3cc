#if canImport(Glibc)
import Lookout
import Glibc
import LookoutModel
import LookoutUpstream
#endif
import HTTPTypes
import LookoutCache
import LookoutHTTP
import LookoutIO

/// Answers a request collapsed onto a `CacheFill`: the leader's response head once it arrives,
/// then the body from the store's file as the leader writes it, never ahead of it and never
/// faster than the client takes it.
final class FillFollower {  // confined to the following exchange's loop queue
    enum Progress {
        /// Waiting for the leader or for the client; `advance` is called again.
        case waiting
        case done
        /// The fill broke off after bytes went out.
        case failed
        /// Nothing usable: fetch as an ordinary miss (not stored, another variant, or the leader failed early).
        case goUpstream
    }

    let fill: CacheFill
    private var id: UInt64 = 0
    private let requestFields: HTTPFields
    private let sendsBody: Bool
    private let clientTakesChunks: Bool
    private(set) var headSent = false
    private(set) var framing = ClientFraming.contentLength
    private var sent: Int64 = 0
    private var clientBlocked = false
    private var buffer: [UInt8] = []

    init(fill: CacheFill, head: RequestHead) {
        self.fill = fill
        self.requestFields = head.headerFields
        self.sendsBody = head.method != .head
        self.clientTakesChunks = head.version != .http1_0
    }

    func start(on loop: EventLoop, notify: @escaping @Sendable () -> Void) {
        id = fill.follow(on: loop, notify: notify)
    }

    func stop() {
        fill.unfollow(id)
    }

    /// Sends what can be sent now. `sendHead` writes the head with Lookout's own fields added.
    /// `observe` sees every body byte written (for the capture).
    func advance(client: ClientResponseWriter, afterDrain: Bool, observe: (UnsafeRawBufferPointer) -> Void,
                 sendHead: (_ status: Int, _ reason: String, _ fields: inout HTTPFields, _ framing: ClientFraming) -> Bool) -> Progress {
        if afterDrain { clientBlocked = false }
        if clientBlocked { return .waiting }
        var snapshot = fill.snapshot(for: id, rearm: false)
        while true {
            guard let head = snapshot.head else {
                if snapshot.ending != nil { return give(.goUpstream) }
                snapshot = fill.snapshot(for: id, rearm: true)
                if snapshot.head == nil && snapshot.ending == nil { return .waiting }
                continue
            }
            if !headSent {
                let m = head.metadata
                guard VaryKey.values(of: m.varyNames, in: requestFields) == m.varyValues,
                      !(snapshot.ending == .failed && snapshot.written == 0) else { return give(.goUpstream) }
                var fields = m.fields
                fields[.age] = "0"
                fields.appendField(HTTPField(name: .cacheStatus, value: CacheStatus(
                    forward: .uriMiss, forwardStatus: m.status, collapsed: true).fieldValue()))
                if let length = head.expectedLength {
                    fields[.contentLength] = String(length)
                    framing = .contentLength
                } else if clientTakesChunks {
                    fields[.transferEncoding] = "chunked"
                    framing = .chunked
                } else {
                    framing = .untilClose
                }
                headSent = true
                // The exchange's stages may refuse the head: then nothing of the body follows.
                guard sendHead(m.status, m.reasonPhrase, &fields, framing) else { return give(.done) }
                if !sendsBody || m.status == 204 || m.status == 304 { return give(.done) }
            }
            while sent < snapshot.written {
                if buffer.isEmpty { buffer = [UInt8](repeating: 0, count: 64 * 1024) }
                let want = Int(min(Int64(buffer.count), snapshot.written - sent))
                let (count, accepted) = buffer.withUnsafeMutableBytes { raw -> (Int, Bool) in
                    let n = pread(head.reader, raw.baseAddress, want, off_t(head.bodyOffset + sent))
                    guard n > 0 else { return (0, true) }
                    let bytes = UnsafeRawBufferPointer(rebasing: raw[..<n])
                    observe(bytes)
                    return (n, client.writeBody(bytes))
                }
                if count == 0 { return give(.failed) }
                sent += Int64(count)
                if !accepted {
                    clientBlocked = true
                    return .waiting
                }
            }
            switch snapshot.ending {
            case .complete:
                client.writeEnd(trailers: nil)
                return give(.done)
            case .failed, .notStored:
                return give(.failed)
            case nil:
                snapshot = fill.snapshot(for: id, rearm: true)
                if snapshot.written == sent && snapshot.ending == nil { return .waiting }
            }
        }
    }

    private func give(_ progress: Progress) -> Progress {
        if progress != .waiting { stop() }
        return progress
    }
}
