import HTTPTypes
import Testing

@testable import LookoutHTTP

/// Messages that must parse identically however the bytes are split across reads.
let shortRequestMessages: [String] = [
    "GET /a?b HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n",
    "\r\nPOST /form HTTP/1.1\r\nHost: a\r\nContent-Length: 7\r\n\r\nx=1&y=2",
    "POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3;e=\"q\"\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\nY-T: 2\r\n\r\n",
    "POST /c HTTP/1.1\nHost: a\nTransfer-Encoding: chunked\n\n1\r\nz\r\n0\r\n\r\n",
    "GET http://[::1]:8080/x HTTP/1.1\r\nHost: [::1]:8080\r\nConnection: close\r\n\r\n",
    "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nPUT /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\nokGET /3 HTTP/1.0\r\n\r\n",
    "CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n\u{16}\u{03}\u{01}tunnel-bytes",
    "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nGET /x HTTP/1.1\r\nHost: a\r\n\r\n",
]

let shortResponseMessages: [(String, [HTTPRequest.Method])] = [
    ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", [.get]),
    ("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nT: x\r\n\r\n", [.put]),
    ("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nHTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n", [.head, .get, .get]),
    ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nframes", [.get]),
    ("HTTP/1.1 200 Connection Established\r\n\r\ntunnel", [.connect]),
    ("HTTP/1.0 200 OK\r\nServer: x\r\n\r\nuntil close body", [.get]),
]

@Suite struct SplitTests {
    @Test(arguments: shortRequestMessages)
    func requestEverySplitPosition(_ message: String) throws {
        let data = bytes(message)
        let reference = try parseRequests([data])
        #expect(!reference.isEmpty)
        for i in 0...data.count {
            let pieces = split(data, at: [i])
            #expect(try parseRequests(pieces) == reference, "split at \(i)")
        }
        // Every pair of split positions (three reads).
        for i in 0...data.count {
            for j in i...data.count {
                let pieces = split(data, at: [i, j])
                let got = try parseRequests(pieces)
                if got != reference {
                    Issue.record("split at \(i),\(j): \(got) != \(reference)")
                    return
                }
            }
        }
        #expect(try parseRequests(data.map { [$0] }) == reference, "byte by byte")
    }

    @Test(arguments: 0..<shortResponseMessages.count)
    func responseEverySplitPosition(_ index: Int) throws {
        let (message, methods) = shortResponseMessages[index]
        let data = bytes(message)
        let reference = try parseResponses([data], methods: methods, finish: true)
        for i in 0...data.count {
            for j in i...data.count {
                let got = try parseResponses(split(data, at: [i, j]), methods: methods, finish: true)
                if got != reference {
                    Issue.record("split at \(i),\(j): \(got) != \(reference)")
                    return
                }
            }
        }
        #expect(try parseResponses(data.map { [$0] }, methods: methods, finish: true) == reference)
    }

    @Test func emptyReadsAreHarmless() throws {
        let data = bytes(shortRequestMessages[2])
        var chunks: [[UInt8]] = [[]]
        for b in data { chunks.append([b]); chunks.append([]) }
        #expect(try parseRequests(chunks) == (try parseRequests([data])))
    }

    static func longChunkedRequest(rng: inout SplitMix64) -> ([UInt8], [UInt8]) {
        var body: [UInt8] = []
        var wire = bytes("POST /upload HTTP/1.1\r\nHost: upload.example\r\nTransfer-Encoding: chunked\r\n\r\n")
        for k in 0..<60 {
            let size = Int.random(in: 1...5000, using: &rng)
            let chunk = (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
            body += chunk
            wire += HTTPSerializer.chunkHeader(length: size).dropLast(2)
            if k % 3 == 0 { wire += bytes(";k=\(k)") }
            wire += HTTPSerializer.crlf
            wire += chunk
            wire += HTTPSerializer.crlf
        }
        wire += bytes("0\r\nDigest: sha-256=abc\r\n\r\n")
        return (wire, body)
    }

    @Test func longMessagesWithRandomSplits() throws {
        var rng = SplitMix64(seed: 0xC0FFEE)
        let (chunkedWire, chunkedBody) = Self.longChunkedRequest(rng: &rng)
        let clBody = (0..<200_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let clWire = bytes("PUT /big HTTP/1.1\r\nHost: a\r\nContent-Length: \(clBody.count)\r\n\r\n") + clBody
        var bigHeadWire = bytes("GET /h HTTP/1.1\r\nHost: a\r\n")
        for i in 0..<100 { bigHeadWire += bytes("X-Header-\(i): " + String(repeating: "v", count: 300) + "\r\n") }
        bigHeadWire += bytes("\r\n")
        let all = chunkedWire + clWire + bigHeadWire + chunkedWire

        let reference = try parseRequests([all])
        #expect(reference.count == 11)
        #expect(reference[1] == .body(chunkedBody))
        #expect(reference[2] == .end(["Digest: sha-256=abc"]))
        #expect(reference[4] == .body(clBody))
        for pieces in randomSplits(all, count: 60, rng: &rng, maxPieces: 400) {
            let got = try parseRequests(pieces)
            if got != reference {
                Issue.record("random split mismatch with \(pieces.count) pieces")
                return
            }
        }
        // Small reads (1–16 bytes) across the whole stream.
        var small: [[UInt8]] = []
        var i = 0
        while i < all.count {
            let n = Int.random(in: 1...16, using: &rng)
            small.append(Array(all[i..<min(i + n, all.count)]))
            i += n
        }
        #expect(try parseRequests(small) == reference)
    }

    @Test func longResponsesWithRandomSplits() throws {
        var rng = SplitMix64(seed: 42)
        let (chunkedReq, body) = Self.longChunkedRequest(rng: &rng)
        // Reuse the chunked body encoding in a response.
        let bodyStart = chunkedReq.firstIndex(of: 0x0A).map { _ in
            bytes("POST /upload HTTP/1.1\r\nHost: upload.example\r\nTransfer-Encoding: chunked\r\n\r\n").count
        }!
        let chunkedBody = Array(chunkedReq[bodyStart...])
        let wire = bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n") + chunkedBody
            + bytes("HTTP/1.1 200 OK\r\n\r\n") + body
        let reference = try parseResponses([wire], methods: [.get, .get], finish: true)
        #expect(reference.count == 6)
        #expect(reference[1] == .body(body))
        #expect(reference[4] == .body(body))
        for pieces in randomSplits(wire, count: 60, rng: &rng, maxPieces: 300) {
            let got = try parseResponses(pieces, methods: [.get, .get], finish: true)
            if got != reference {
                Issue.record("random split mismatch")
                return
            }
        }
    }

    @Test func bodyIsNeverCopiedAcrossChunkBoundaries() throws {
        // A chunk spanning reads yields one .body per read, each pointing into that read's buffer.
        let head = bytes("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\na\r\n01234")
        let tail = bytes("56789\r\n0\r\n\r\n")
        var p = HTTPRequestParser()
        var ranges: [Range<Int>] = []
        for chunk in [head, tail] {
            try chunk.withUnsafeBytes { buf in
                var offset = 0
                while true {
                    let slice = UnsafeRawBufferPointer(rebasing: buf[offset...])
                    let (c, e) = try p.parse(slice)
                    let start = offset
                    offset += c
                    guard let e else { break }
                    if case .body(let r) = e { ranges.append((start + r.lowerBound)..<(start + r.upperBound)) }
                }
            }
        }
        #expect(ranges == [(head.count - 5)..<head.count, 0..<5])
    }
}
