import LookoutModel
import CLookoutCompression
import LookoutMessages
import Testing
@testable import LookoutOTel

@Suite struct TraceContextTests {
    @Test func parsesTraceparentAsTheW3CSpecifies() throws {
        let valid = try #require(TraceContext.parse(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
        #expect(valid.traceHigh == 0x4bf9_2f35_77b3_4da6 && valid.traceLow == 0xa3ce_929d_0e0e_4736)
        #expect(valid.span == 0x00f0_67aa_0ba9_02b7 && valid.sampled)
        #expect(TraceContext.parse(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")?.sampled == false)
        // A later version is read by its first four fields.
        #expect(TraceContext.parse(traceparent: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra") != nil)
        for invalid in ["", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // uppercase
                        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",      // version ff
                        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",      // zero trace id
                        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",      // zero parent id
                        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",       // short
                        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x"] {   // extra field on 00
            #expect(TraceContext.parse(traceparent: invalid) == nil, "\(invalid)")
        }
    }

    @Test func continuesTheClientsTraceAndNamesEachAttempt() {
        let parent = (traceHigh: UInt64(1), traceLow: UInt64(2), span: UInt64(3), sampled: false)
        let context = TraceContext.start(parent: parent, traceState: "a=1", sampleRatio: 1)
        #expect(context.traceIDHigh == 1 && context.traceIDLow == 2 && context.parentSpanID == 3 && !context.sampled)
        #expect(context.traceState == "a=1" && context.spanID != 0 && context.spanID != 3)
        #expect(context.attemptSpanID(1) != context.attemptSpanID(2) && context.attemptSpanID(1) != context.spanID)
        #expect(context.traceparent(attempt: 2) == "00-00000000000000010000000000000002-\(TraceContext.hex(context.attemptSpanID(2)))-00")
        let fresh = (0..<200).map { _ in TraceContext.start(parent: nil, traceState: nil, sampleRatio: 0.25) }
        let kept = fresh.filter(\.sampled).count
        #expect(kept > 20 && kept < 80, "about a quarter sampled: \(kept)")
        #expect(!TraceContext.start(parent: nil, traceState: nil, sampleRatio: 0).sampled)
    }
}

@Suite struct OTelSettingsTests {
    @Test func theStandardVariablesWin() {
        var settings = OTelSettings()
        settings.headers = [("authorization", "from file")]
        settings.applyEnvironment([
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20x, k = v ",
            "OTEL_RESOURCE_ATTRIBUTES": "service.name=attr,deployment.environment=prod", "OTEL_SERVICE_NAME": "svc",
        ])
        #expect(settings.endpoint == "http://collector:4318")
        #expect(settings.headers.map { "\($0.0)=\($0.1)" } == ["Authorization=Bearer x", "k=v"])
        #expect(settings.resource.map { "\($0.0)=\($0.1)" } == ["deployment.environment=prod", "service.name=svc"])
    }

    @Test func endpointsAreTakenApart() {
        #expect(OTLPEndpoint("http://127.0.0.1:4318") == OTLPEndpoint("http://127.0.0.1:4318/"))
        let withPath = OTLPEndpoint("http://[::1]:9000/otlp/")
        #expect(withPath?.host == "::1" && withPath?.port == 9000 && withPath?.path(for: "traces") == "/otlp/v1/traces")
        #expect(OTLPEndpoint("http://collector")?.port == 4318)
        #expect(OTLPEndpoint("https://collector")?.isSecure == true && OTLPEndpoint("http://collector")?.isSecure == false)
        #expect(OTLPEndpoint("ftp://collector") == nil && OTLPEndpoint("http://:80") == nil && OTLPEndpoint("http://h:99999") == nil)
        #expect(OTelSettings.endpointProblem("https://c:4318") == nil && OTelSettings.endpointProblem("c:4318") != nil)
    }
}

