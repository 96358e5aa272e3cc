@testable import LookoutHTTP2
import Testing

/// The buffer frames are gathered in: the thread's spare serves the next call, and two calls
/// running at once never share bytes.
@Suite struct HTTP2GatherBufferTests {
    @Test func theNextCallOnTheThreadGetsTheSameBuffer() {
        let first = HTTP2GatherBuffer.with { $0.baseAddress }
        // Freed after the first call, the buffer would most likely be handed to this allocation.
        let other = UnsafeMutableRawBufferPointer.allocate(byteCount: HTTP2GatherBuffer.byteCount, alignment: 16)
        defer { other.deallocate() }
        let second = HTTP2GatherBuffer.with { buffer in
            #expect(buffer.count == HTTP2GatherBuffer.byteCount)
            return buffer.baseAddress
        }
        #expect(first != nil && first == second)
    }

    @Test func aCallInsideAnotherGetsBytesOfItsOwn() {
        HTTP2GatherBuffer.with { outer in
            outer.initializeMemory(as: UInt8.self, repeating: 0xAB)
            HTTP2GatherBuffer.with { inner in
                #expect(inner.baseAddress != outer.baseAddress)
                inner.initializeMemory(as: UInt8.self, repeating: 0xCD)
            }
            #expect(outer.allSatisfy { $0 == 0xAB })
        }
        // Both went back: one became the spare, the other was freed; the spare still serves.
        HTTP2GatherBuffer.with { buffer in #expect(buffer.count == HTTP2GatherBuffer.byteCount) }
    }
}
