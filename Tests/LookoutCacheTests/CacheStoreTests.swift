import Foundation
import HTTPTypes
import Testing
@testable import LookoutCache

/// This test process's scratch directory, removed when the process exits (each test's store
/// used to stay behind in the temporary directory).
let cacheTestDirectory: String = {
    let path = NSTemporaryDirectory() + "lookout-cache-tests-\(getpid())"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    atexit { try? FileManager.default.removeItem(atPath: cacheTestDirectory) }
    return path
}()

/// A fresh store directory for one test, inside `cacheTestDirectory`.
func storeDirectory() -> String {
    cacheTestDirectory + "/\(UUID().uuidString)"
}

func metadata(_ url: String, vary: [String] = [], values: [String?] = [], fields extra: [(String, String)] = []) -> StoredMetadata {
    StoredMetadata(url: url, varyNames: vary, varyValues: values, requestTime: 1000, responseTime: 1001, status: 200,
                   reasonPhrase: "OK", fields: fields([("Cache-Control", "max-age=60")] + extra))
}

@discardableResult
func store(_ store: CacheStore, _ meta: StoredMetadata, body: [UInt8]) -> StoragePolicy.Refusal? {
    switch store.makeWriter(metadata: meta, expectedLength: Int64(body.count)) {
    case .failure(let refusal): return refusal
    case .success(let writer):
        body.withUnsafeBytes { _ = writer.append($0) }
        return writer.commit()
    }
}

func body(of object: CachedObject) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: Int(object.bodyLength))
    let n = bytes.withUnsafeMutableBytes { object.readBody(at: 0, into: $0) }
    return Array(bytes[..<n])
}

func found(_ lookup: CacheStore.Lookup) -> CachedObject? {
    if case .found(let object) = lookup { return object }
    return nil
}

@Suite struct CacheStoreTests {
    let small = CacheLimits(maxSizeBytes: 1 << 20, maxObjectBytes: 256 << 10, memoryBytes: 64 << 10)

    @Test func storesAndFindsInMemoryAndOnDisk() throws {
        let dir = storeDirectory()
        let s = try CacheStore(directory: dir, limits: small)
        let tiny = [UInt8]("hello".utf8)
        let large = [UInt8](repeating: 7, count: 100_000)  // above the memory object limit (8 KiB)
        #expect(store(s, metadata("http://a/tiny"), body: tiny) == nil)
        #expect(store(s, metadata("http://a/large"), body: large) == nil)
        let t = try #require(found(s.lookup(url: "http://a/tiny", requestFields: HTTPFields())))
        #expect(t.isInMemory && body(of: t) == tiny && t.metadata.status == 200)
        let l = try #require(found(s.lookup(url: "http://a/large", requestFields: HTTPFields())))
        #expect(!l.isInMemory && body(of: l) == large)
        if case .uriMiss = s.lookup(url: "http://a/other", requestFields: HTTPFields()) {} else { Issue.record("expected a miss") }
        #expect(s.statistics.objects == 2)
    }

    @Test func reopensAfterRestartAndCleansUp() throws {
        let dir = storeDirectory()
        do {
            let s = try CacheStore(directory: dir, limits: small)
            store(s, metadata("http://a/1"), body: Array("one".utf8))
            store(s, metadata("http://a/2", vary: ["accept"], values: ["text/html"]), body: Array("two".utf8))
        }
        // Planted: a half-written temporary file, a stray file, a file with an object's name and garbage in it.
        #expect(FileManager.default.createFile(atPath: dir + "/tmp/x.part", contents: Data("partial".utf8)))
        #expect(FileManager.default.createFile(atPath: dir + "/objects/stray.txt", contents: Data("x".utf8)))
        let garbageKey = StoredObjectKey(primary: ObjectID(key: "http://a/3"), variant: nil)
        try FileManager.default.createDirectory(atPath: dir + "/objects/" + garbageKey.primary.folder, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: dir + "/objects/\(garbageKey.primary.folder)/\(garbageKey.fileName)",
                                               contents: Data(repeating: 0x41, count: 100)))

