import HTTPTypes
import Testing

@testable import LookoutHTTP

protocol EventSource {
    associatedtype Head: Sendable
    mutating func parse(_ input: UnsafeRawBufferPointer) throws(HTTPParseError) -> (consumed: Int, event: HTTPParseEvent<Head>?)
}

extension HTTPRequestParser: EventSource {}
extension HTTPResponseParser: EventSource {}

/// Normalised parse output: consecutive body slices are merged, so different read splits compare equal.
enum Item: Equatable, CustomStringConvertible {
    case head(String)
    case body([UInt8])
    case end([String]?)
    /// Bytes left unconsumed after the parser stopped (tunnel data).
    case rest([UInt8])

    var description: String {
        switch self {
        case .head(let s): return "head(\(s))"
        case .body(let b): return "body(\(b.count) bytes: \(String(decoding: b.prefix(40), as: UTF8.self)))"
        case .end(let t): return "end(\(t.map { "\($0)" } ?? "nil"))"
        case .rest(let b): return "rest(\(String(decoding: b, as: UTF8.self)))"
        }
    }
}

func fieldsDescription(_ fields: HTTPFields) -> [String] {
    fields.map { f in
        let v = f.withUnsafeBytesOfValue { Array($0) }
        return "\(f.name.rawName): \(String(decoding: v, as: UTF8.self))"
    }
}

func describe(_ h: RequestHead) -> String {
    "\(h.method.rawValue) \(h.rawTarget) \(h.version) target=\(h.target) framing=\(h.framing) ka=\(h.keepAlive) "
        + "continue=\(h.expectsContinue) upgrade=\(h.upgrade ?? "-") len=\(h.headLength) fields=\(fieldsDescription(h.headerFields))"
}

func describe(_ h: ResponseHead) -> String {
    "\(h.version) \(h.status) '\(h.reasonPhrase)' framing=\(h.framing) ka=\(h.keepAlive) len=\(h.headLength) "
        + "fields=\(fieldsDescription(h.headerFields))"
}

func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

/// Feeds `chunks` to `parser` in order, following the documented calling loop, and records the events.
func drive<P: EventSource>(
    _ parser: inout P, _ chunks: [[UInt8]], describe: (P.Head) -> String,
    onHead: ((P.Head) -> Void)? = nil
) throws -> [Item] {
    var items: [Item] = []
    var stopped = false
    try drive(&parser, chunks, into: &items, stopped: &stopped, describe: describe, onHead: onHead)
    return items
}

/// Same as `drive`, recording into `items` as events arrive (so items before an error are kept).
func drive<P: EventSource>(
    _ parser: inout P, _ chunks: [[UInt8]], into items: inout [Item], stopped: inout Bool,
    describe: (P.Head) -> String, onHead: ((P.Head) -> Void)? = nil
) throws {
    for chunk in chunks {
        if stopped {
            append(&items, .rest(chunk))
            continue
        }
        try chunk.withUnsafeBytes { buffer in
            var offset = 0
            var guardCount = 0
            while true {
                guardCount += 1
                precondition(guardCount < 10_000_000, "parser loop does not terminate")
                let slice = UnsafeRawBufferPointer(rebasing: buffer[offset...])
                let (consumed, event) = try parser.parse(slice)
                #expect(consumed >= 0 && consumed <= slice.count)
                let sliceStart = offset
                offset += consumed
                guard let event else {
                    if offset < buffer.count {
                        stopped = true
                        append(&items, .rest(Array(buffer[offset...])))
                    }
                    break
                }
                switch event {
                case .head(let h):
                    onHead?(h)
                    items.append(.head(describe(h)))
                case .body(let r):
                    #expect(r.upperBound <= slice.count)
                    #expect(r.lowerBound >= 0)
                    #expect(r.upperBound == consumed, "a body slice ends exactly where consumption ends")
                    #expect(!r.isEmpty)
                    append(&items, .body(Array(buffer[(sliceStart + r.lowerBound)..<(sliceStart + r.upperBound)])))
                case .end(let trailers):
                    items.append(.end(trailers.map(fieldsDescription)))
                }
            }
        }
    }
}