@Suite struct OTLPEncodingTests {
    @Test func partialSuccessIsReadFromEitherWire() {
        // ExportTraceServiceResponse { partial_success { rejected_spans: 3, error_message: "x" } }
        #expect(OTLPExporter.rejectedCount([0x0a, 0x05, 0x08, 0x03, 0x12, 0x01, 0x78], json: false) == 3)
        #expect(OTLPExporter.rejectedCount(Array(#"{"partialSuccess":{"rejectedLogRecords":"12"}}"#.utf8), json: true) == 12)
        #expect(OTLPExporter.rejectedCount([], json: false) == 0)
    }

    @Test func oneofMembersAreWrittenEvenWhenDefault() {
        var sink = ProtobufSpanSink()
        sink.begin(SpanHead(traceIDHigh: 1, traceIDLow: 2, spanID: 3, name: "GET", kind: .server, start: 10, end: 20))
        for (key, value) in [("zero", OTelValue.int(0)), ("no", .bool(false)), ("empty", .string(""))] { sink.attribute(key, value) }
        sink.end()
        let bytes = sink.out.bytes
        // KeyValue{key:"zero", value:AnyValue{int_value: 0}} = 0a 04 "zero" 12 02 18 00
        #expect(bytes.firstRange(of: [0x0a, 0x04] + Array("zero".utf8) + [0x12, 0x02, 0x18, 0x00]) != nil)
        #expect(bytes.firstRange(of: [0x0a, 0x02] + Array("no".utf8) + [0x12, 0x02, 0x10, 0x00]) != nil)
        #expect(bytes.firstRange(of: [0x0a, 0x05] + Array("empty".utf8) + [0x12, 0x02, 0x0a, 0x00]) != nil)
    }

    /// A request is its prefix and the records' fields as they were encoded, and the prefix's
    /// lengths are the ones the nested messages have.
    @Test func aBatchIsWrappedWithLengthsThatAddUp() {
        var sink = ProtobufSpanSink()
        for id in 1...3 {
            sink.begin(SpanHead(traceIDHigh: 1, traceIDLow: 2, spanID: UInt64(id), name: "GET", kind: .client, start: 1, end: 2))
            sink.attribute("url.full", .string(String(repeating: "x", count: 200)))
            sink.end()
        }
        #expect(sink.ends.count == 3 && sink.ends.last == sink.out.bytes.count)
        let wrapped = OTLPProtobuf.ResourceAndScope(resource: [("service.name", "lookout")], scope: ("lookout", "1"))
        let body = OTLPProtobuf.requestPrefix(recordsLength: sink.out.bytes.count, resourceAndScope: wrapped) + sink.out.bytes
        // Field 1, then its length as a varint, covers the rest of the body exactly.
        #expect(body[0] == 0x0a)
        var length = 0, shift = 0, index = 1
        while true {
            let byte = Int(body[index]); index += 1
            length |= (byte & 0x7f) << shift; shift += 7
            if byte < 0x80 { break }
        }
        #expect(index + length == body.count)
        var queue = EncodedQueue(maxRecords: 2, maxQueue: 5, separator: [])
        let dropped = sink.out.bytes.withUnsafeBytes { bytes in
            queue.append(bytes, ends: sink.ends, now: 1) + queue.append(bytes, ends: sink.ends, now: 2)
        }
        #expect(dropped == 1 && queue.total == 5 && queue.hasFullBatch)
        #expect(queue.takeFirst()?.count == 2 && queue.takeFirst()?.count == 2 && queue.takeFirst()?.count == 1 && queue.isEmpty)
    }

