import Testing
@testable import LookoutMessages

func split(_ splitter: EventStreamSplitter, _ text: String, size: Int) -> [StreamEvent] {
    let bytes = Array(text.utf8)
    return stride(from: 0, to: bytes.count, by: size).flatMap { start in
        bytes[start..<min(bytes.count, start + size)].withUnsafeBytes { splitter.feed($0) }
    } + splitter.finish()
}

@Suite struct EventStreamTests {
    @Test func serverSentEventsFollowTheStandardAtEverySplit() {
        let stream = ": keep-alive\n\ndata: first\n\nevent: add\nid: 7\ndata: a\ndata: b\n\r\ndata:no space\rretry: 10\r\r"
            + "data: never dispatched"
        for size in [1, 2, 5, 100] {
            let splitter = EventStreamSplitter(format: .sse, keep: 100)
            let events = split(splitter, stream, size: size)
            #expect(events.map { String(decoding: $0.data, as: UTF8.self) } == ["first", "a\nb", "no space"], "pieces of \(size)")
            #expect(events.map(\.name) == ["message", "add", "message"] && events.map(\.id) == [nil, "7", "7"])
            #expect(events[0].bytes == "data: first\n\n".utf8.count && splitter.comments == 1)
        }
    }

    @Test func ndjsonAndJSONSequencesAreALineOrARecordEach() {
        let ndjson = EventStreamSplitter(format: .ndjson, keep: 4)
        let lines = split(ndjson, "{\"a\":1}\n\n{\"b\":2}\r\n{\"c\":3}", size: 3)
        #expect(lines.map { String(decoding: $0.data, as: UTF8.self) } == ["{\"a\"", "{\"b\"", "{\"c\""])
        #expect(lines.map(\.truncated) == [true, true, true] && lines.map(\.bytes) == [8, 9, 7])
        let sequence = EventStreamSplitter(format: .jsonSeq, keep: 100)
        #expect(split(sequence, "\u{1e}{\"a\":1}\n\u{1e}[2]\n", size: 4).map { String(decoding: $0.data, as: UTF8.self) }
                == ["{\"a\":1}", "[2]"])
        #expect(StreamFormat.of(contentType: "text/event-stream; charset=utf-8") == .sse)
        #expect(StreamFormat.of(contentType: "application/grpc+proto") == .grpc && StreamFormat.of(contentType: "text/html") == nil)
    }

    @Test func grpcMessagesAndGRPCWebTrailers() {
        let splitter = GRPCMessageSplitter(keep: 3, web: true)
        var wire: [UInt8] = [0, 0, 0, 0, 5, 1, 2, 3, 4, 5, 1, 0, 0, 0, 0]
        wire += [0x80, 0, 0, 0, 34] + Array("grpc-status: 5\r\ngrpc-message: gone".utf8)
        let events = stride(from: 0, to: wire.count, by: 2).flatMap { start in
            wire[start..<min(wire.count, start + 2)].withUnsafeBytes { splitter.feed($0) }
        }
        #expect(events.map(\.bytes) == [10, 5] && events[0].data == [1, 2, 3] && events[0].truncated)
        #expect(events[1].compressed && !events[0].compressed)
        #expect(splitter.trailers.map { "\($0.0)=\($0.1)" } == ["grpc-status=5", "grpc-message=gone"])
    }

    @Test func gapsAreQuantilesOverTheWholeStream() {
        var recorder = GapRecorder()
        for index in 0..<20_001 { recorder.event(at: Double(index) * 10 + (index == 15_000 ? 500 : 0)) }
        let q = recorder.quantiles!
        #expect(q.p50 == 10 && q.max == 510)
    }
}

@Suite struct StreamFormatTests {
    @Test func mediaTypesAreComparedWithoutCaseOrParameters() {
        #expect(StreamFormat.of(contentType: " Text/Event-Stream ;charset=utf-8") == .sse)
        #expect(StreamFormat.of(contentType: "APPLICATION/JSONL") == .ndjson)
        #expect(StreamFormat.of(contentType: "application/grpc-web+proto") == .grpcWeb)
        #expect(StreamFormat.of(contentType: "application/grpc+json") == .grpc && StreamFormat.of(contentType: "application/grpc+") == nil)
        #expect(StreamFormat.of(contentType: "text/event-streams") == nil && StreamFormat.of(contentType: "") == nil)
        #expect(StreamFormat.of(contentType: nil) == nil && StreamFormat.of(contentType: "application/json") == nil)
    }
}