        let s = try CacheStore(directory: dir, limits: small)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/tmp").isEmpty)
        #expect(!FileManager.default.fileExists(atPath: dir + "/objects/stray.txt"))
        #expect(body(of: try #require(found(s.lookup(url: "http://a/1", requestFields: HTTPFields())))) == Array("one".utf8))
        let html = fields([("Accept", "text/html")])
        #expect(body(of: try #require(found(s.lookup(url: "http://a/2", requestFields: html)))) == Array("two".utf8))
        if case .varyMiss = s.lookup(url: "http://a/2", requestFields: fields([("Accept", "image/png")])) {} else {
            Issue.record("expected a vary miss")
        }
        // The garbage object is found by name, refused by its checks, and removed.
        if case .uriMiss = s.lookup(url: "http://a/3", requestFields: HTTPFields()) {} else { Issue.record("expected a miss") }
        #expect(!FileManager.default.fileExists(atPath: s.path(of: garbageKey)))
    }

    @Test func truncatedObjectIsNeverServed() throws {
        let dir = storeDirectory()
        let big = [UInt8](repeating: 1, count: 50_000)
        do {
            let s = try CacheStore(directory: dir, limits: small)
            store(s, metadata("http://a/big"), body: big)
        }
        let key = StoredObjectKey(primary: ObjectID(key: "http://a/big"), variant: nil)
        let path = dir + "/objects/\(key.primary.folder)/\(key.fileName)"
        truncate(path, off_t(try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int - 10))
        let s = try CacheStore(directory: dir, limits: small)
        if case .uriMiss = s.lookup(url: "http://a/big", requestFields: HTTPFields()) {} else { Issue.record("served a truncated object") }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func variantsAndRemoval() throws {
        let s = try CacheStore(directory: storeDirectory(), limits: small)
        store(s, metadata("http://a/v", vary: ["accept-language"], values: ["en"]), body: Array("en".utf8))
        store(s, metadata("http://a/v", vary: ["accept-language"], values: ["de"]), body: Array("de".utf8))
        store(s, metadata("http://a/v", vary: ["accept-language"], values: [nil]), body: Array("none".utf8))
        #expect(body(of: try #require(found(s.lookup(url: "http://a/v", requestFields: fields([("Accept-Language", "de")]))))) == Array("de".utf8))
        #expect(body(of: try #require(found(s.lookup(url: "http://a/v", requestFields: HTTPFields())))) == Array("none".utf8))
        #expect(s.remove(url: "http://a/v") == 3)
        if case .uriMiss = s.lookup(url: "http://a/v", requestFields: fields([("Accept-Language", "en")])) {} else {
            Issue.record("expected a miss after removal")
        }
        #expect(s.statistics.objects == 0 && s.statistics.bytes == 0)
    }

    @Test func changedVaryReplacesOldVariants() throws {
        let s = try CacheStore(directory: storeDirectory(), limits: small)
        store(s, metadata("http://a/c"), body: Array("plain".utf8))
        store(s, metadata("http://a/c", vary: ["accept"], values: ["x"]), body: Array("x".utf8))
        #expect(s.statistics.objects == 1)
        store(s, metadata("http://a/c"), body: Array("plain again".utf8))
        #expect(s.statistics.objects == 1)
        #expect(body(of: try #require(found(s.lookup(url: "http://a/c", requestFields: fields([("Accept", "x")]))))) == Array("plain again".utf8))
    }

    @Test func evictsLeastRecentlyUsedBeyondTheBound() throws {
        let notices = NoticeLog()
        let limits = CacheLimits(maxSizeBytes: 100_000, maxObjectBytes: 50_000, memoryBytes: 0)
        let s = try CacheStore(directory: storeDirectory(), limits: limits, noticeHandler: { notices.add($0) })
        for i in 0..<3 { store(s, metadata("http://a/\(i)"), body: [UInt8](repeating: 1, count: 30_000)) }
        _ = s.lookup(url: "http://a/0", requestFields: HTTPFields())  // 0 is now more recent than 1
        store(s, metadata("http://a/3"), body: [UInt8](repeating: 1, count: 30_000))
        #expect(s.statistics.bytes <= 100_000)
        #expect(found(s.lookup(url: "http://a/0", requestFields: HTTPFields())) != nil)
        #expect(found(s.lookup(url: "http://a/1", requestFields: HTTPFields())) == nil)
        #expect(notices.evictedURLs.contains("http://a/1"))
    }

    @Test func refusesTooLargeObjects() throws {
        let s = try CacheStore(directory: storeDirectory(), limits: small)
        #expect(store(s, metadata("http://a/huge"), body: [UInt8](repeating: 0, count: 300_000)) == .tooLarge)
        // Without a length up front, the writer gives up when the body passes the bound.
        guard case .success(let writer) = s.makeWriter(metadata: metadata("http://a/huge2"), expectedLength: nil) else {
            Issue.record("no writer"); return
        }
        let chunk = [UInt8](repeating: 0, count: 100_000)
        var accepted = 0
        for _ in 0..<3 { if chunk.withUnsafeBytes({ writer.append($0) }) { accepted += 1 } }
        #expect(accepted == 2 && writer.commit() == .tooLarge)
        #expect(s.statistics.objects == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: s.directory + "/tmp").isEmpty)
    }

    @Test func readOnlyDirectorySkipsStoring() throws {
        guard geteuid() != 0 else { return }  // root writes anyway; the integration test covers it with a file in the way
        let s = try CacheStore(directory: storeDirectory(), limits: small)
        chmod(s.directory + "/tmp", 0o500)
        defer { chmod(s.directory + "/tmp", 0o700) }
        #expect(store(s, metadata("http://a/ro"), body: Array("x".utf8)) == .writeFailed)
    }

    @Test func updatesMetadataKeepingTheBody() throws {
        let s = try CacheStore(directory: storeDirectory(), limits: small)
        let large = [UInt8](repeating: 9, count: 60_000)
        store(s, metadata("http://a/u", fields: [("ETag", "\"1\"")]), body: large)
        let object = try #require(found(s.lookup(url: "http://a/u", requestFields: HTTPFields())))
        var updated = object.metadata
        updated.fields[.cacheControl] = "max-age=120"
        updated.responseTime = 2000
        #expect(s.updateMetadata(of: object, to: updated))
        let again = try #require(found(s.lookup(url: "http://a/u", requestFields: HTTPFields())))
        #expect(again.metadata.fields[.cacheControl] == "max-age=120" && again.metadata.responseTime == 2000)
        #expect(body(of: again) == large)
    }

    @Test func metadataRoundTrips() {
        let m = StoredMetadata(url: "https://h/p?q=1", varyNames: ["a", "b"], varyValues: ["x: y", nil], requestTime: 1.5,
                               responseTime: 2.25, status: 404, reasonPhrase: "Not Found",
                               fields: fields([("ETag", "\"e\""), ("Set-Cookie", "a=b"), ("Set-Cookie", "c=d")]))
        let encoded = m.encoded()
        #expect(encoded.withUnsafeBytes { StoredMetadata(decoding: $0) } == m)
    }

    /// A CR before a line's LF ("\r\n" is one Character) does not join two lines: a damaged
    /// file reads back as the metadata it holds.
    @Test func linesSplitAtLFBytesEvenAfterACR() throws {
        let text = "url http://a/x\nrequest_time 1\nresponse_time 2\nstatus 200\nreason \r\nfield ETag: \"e\"\n"
        let decoded = try #require(Array(text.utf8).withUnsafeBytes { StoredMetadata(decoding: $0) })
        #expect(decoded.reasonPhrase == "\r" && decoded.fields[.eTag] == "\"e\"")
        #expect(decoded.encoded().withUnsafeBytes { StoredMetadata(decoding: $0) } == decoded)
    }
}

final class NoticeLog: @unchecked Sendable {
    private let lock = NSLock()
    private var notices: [CacheStoreNotice] = []
    func add(_ notice: CacheStoreNotice) { lock.withLock { notices.append(notice) } }
    var evictedURLs: [String] {
        lock.withLock { notices.compactMap { if case .evicted(let url, _, _) = $0 { return url } else { return nil } } }
    }
}