    @Test func queuedBatchesHoldTheirRecordsAndReserveAFullBatch() {
        var queue = EncodedQueue(maxRecords: 2, maxQueue: 10, separator: Array(",".utf8))
        let records = Array("abbcccdddde".utf8)
        _ = records.withUnsafeBytes { queue.append($0, ends: [1, 3, 6, 10, 11], now: 7) }
        #expect(queue.batches.count == 3 && queue.oldest == 7)
        #expect(queue.batches.map { String(decoding: $0.bytes, as: UTF8.self) } == ["a,bb", "ccc,dddd", "e"])
        // Each batch after a full one starts with room for as much as that one held.
        #expect(queue.batches[2].bytes.capacity >= "ccc,dddd".utf8.count)
    }

    /// A sent batch's storage comes back emptied and the next batch is written into it, holding
    /// only its own records; no more than two are kept.
    @Test func sentBatchesLendTheirStorageToTheNext() {
        var queue = EncodedQueue(maxRecords: 2, maxQueue: 10, separator: [])
        let large = [UInt8](repeating: 0x61, count: 5000)
        _ = large.withUnsafeBytes { queue.append($0, ends: [2500, 5000], now: 1) }
        guard var sent = queue.takeFirst() else {
            Issue.record("no batch")
            return
        }
        let storage = sent.bytes.withUnsafeBufferPointer { $0.baseAddress }
        queue.recycle(&sent.bytes)
        #expect(sent.bytes.isEmpty && queue.isEmpty)
        _ = Array("xyz".utf8).withUnsafeBytes { queue.append($0, ends: [3], now: 2) }
        #expect(queue.batches.count == 1 && queue.batches[0].bytes == Array("xyz".utf8))
        #expect(queue.batches[0].bytes.capacity >= 5000)
        #expect(queue.batches[0].bytes.withUnsafeBufferPointer { $0.baseAddress } == storage)
        #expect(queue.spare.isEmpty)
        var others = [[UInt8]](repeating: large, count: 3)
        for index in others.indices { queue.recycle(&others[index]) }
        #expect(queue.spare.count == EncodedQueue.maximumSpare && queue.spare.allSatisfy { $0.isEmpty && $0.capacity >= 5000 })
        #expect(others.allSatisfy { $0.isEmpty })
    }

