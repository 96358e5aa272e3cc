/// Reads one direction of a WebSocket connection (RFC 6455 §5) from copies of the bytes relayed:
/// frame headers always; payloads — unmasked, inflated (RFC 7692), reassembled from fragments —
/// while the connection's `DecodeBudget` lasts. It never holds a message's bytes beyond `keep`.
/// A frame that breaks the protocol stops decoding for the direction (`stopped` says why); the
/// relay is never affected.
public final class WebSocketDecoder: @unchecked Sendable {  // confined to the connection's loop queue
    /// The message being reassembled.
    private struct Assembly {
        var opcode: WebSocketMessage.Opcode
        var compressed: Bool
        var masked: Bool
        var frames = 0
        var wireBytes = 0
        var bytes = 0
        var payload: [UInt8] = []
        var truncated = false
        /// Its payload is read (the budget lasted so far, and it inflates).
        var decoding: Bool
    }

    /// The frame being read.
    private struct Frame {
        var fin: Bool
        var opcode: WebSocketMessage.Opcode
        var masked: Bool
        var key: [UInt8]
        var length: UInt64
        /// Payload bytes read so far (the masking key's phase).
        var read: UInt64 = 0
    }

    private let fromClient: Bool
    private let inflater: StreamInflater?
    /// This direction's sender said `no_context_takeover`: each message is inflated afresh.
    private let resetsContext: Bool
    private let budget: DecodeBudget
    private let keep: Int
    private var header: [UInt8] = []
    private var frame: Frame?
    private var message: Assembly?
    /// A control frame's payload (at most 125 bytes, RFC 6455 §5.5).
    private var control: [UInt8] = []
    /// Why decoding stopped (a protocol error), if it did.
    public private(set) var stopped: String?

    /// `fromClient`: the client's direction (frames must be masked). `deflate`: the negotiated
    /// permessage-deflate, if any. `keep`: how much of each payload to hold.
    public init(fromClient: Bool, deflate: PerMessageDeflate?, budget: DecodeBudget, keep: Int) {
        self.fromClient = fromClient
        self.inflater = deflate != nil ? StreamInflater() : nil
        self.resetsContext = deflate.map { fromClient ? $0.clientNoContextTakeover : $0.serverNoContextTakeover } ?? false
        self.budget = budget
        self.keep = keep
    }