private func append(_ items: inout [Item], _ item: Item) {
    switch (items.last, item) {
    case (.body(let a)?, .body(let b)):
        items[items.count - 1] = .body(a + b)
    case (.rest(let a)?, .rest(let b)):
        items[items.count - 1] = .rest(a + b)
    default:
        items.append(item)
    }
}

func parseRequests(_ chunks: [[UInt8]], limits: HTTPParserLimits = HTTPParserLimits()) throws -> [Item] {
    var p = HTTPRequestParser(limits: limits)
    return try drive(&p, chunks, describe: describe(_:))
}

func parseRequests(_ s: String, limits: HTTPParserLimits = HTTPParserLimits()) throws -> [Item] {
    try parseRequests([bytes(s)], limits: limits)
}

/// Parses the request heads of `s` (one read) and returns them.
func requestHeads(_ s: String, limits: HTTPParserLimits = HTTPParserLimits()) throws -> [RequestHead] {
    var p = HTTPRequestParser(limits: limits)
    var heads: [RequestHead] = []
    _ = try drive(&p, [bytes(s)], describe: describe(_:), onHead: { heads.append($0) })
    return heads
}

func requestHead(_ s: String) throws -> RequestHead {
    let heads = try requestHeads(s)
    guard let h = heads.first else { throw TestFailure("no head") }
    return h
}

/// Parses responses; `methods` are queued with expectResponse; `finish` calls finish() at the end.
func parseResponses(
    _ chunks: [[UInt8]], methods: [HTTPRequest.Method] = [.get], finish: Bool = false,
    limits: HTTPParserLimits = HTTPParserLimits()
) throws -> [Item] {
    var p = HTTPResponseParser(limits: limits)
    for m in methods { p.expectResponse(to: m) }
    var items = try drive(&p, chunks, describe: describe(_:))
    if finish, let e = try p.finish() {
        if case .end(let t) = e { items.append(.end(t.map(fieldsDescription))) }
    }
    return items
}

func parseResponses(_ s: String, methods: [HTTPRequest.Method] = [.get], finish: Bool = false) throws -> [Item] {
    try parseResponses([bytes(s)], methods: methods, finish: finish)
}

func responseHeads(_ s: String, method: HTTPRequest.Method = .get) throws -> [ResponseHead] {
    var p = HTTPResponseParser()
    p.expectResponse(to: method)
    var heads: [ResponseHead] = []
    _ = try drive(&p, [bytes(s)], describe: describe(_:), onHead: { heads.append($0) })
    return heads
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// Splits `data` at the given sorted positions.
func split(_ data: [UInt8], at positions: [Int]) -> [[UInt8]] {
    var out: [[UInt8]] = []
    var last = 0
    for p in positions where p > last && p < data.count {
        out.append(Array(data[last..<p]))
        last = p
    }
    out.append(Array(data[last...]))
    return out
}

/// Deterministic PRNG (SplitMix64).
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func randomSplits(_ data: [UInt8], count: Int, rng: inout SplitMix64, maxPieces: Int = 40) -> [[[UInt8]]] {
    (0..<count).map { _ in
        let pieces = Int.random(in: 1...maxPieces, using: &rng)
        let positions = (0..<pieces).map { _ in Int.random(in: 0...data.count, using: &rng) }.sorted()
        return split(data, at: positions)
    }
}

/// Expects `body` to throw exactly `error`.
func expectError(_ error: HTTPParseError, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected \(error), nothing thrown", sourceLocation: sourceLocation)
    } catch let e as HTTPParseError {
        #expect(e == error, sourceLocation: sourceLocation)
    } catch {
        Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
    }
}