    /// Attributes of every kind and of lengths around each varint boundary (127/128 bytes,
    /// 16,383/16,384) and each way of copying short strings (under 4, 4 to 7, 8 to 16, 17 to 32 bytes)
    /// read back as written, the span's own length included.
    @Test func attributesReadBackAsWritten() throws {
        let lengths = [0, 1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 20, 24, 31, 32, 33, 100, 117, 118, 127, 128, 300, 16_370, 16_383, 16_384, 70_000]
        var written: [(String, OTelValue)] = lengths.map { ("s\($0)", .string(String(repeating: "é", count: $0 / 2) + String(repeating: "x", count: $0 % 2))) }
        written += [("i", .int(-1)), ("i0", .int(0)), ("big", .int(Int64.max)), ("d", .double(-2.5)), ("t", .bool(true)),
                    ("list", .strings(["a", "", String(repeating: "y", count: 200)])), ("", .string("no key")), ("", .int(3))]
        // Around where a whole attribute stops fitting one length byte (keys and values both).
        for keyLength in [1, 100, 117, 118, 119, 121, 122, 123, 127, 128, 200] {
            let key = String(repeating: "k", count: keyLength)
            written += [(key, .string("v")), (key, .int(300)), (key, .int(-1)), (key, .string(String(repeating: "w", count: 122 - min(keyLength, 122))))]
        }
        var sink = ProtobufSpanSink()
        sink.begin(SpanHead(traceIDHigh: 1, traceIDLow: 2, spanID: 3, name: "GET", kind: .server, start: 10, end: 20))
        for (key, value) in written { sink.attribute(key, value) }
        sink.end()
        var outer = ProtobufWireReader(sink.out.bytes[...])
        guard let (field, top) = outer.next(), field == 2, case .bytes(let span) = top else { Issue.record("no span field"); return }
        let spanIsAll = outer.atEnd && span.endIndex == sink.out.bytes.count
        #expect(spanIsAll)
        var read: [(String, OTelValue)] = []
        var fields = ProtobufWireReader(span)
        while let (number, value) = fields.next() {
            guard number == 9, case .bytes(let keyValue) = value else { continue }
            read.append(try Self.decodeKeyValue(keyValue))
        }
        let fieldsAreAll = fields.atEnd
        #expect(fieldsAreAll)
        #expect(read.count == written.count)
        for (got, want) in zip(read, written) { #expect(got.0 == want.0 && got.1 == want.1, "\(want.0)") }
    }

    private static func decodeKeyValue(_ bytes: ArraySlice<UInt8>) throws -> (String, OTelValue) {
        var reader = ProtobufWireReader(bytes)
        var key = ""
        var value: OTelValue?
        while let (number, field) = reader.next() {
            guard case .bytes(let content) = field else { continue }
            if number == 1 { key = String(decoding: content, as: UTF8.self) }
            if number == 2 { value = try decodeAnyValue(content) }
        }
        return (key, try #require(value))
    }

    private static func decodeAnyValue(_ bytes: ArraySlice<UInt8>) throws -> OTelValue {
        let tag = try #require(bytes.first)
        if tag == 0x21 {  // double_value (4), fixed64
            let bits = bytes.dropFirst().prefix(8).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return .double(Double(bitPattern: bits))
        }
        var reader = ProtobufWireReader(bytes)
        guard let (number, field) = reader.next() else { throw OTLPPoster.Failure.malformed("empty AnyValue") }
        switch (number, field) {
        case (1, .bytes(let text)): return .string(String(decoding: text, as: UTF8.self))
        case (2, .number(let flag)): return .bool(flag != 0)
        case (3, .number(let n)): return .int(Int64(bitPattern: n))
        case (5, .bytes(let list)):
            var items = ProtobufWireReader(list)
            var strings: [String] = []
            while let (_, item) = items.next() {
                guard case .bytes(let any) = item, case .string(let text) = try decodeAnyValue(any) else { continue }
                strings.append(text)
            }
            return .strings(strings)
        default: throw OTLPPoster.Failure.malformed("AnyValue field \(number)")
        }
    }

    /// How a Collector's answer ends (RFC 9112 §6.3) and whether its connection is kept.
    @Test func answersAreFramedAndConnectionsKeptAsHTTP11Says() throws {
        /// The answer once `text` is read, given whole or a byte at a time, and then closed if asked.
        func read(_ text: String, thenClosed: Bool = false, byteByByte: Bool = false) throws -> (answer: OTLPPoster.Answer, keep: Bool)? {
            var reader = OTLPPoster.AnswerReader()
            let bytes = Array(text.utf8)
            let pieces = byteByByte ? bytes.map { [$0] } : [bytes]
            for piece in pieces {
                if let done = try reader.take(piece) { return done }
            }
            return thenClosed ? try reader.closed() : nil
        }
        func keeps(_ text: String) throws -> Bool? { try read(text)?.keep }
        #expect(try keeps("HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n0123456789ab") == true)
        #expect(try keeps("HTTP/1.1 200 OK\r\ncontent-length:  0 \r\nConnection: keep-alive, close\r\n\r\n") == false)
        #expect(try keeps("HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nabc") == false)
        // Until the close: complete only once the Collector closes, and never kept.
        #expect(try read("HTTP/1.1 200 OK\r\nServer: x\r\n\r\nabc") == nil)
        let untilClose = try read("HTTP/1.1 200 OK\r\nServer: x\r\n\r\nabc", thenClosed: true)
        #expect(untilClose?.keep == false && untilClose?.answer.body == Array("abc".utf8))
        // Both framings at once is refused (§6.3: it ought to be handled as an error).
        #expect(throws: OTLPPoster.Failure.self) {
            try read("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n")
        }

        let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        func chunked(_ body: String) throws -> (answer: OTLPPoster.Answer, keep: Bool)? { try read(head + body) }
        #expect(try chunked("3\r\nabc\r\n") == nil)
        #expect(try chunked("3\r\nabc\r\n0\r\n") == nil)
        let extended = try chunked("3;x=y\r\nabc\r\n0\r\n\r\n")
        #expect(extended?.answer.body == Array("abc".utf8) && extended?.keep == true)
        #expect(try chunked("0\r\nTrailer: t\r\n") == nil)
        #expect(try chunked("0\r\nTrailer: t\r\n\r\n")?.answer.body == [])
        #expect(throws: OTLPPoster.Failure.self) { try chunked("zz\r\n") }

        let sized = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        let whole = try read(sized)
        #expect(whole?.answer.status == 200 && whole?.answer.body == Array("ok".utf8))
        #expect(try read(String(sized.dropLast())) == nil)
        #expect(try read(sized, byteByByte: true)?.answer.body == Array("ok".utf8))
    }

    /// Interim answers are passed over, Retry-After is read, and an answer the connection cannot
    /// be trusted after (bytes beyond it, a close in its middle, a close before it) is told apart.
    @Test func answersAroundTheEdgesAreReadAsHTTP11Says() throws {
        var reader = OTLPPoster.AnswerReader()
        let interim = try reader.take(Array("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Busy\r\nRetry-After: 7\r\nContent-Length: 0\r\n\r\n".utf8))
        #expect(interim?.answer.status == 503 && interim?.answer.retryAfter == 7 && interim?.keep == true)

        reader = OTLPPoster.AnswerReader()
        #expect(try reader.take(Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1".utf8))?.keep == false)

        reader = OTLPPoster.AnswerReader()
        #expect(try reader.take(Array("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc".utf8)) == nil)
        #expect(throws: OTLPPoster.Failure.self) { try reader.closed() }

        reader = OTLPPoster.AnswerReader()
        #expect(try reader.closed() == nil && !reader.hasStarted)

        reader = OTLPPoster.AnswerReader()
        let large = "HTTP/1.1 200 OK\r\nContent-Length: \(OTLPPoster.maximumAnswerBytes + 1)\r\n\r\n"
        #expect(throws: OTLPPoster.Failure.self) {
            _ = try reader.take(Array(large.utf8) + [UInt8](repeating: 0x61, count: OTLPPoster.maximumAnswerBytes + 1))
        }
    }