    /// Reads `bytes`; returns the messages and control frames they completed, in order.
    public func feed(_ bytes: UnsafeRawBufferPointer) -> [WebSocketMessage] {
        var done: [WebSocketMessage] = []
        var offset = 0
        while offset < bytes.count, stopped == nil {
            guard let current = frame else {
                offset += readHeader(UnsafeRawBufferPointer(rebasing: bytes[offset...]), into: &done)
                continue
            }
            let take = Int(min(UInt64(bytes.count - offset), current.length - current.read))
            payload(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + take)]))
            offset += take
            if let after = frame, after.read == after.length { endFrame(into: &done) }
        }
        return done
    }

    // MARK: - Headers

    /// Takes header bytes until the header is whole; returns how many it used.
    private func readHeader(_ bytes: UnsafeRawBufferPointer, into done: inout [WebSocketMessage]) -> Int {
        var used = 0
        while used < bytes.count {
            header.append(bytes[used])
            used += 1
            guard let needed = Self.headerLength(header), header.count == needed else { continue }
            startFrame()
            header.removeAll(keepingCapacity: true)
            if let current = frame, current.length == 0 { endFrame(into: &done) }
            break
        }
        return used
    }

    /// The header's full length once its first bytes say it (2, 4 or 10, plus 4 for a mask key).
    static func headerLength(_ header: [UInt8]) -> Int? {
        guard header.count >= 2 else { return nil }
        let mask = header[1] & 0x80 != 0 ? 4 : 0
        switch header[1] & 0x7f {
        case 126: return 4 + mask
        case 127: return 10 + mask
        default: return 2 + mask
        }
    }

    private func startFrame() {
        let first = header[0], second = header[1]
        var length = UInt64(second & 0x7f)
        var at = 2
        if length == 126 {
            length = UInt64(header[2]) << 8 | UInt64(header[3])
            at = 4
        } else if length == 127 {
            length = header[2..<10].reduce(0) { $0 << 8 | UInt64($1) }
            at = 10
        }
        let masked = second & 0x80 != 0
        guard let opcode = WebSocketMessage.Opcode(rawValue: first & 0x0f) else {
            return stop("unknown opcode \(first & 0x0f)")
        }
        let fin = first & 0x80 != 0
        let rsv1 = first & 0x40 != 0
        if first & 0x30 != 0 { return stop("RSV2 or RSV3 set with no extension that uses them") }
        if opcode.rawValue >= 8 && (!fin || length > 125) { return stop("a control frame fragmented or over 125 bytes") }
        if rsv1 && (inflater == nil || opcode == .continuation || opcode.rawValue >= 8) {
            return stop("RSV1 set where permessage-deflate does not allow it")
        }
        if opcode == .continuation && message == nil { return stop("a continuation frame with no message to continue") }
        if (opcode == .text || opcode == .binary) && message != nil { return stop("a new message before the last one ended") }
        frame = Frame(fin: fin, opcode: opcode, masked: masked, key: masked ? Array(header[at..<(at + 4)]) : [], length: length)
        if opcode == .text || opcode == .binary {
            let compressed = rsv1
            if compressed, resetsContext { inflater?.reset() }
            message = Assembly(opcode: opcode, compressed: compressed, masked: masked, decoding: !budget.spent)
        }
        if opcode.rawValue < 8, var assembly = message {
            assembly.frames += 1
            assembly.wireBytes += header.count + Int(length)
            message = assembly
        } else {
            control.removeAll(keepingCapacity: true)
        }
    }

    private func stop(_ reason: String) {
        stopped = reason
        frame = nil
        message = nil
    }

    // MARK: - Payloads

    private func payload(_ bytes: UnsafeRawBufferPointer) {
        guard var current = frame else { return }
        defer {
            current.read += UInt64(bytes.count)
            frame = current
        }
        if current.opcode.rawValue >= 8 {
            control += Self.unmasked(bytes, key: current.key, phase: Int(current.read % 4))
            return
        }
        guard var assembly = message, assembly.decoding else { return }
        guard budget.take(bytes.count) else {
            assembly.decoding = false
            message = assembly
            return
        }
        let plain = Self.unmasked(bytes, key: current.key, phase: Int(current.read % 4))
        if assembly.compressed, let inflater {
            assembly.bytes += plain.withUnsafeBytes { inflater.inflate($0, into: &assembly.payload, keep: keep) }
            if inflater.failed { assembly.decoding = false }
        } else {
            assembly.bytes += plain.count
            if assembly.payload.count < keep { assembly.payload += plain.prefix(keep - assembly.payload.count) }
        }
        message = assembly
    }

    private func endFrame(into done: inout [WebSocketMessage]) {
        guard let current = frame else { return }
        frame = nil
        if current.opcode.rawValue >= 8 {
            done.append(controlMessage(current))
            return
        }
        guard current.fin, var assembly = message else { return }
        message = nil
        if assembly.compressed, assembly.decoding, let inflater {
            // RFC 7692 §7.2.2: the sender removed the empty block's tail; put it back to flush.
            let tail: [UInt8] = [0x00, 0x00, 0xff, 0xff]
            assembly.bytes += tail.withUnsafeBytes { inflater.inflate($0, into: &assembly.payload, keep: keep) }
            if inflater.failed { assembly.decoding = false }
        }
        done.append(WebSocketMessage(opcode: assembly.opcode, wireBytes: assembly.wireBytes,
                                     bytes: assembly.decoding ? assembly.bytes : nil, frames: assembly.frames,
                                     compressed: assembly.compressed, masked: assembly.masked,
                                     payload: assembly.decoding ? assembly.payload : [],
                                     truncated: assembly.decoding && assembly.bytes > assembly.payload.count))
    }

    private func controlMessage(_ current: Frame) -> WebSocketMessage {
        var message = WebSocketMessage(opcode: current.opcode, wireBytes: Self.headerBytes(current) + Int(current.length),
                                       bytes: control.count, frames: 1, compressed: false, masked: current.masked,
                                       payload: Array(control.prefix(keep)), truncated: control.count > keep)
        if current.opcode == .close, control.count >= 2 {
            message.closeCode = Int(control[0]) << 8 | Int(control[1])
            message.closeReason = String(decoding: control[2...], as: UTF8.self)
        }
        return message
    }

    private static func headerBytes(_ frame: Frame) -> Int {
        (frame.length < 126 ? 2 : frame.length < 65536 ? 4 : 10) + (frame.masked ? 4 : 0)
    }

    /// `bytes` XORed with the masking key (RFC 6455 §5.3), starting at `phase` in the key; eight
    /// bytes at a time.
    static func unmasked(_ bytes: UnsafeRawBufferPointer, key: [UInt8], phase: Int) -> [UInt8] {
        var out = Array(bytes)
        guard key.count == 4, !out.isEmpty else { return out }
        var pattern: UInt64 = 0
        for index in 0..<8 { pattern |= UInt64(key[(phase + index) % 4]) << (8 * UInt64(index)) }
        out.withUnsafeMutableBytes { buffer in
            let words = buffer.count / 8
            for word in 0..<words {
                let value = buffer.loadUnaligned(fromByteOffset: word * 8, as: UInt64.self)
                buffer.storeBytes(of: value ^ pattern.littleEndian, toByteOffset: word * 8, as: UInt64.self)
            }
            for index in (words * 8)..<buffer.count { buffer[index] ^= key[(phase + index) % 4] }
        }
        return out
    }
}
