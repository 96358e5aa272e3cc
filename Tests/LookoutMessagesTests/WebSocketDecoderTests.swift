import Testing
@testable import LookoutMessages

/// Frames built as RFC 6455 §5.2 lays them out.
func frame(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, rsv1: Bool = false, mask: [UInt8]? = nil) -> [UInt8] {
    var out: [UInt8] = [(fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode]
    let maskBit: UInt8 = mask != nil ? 0x80 : 0
    if payload.count < 126 {
        out.append(maskBit | UInt8(payload.count))
    } else if payload.count < 65536 {
        out += [maskBit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xff)]
    } else {
        out.append(maskBit | 127)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((payload.count >> shift) & 0xff)) }
    }
    guard let mask else { return out + payload }
    return out + mask + payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
}

/// `bytes` fed in pieces of `size`.
func feed(_ decoder: WebSocketDecoder, _ bytes: [UInt8], size: Int) -> [WebSocketMessage] {
    stride(from: 0, to: bytes.count, by: size).flatMap { start in
        bytes[start..<min(bytes.count, start + size)].withUnsafeBytes { decoder.feed($0) }
    }
}

/// Two messages deflated with context takeover by Python's zlib (`compressobj(wbits=-15)`,
/// `Z_SYNC_FLUSH`, the 00 00 ff ff tail taken off as RFC 7692 §7.2.1 says): the second refers
/// back into the first.
let firstDeflated: [UInt8] = [236, 200, 49, 13, 0, 32, 12, 0, 48, 43, 179, 198, 1, 15, 129, 37, 12, 255, 193, 1, 10, 218,
                              179, 117, 79, 111, 43, 114, 196, 205, 217, 119, 69, 9, 33, 132, 16, 66, 8, 33, 132, 248, 197, 3]
let secondDeflated: [UInt8] = [194, 20, 72, 77, 206, 207, 75, 1, 0]

@Suite struct WebSocketDecoderTests {
    @Test func masksFragmentsAndControlFramesAtEverySplit() {
        let mask: [UInt8] = [0x37, 0xfa, 0x21, 0x3d]
        let wire = frame(1, Array("Hel".utf8), fin: false, mask: mask) + frame(9, Array("hi".utf8), mask: mask)
            + frame(0, Array("lo".utf8), mask: mask) + frame(2, [UInt8](repeating: 7, count: 70_000), mask: mask)
            + frame(8, [0x03, 0xe8] + Array("bye".utf8), mask: mask)
        for size in [1, 3, 7, 1000, wire.count] {
            let decoder = WebSocketDecoder(fromClient: true, deflate: nil, budget: DecodeBudget(bytes: 1 << 20), keep: 100)
            let messages = feed(decoder, wire, size: size)
            #expect(messages.map(\.opcode) == [.ping, .text, .binary, .close], "pieces of \(size)")
            #expect(messages[1].payload == Array("Hello".utf8) && messages[1].frames == 2 && messages[1].bytes == 5)
            #expect(messages[1].wireBytes == 9 + 8)
            #expect(messages[2].bytes == 70_000 && messages[2].payload.count == 100 && messages[2].truncated)
            #expect(messages[2].payload.allSatisfy { $0 == 7 } && messages[2].masked)
            #expect(messages[3].closeCode == 1000 && messages[3].closeReason == "bye")
            #expect(decoder.stopped == nil)
        }
    }

    @Test func theBudgetFallsBackToFrameHeaders() {
        let budget = DecodeBudget(bytes: 1000)
        let decoder = WebSocketDecoder(fromClient: false, deflate: nil, budget: budget, keep: 64)
        let messages = feed(decoder, frame(1, Array(repeating: 65, count: 600)) + frame(1, Array(repeating: 66, count: 600))
                            + frame(1, Array("ok".utf8)), size: 256)
        #expect(messages.map(\.bytes) == [600, nil, nil])
        #expect(messages.map(\.wireBytes) == [604, 604, 4] && budget.spent)
    }

    @Test func protocolErrorsStopDecodingAndSayWhy() {
        for (wire, reason) in [(frame(3, []), "unknown opcode 3"), (frame(0, [1]), "a continuation frame with no message"),
                               (frame(9, [], fin: false), "a control frame fragmented"),
                               (frame(1, [1], rsv1: true), "RSV1 set")] {
            let decoder = WebSocketDecoder(fromClient: false, deflate: nil, budget: DecodeBudget(bytes: 100), keep: 10)
            #expect(feed(decoder, wire + frame(1, [65]), size: 100).isEmpty)
            #expect(decoder.stopped?.hasPrefix(reason) == true, "\(reason)")
        }
    }

    @Test func permessageDeflateIsInflatedAcrossMessages() throws {
        #expect(PerMessageDeflate.negotiated(["permessage-deflate; client_no_context_takeover; server_max_window_bits=10"])
                == PerMessageDeflate(serverNoContextTakeover: false, clientNoContextTakeover: true))
        #expect(PerMessageDeflate.negotiated(["x-webkit-deflate-frame"]) == nil)
        let decoder = WebSocketDecoder(fromClient: false, deflate: PerMessageDeflate(), budget: DecodeBudget(bytes: 1 << 20),
                                       keep: 1 << 20)
        let text = Array(String(repeating: "stream of tokens ", count: 200).utf8)
        let messages = feed(decoder, frame(1, firstDeflated, rsv1: true) + frame(1, secondDeflated, rsv1: true), size: 5)
        #expect(messages.count == 2 && messages[0].compressed && messages[0].payload == text && messages[0].bytes == text.count)
        #expect(messages[1].payload == Array("stream of tokens second".utf8), "the window carried over")
        #expect(messages[1].wireBytes == 2 + secondDeflated.count)
    }
}