    /// A batch's gzip is one member zlib reads back byte for byte: a repetitive batch, random
    /// bytes (which igzip stores, a little larger), and nothing at all.
    @Test func batchesGzipToWhatZlibReadsBack() throws {
        let gzip = BatchGzip()
        var generator = SystemRandomNumberGenerator()
        let repetitive = Array(String(repeating: "{\"url.full\":\"http://h.test/x\",\"id\":12}", count: 4000).utf8)
        let random = (0..<200_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        // In two parts (an export's prefix and its records), split anywhere: still one member.
        for split in [0, 1, 7, 65_536, repetitive.count] {
            let compressed = try #require(gzip.compress(Array(repetitive[..<split]), Array(repetitive[split...])) { Array($0) })
            var out = [UInt8](repeating: 0, count: repetitive.count + 1)
            let count = compressed.withUnsafeBufferPointer { source in
                out.withUnsafeMutableBufferPointer { lookout_inflate(source.baseAddress, source.count, $0.baseAddress, $0.count, 15 + 16) }
            }
            #expect(count == repetitive.count && Array(out.prefix(max(0, count))) == repetitive)
        }
        for input in [repetitive, random, []] {
            let compressed = try #require(gzip.compress(input))
            #expect(compressed.prefix(2) == [0x1f, 0x8b])
            var out = [UInt8](repeating: 0, count: input.count + 1)
            let count = compressed.withUnsafeBufferPointer { source in
                out.withUnsafeMutableBufferPointer { lookout_inflate(source.baseAddress, source.count, $0.baseAddress, $0.count, 15 + 16) }
            }
            #expect(count == input.count)
            #expect(Array(out.prefix(max(0, count))) == input)
        }
        #expect(try #require(gzip.compress(repetitive)).count < repetitive.count / 10)
    }

    @Test func urlsLoseTheirCredentials() {
        #expect(SpanBuilder.redacted("https://u:p@h.test/a?b=c") == "https://REDACTED:REDACTED@h.test/a?b=c")
        #expect(SpanBuilder.redacted("http://h.test/a@b") == "http://h.test/a@b")
        #expect(SpanBuilder.hostAndPort("https://h.test/x", kind: .http) == ("h.test", 443))
        #expect(SpanBuilder.hostAndPort("h.test:8443", kind: .tunnel) == ("h.test", 8443))
        #expect(SpanBuilder.hostAndPort("http://[::1]:81/", kind: .http) == ("::1", 81))
    }

    @Test func urlPartsAroundTheEdges() {
        #expect(SpanBuilder.redacted("http://h.test?x=@y") == "http://h.test?x=@y")
        #expect(SpanBuilder.redacted("https://a@b@h.test:1/p") == "https://REDACTED:REDACTED@h.test:1/p")
        #expect(SpanBuilder.redacted("h.test:443") == "h.test:443")
        #expect(SpanBuilder.redacted("") == "")
        #expect(SpanBuilder.hostAndPort("http://user@h.test:8080/x", kind: .http) == ("h.test", 8080))
        #expect(SpanBuilder.hostAndPort("https://[::1]/", kind: .http) == ("::1", 443))
        #expect(SpanBuilder.hostAndPort("http://h.test:abc/", kind: .http) == ("h.test", 80))
        #expect(SpanBuilder.hostAndPort("h.test", kind: .tunnel) == ("h.test", 443))
        #expect(SpanBuilder.hostAndPort("http://h.test#a@b", kind: .http) == ("h.test", 80))
        #expect(SpanBuilder.splitAddress("fe80::1") == ("fe80::1", nil))
        #expect(SpanBuilder.splitAddress("127.0.0.1:5000") == ("127.0.0.1", 5000))
        #expect(SpanBuilder.splitAddress("[::1]") == ("::1", nil))
        #expect(SpanBuilder.splitAddress("[::1]:8") == ("::1", 8))
        #expect(SpanBuilder.splitAddress("") == ("", nil))
        // A port is 1 to 5 decimal digits, read in place; anything else is no port.
        #expect(SpanBuilder.splitAddress("h.test:65535") == ("h.test", 65535))
        #expect(SpanBuilder.splitAddress("h.test:0") == ("h.test", 0))
        for bad in ["h.test:", "h.test:8x", "h.test:+80", "h.test:123456", "h.test: 80"] {
            #expect(SpanBuilder.splitAddress(bad) == ("h.test", nil), "\(bad)")
        }
        #expect(SpanBuilder.splitAddress("[::1]:") == ("::1", nil))
        // All three from one scan, the same as each alone.
        for (url, kind) in [("https://u:p@h.test/x", ExchangeSummary.Kind.http), ("http://[::1]:81/", .http), ("h.test:8443", .tunnel)] {
            let parts = SpanBuilder.URLParts(url, kind: kind)
            #expect(parts.redacted == SpanBuilder.redacted(url))
            #expect((parts.host, parts.port) == SpanBuilder.hostAndPort(url, kind: kind))
        }
        #expect(SpanBuilder.URLParts("https://u:p@h.test/x", kind: .http).redacted == "https://REDACTED:REDACTED@h.test/x")
        #expect(["HTTP/1.1", "HTTP/2", "HTTP/1.0", "HTTP/3", "h2c"].map(SpanBuilder.protocolVersion) == ["1.1", "2", "1.0", "3", "h2c"])
    }
}
