import HTTPTypes
import Testing

@testable import LookoutHTTP

/// Outcome of parsing a stream: the events produced, and the error that stopped it (if any).
struct Outcome: Equatable, CustomStringConvertible {
    var items: [Item]
    var error: HTTPParseError?
    var description: String { "\(items) error=\(error.map { "\($0)" } ?? "none")" }
}

func requestOutcome(_ chunks: [[UInt8]]) -> Outcome {
    var p = HTTPRequestParser()
    var items: [Item] = []
    var stopped = false
    do {
        try drive(&p, chunks, into: &items, stopped: &stopped, describe: describe(_:))
        return Outcome(items: normalise(items), error: nil)
    } catch let e as HTTPParseError {
        return Outcome(items: normalise(items), error: e)
    } catch {
        return Outcome(items: [], error: nil)
    }
}

func responseOutcome(_ chunks: [[UInt8]], methods: [HTTPRequest.Method]) -> Outcome {
    var p = HTTPResponseParser()
    for m in methods { p.expectResponse(to: m) }
    var items: [Item] = []
    var stopped = false
    do {
        try drive(&p, chunks, into: &items, stopped: &stopped, describe: describe(_:))
        if let e = try p.finish(), case .end(let t) = e { items.append(.end(t.map(fieldsDescription))) }
        return Outcome(items: normalise(items), error: nil)
    } catch let e as HTTPParseError {
        return Outcome(items: normalise(items), error: e)
    } catch {
        return Outcome(items: [], error: nil)
    }
}

/// Merges adjacent body / rest items (drive merges only within one call).
func normalise(_ items: [Item]) -> [Item] {
    var out: [Item] = []
    for item in items {
        switch (out.last, item) {
        case (.body(let a)?, .body(let b)): out[out.count - 1] = .body(a + b)
        case (.rest(let a)?, .rest(let b)): out[out.count - 1] = .rest(a + b)
        default: out.append(item)
        }
    }
    return out
}

/// Events and errors before the error point must not depend on how bytes are split; when an error
/// happens, the items delivered before it may be a prefix (a split can deliver body bytes earlier).
func expectConsistent(_ reference: Outcome, _ other: Outcome, _ context: String) -> Bool {
    if reference.error != other.error { return false }
    if reference.error == nil { return reference.items == other.items }
    // With an error, heads and ends must agree; body bytes may differ only in how far they got.
    let a = reference.items.filter { if case .body = $0 { return false } else { return true } }
    let b = other.items.filter { if case .body = $0 { return false } else { return true } }
    return a == b
}

@Suite struct FuzzTests {
    static let seeds: [[UInt8]] = [
        bytes("GET /a HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n"),
        bytes("POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\nHost: b\r\n\r\n"),
        bytes("POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: 1\r\n\r\n"),
        bytes("GET http://[::1]:80/x HTTP/1.1\r\nHost: [::1]\r\nConnection: close\r\n\r\n"),
        bytes("CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\nxyz"),
    ]
    static let interesting: [UInt8] = [0x0D, 0x0A, 0x20, 0x09, 0x00, 0x3A, 0x3B, 0x2C, 0x30, 0x61, 0x7F, 0xFF, 0x22, 0x2F, 0x3F, 0x5B, 0x5D]

    static func mutate(_ seed: [UInt8], rng: inout SplitMix64) -> [UInt8] {
        var m = seed
        for _ in 0..<Int.random(in: 1...3, using: &rng) {
            let i = Int.random(in: 0..<m.count, using: &rng)
            let b = interesting.randomElement(using: &rng)!
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: m[i] = b
            case 1: m.insert(b, at: i)
            default: if m.count > 1 { m.remove(at: i) }
            }
        }
        return m
    }

    @Test func mutatedRequestsParseTheSameWhateverTheSplit() {
        var rng = SplitMix64(seed: 7)
        var errors = 0
        for round in 0..<5000 {
            let seed = Self.seeds[round % Self.seeds.count]
            let m = Self.mutate(seed, rng: &rng)
            let reference = requestOutcome([m])
            if reference.error != nil { errors += 1 }
            let byteByByte = requestOutcome(m.map { [$0] })
            if !expectConsistent(reference, byteByByte, "bytes") {
                Issue.record("byte-by-byte differs for \(String(decoding: m, as: UTF8.self).debugDescription):\n\(reference)\nvs\n\(byteByByte)")
                return
            }
            for pieces in randomSplits(m, count: 3, rng: &rng, maxPieces: 6) {
                let other = requestOutcome(pieces)
                if !expectConsistent(reference, other, "split") {
                    Issue.record("split differs for \(String(decoding: m, as: UTF8.self).debugDescription):\n\(reference)\nvs\n\(other)")
                    return
                }
            }
        }
        #expect(errors > 500)  // the mutations do exercise the error paths
    }

    @Test func mutatedResponsesParseTheSameWhateverTheSplit() {
        let seeds: [([UInt8], [HTTPRequest.Method])] = [
            (bytes("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 204 No\r\n\r\n"), [.get, .get]),
            (bytes("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"), [.post]),
            (bytes("HTTP/1.0 200 OK\r\nX: y\r\n\r\nbody until close"), [.get]),
        ]
        var rng = SplitMix64(seed: 11)
        for round in 0..<3000 {
            let (seed, methods) = seeds[round % seeds.count]
            let m = Self.mutate(seed, rng: &rng)
            let reference = responseOutcome([m], methods: methods)
            let byteByByte = responseOutcome(m.map { [$0] }, methods: methods)
            if !expectConsistent(reference, byteByByte, "bytes") {
                Issue.record("byte-by-byte differs for \(String(decoding: m, as: UTF8.self).debugDescription):\n\(reference)\nvs\n\(byteByByte)")
                return
            }
        }
    }

    @Test func randomGarbageNeverCrashes() {
        var rng = SplitMix64(seed: 99)
        for _ in 0..<2000 {
            let n = Int.random(in: 0...200, using: &rng)
            let data = (0..<n).map { _ in
                Bool.random(using: &rng) ? Self.interesting.randomElement(using: &rng)! : UInt8.random(in: 0...255, using: &rng)
            }
            _ = requestOutcome([data])
            _ = responseOutcome([data], methods: [.get])
            _ = requestOutcome(bytes("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n").map { $0 } .chunked() + [data])
        }
    }
}

extension Array where Element == UInt8 {
    /// Wraps the bytes as a single read.
    func chunked() -> [[UInt8]] { [self] }
}
