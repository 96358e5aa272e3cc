import Lookout
import HTTPTypes
import LookoutCache
import LookoutHTTP
import LookoutTLS
import LookoutModel
import LookoutUpstream

/// A stored response the exchange answers with: the head to send, and the body's pieces (none
/// for HEAD, a 304 to the client's own conditional request, or a 416).
struct StoredAnswer {
    let object: CachedObject
    let status: Int
    let reasonPhrase: String
    let fields: HTTPFields
    let segments: [BodySegment]
}

/// One exchange's dealings with the shared cache (RFC 9111): the lookup before any upstream
/// attempt, the validators that make a stale response's attempt conditional, what to do with
/// the response that comes back (store it, merge a 304, fall back on stale-if-error), and the
/// copy into the store as the body streams by.
///
/// The exchange calls down into it and acts on what it returns; it never calls the exchange.
final class ExchangeCache {  // confined to the exchange's loop queue
    enum Lookup {
        /// Go upstream; `validators` (If-None-Match / If-Modified-Since) replace the client's
        /// conditional fields when a stored response is being validated.
        case forward(validators: HTTPFields?)
        /// Answer from the store.
        case answer(StoredAnswer)
        /// `only-if-cached` and nothing usable is stored (RFC 9111 §5.2.1.7: 504).
        case gatewayTimeout
        /// Another exchange is fetching this URL into the store: follow it instead of fetching.
        case follow(CacheFill)
    }

    enum ResponseAction {
        /// Relay it, with this `Cache-Status` member.
        case relay(cacheStatus: String)
        /// Drop it and answer with the stored response (a 304 that validated it, or an error
        /// that stale-if-error covers).
        case answer(StoredAnswer)
    }

    private let cache: SharedCache
    private let url: String
    private let method: HTTPRequest.Method
    private let requestFields: HTTPFields
    private let requestDirectives: CacheControl
    private let decision: (decision: CacheDecision, rule: String?)

    /// Why the request went forward (RFC 9211 `fwd`).
    private var forward: CacheStatus.Forward = .miss
    /// The stored response being validated, when there is one.
    private var validating: CachedObject?
    private var writer: CacheObjectWriter?
    /// The fill this exchange leads (it missed first), which concurrent misses follow.
    private var fill: CacheFill?
    private var requestTime = 0.0
    /// What the summary says about the cache.
    private(set) var summary: CacheSummary

    /// The answer was a stale response within stale-while-revalidate: revalidate in the background.
    private(set) var wantsBackgroundRevalidation = false
    /// This exchange is that background revalidation: a stored response is always validated.
    private let validatesAlways: Bool

    /// Whether any monitor wants the lifecycle records this returns (they are not built otherwise).
    private let recordsWanted: Bool

    init(cache: SharedCache, handler: CachedResponseHandler? = nil, url: String, head: RequestHead, hostKey: HostRuleKey,
         validatesAlways: Bool = false, recordsWanted: Bool = true) {
        self.validatesAlways = validatesAlways
        self.recordsWanted = recordsWanted
        self.cache = cache
        self.url = url
        self.method = head.method
        self.requestFields = head.headerFields
        self.requestDirectives = CacheControl(head.headerFields)
        self.decision = (handler ?? cache.handler).decision(for: hostKey)
        self.summary = CacheSummary(status: "miss")
    }

    static func now() -> Double { Double(Instant.now().unixMicroseconds) / 1e6 }

    // MARK: - Lookup

    /// Before the first attempt. Returns what to do and the `request.didLookUpCache` record.
    func lookUp(head: RequestHead, hasUpgrade: Bool) -> (Lookup, RequestDidLookUpCache) {
        let isSafe = method == .get || method == .head
        if !isSafe || hasUpgrade || head.framing != .none {
            let reason = !isSafe ? "method" : hasUpgrade ? "upgrade" : "request_body"
            forward = isSafe ? .bypass : .method
            summary = CacheSummary(status: "bypass")
            cache.bypasses.add(1, ordering: .relaxed)
            return (.forward(validators: nil), RequestDidLookUpCache(result: "bypass", reason: reason))
        }
        switch cache.store.lookup(url: url, requestFields: requestFields) {
        case .uriMiss:
            return miss(.uriMiss, reason: "uri_miss")
        case .varyMiss:
            return miss(.varyMiss, reason: "vary_mismatch")
        case .found(let object):
            return decide(object)
        }
    }

    private func miss(_ forward: CacheStatus.Forward, reason: String) -> (Lookup, RequestDidLookUpCache) {
        self.forward = forward
        if requestDirectives.onlyIfCached {
            cache.misses.add(1, ordering: .relaxed)
            summary = CacheSummary(status: "miss")
            return (.gatewayTimeout, RequestDidLookUpCache(result: "only_if_cached_miss", reason: reason))
        }
        // Plain GETs collapse; ranges and conditionals fetch for themselves.
        if method == .get, requestFields[.range] == nil, requestFields[.ifNoneMatch] == nil,
           requestFields[.ifModifiedSince] == nil {
            switch cache.fills.join(url: url, now: Self.now()) {
            case .pass:
                break
            case .follow(let fill):
                cache.collapsed.add(1, ordering: .relaxed)
                summary = CacheSummary(status: "collapsed")
                return (.follow(fill), RequestDidLookUpCache(result: "collapsed", reason: reason))
            case .lead(let fill):
                self.fill = fill
            }
        }
        cache.misses.add(1, ordering: .relaxed)
        return (.forward(validators: nil), RequestDidLookUpCache(result: "miss", reason: reason))
    }

    /// A follower found nothing usable in the fill: it fetches as a plain miss (never leading).
    func followerGoesUpstream() -> RequestDidLookUpCache {
        cache.misses.add(1, ordering: .relaxed)
        summary = CacheSummary(status: "miss")
        forward = .uriMiss
        return RequestDidLookUpCache(result: "miss", reason: "collapsed_not_usable")
    }

    private func freshness(of object: CachedObject, now: Double) -> (age: Double, lifetime: Double, directives: CacheControl) {
        let facts = object.facts
        let reading = facts.reading(targeted: decision.decision.readsCDNCacheControl)
        return (facts.age(now: now), reading.lifetime(defaultTTL: decision.decision.defaultTTL), reading.directives)
    }

    private func decide(_ object: CachedObject) -> (Lookup, RequestDidLookUpCache) {
        let (age, lifetime, directives) = freshness(of: object, now: Self.now())
        let ttl = Int((lifetime - age).rounded(.towardZero))
        var reuse = ReusePolicy.decide(age: age, lifetime: lifetime, response: directives, requestFields: requestFields,
                                       request: requestDirectives)
        if validatesAlways { reuse = .validate(.stale) }
        switch reuse {
        case .fresh:
            cache.hits.add(1, ordering: .relaxed)
            summary = CacheSummary(status: "hit", age: Int(age), ttl: ttl)
            return (.answer(answer(object, age: age, status: CacheStatus(hit: true, ttl: ttl))),
                    RequestDidLookUpCache(result: "hit", age: Int(age), ttl: ttl))
        case .staleAccepted:
            cache.staleServed.add(1, ordering: .relaxed)
            summary = CacheSummary(status: "stale", age: Int(age), ttl: ttl)
            return (.answer(answer(object, age: age, status: CacheStatus(hit: true, ttl: ttl, detail: "max-stale"))),
                    RequestDidLookUpCache(result: "stale", reason: "max_stale", age: Int(age), ttl: ttl))
        case .staleWhileRevalidate:
            cache.staleServed.add(1, ordering: .relaxed)
            summary = CacheSummary(status: "stale", age: Int(age), ttl: ttl)
            wantsBackgroundRevalidation = true
            return (.answer(answer(object, age: age, status: CacheStatus(hit: true, ttl: ttl, detail: "stale-while-revalidate"))),
                    RequestDidLookUpCache(result: "stale", reason: "stale_while_revalidate", age: Int(age), ttl: ttl))
        case .validate(let why):
            let reason = why.rawValue
            if requestDirectives.onlyIfCached {
                cache.misses.add(1, ordering: .relaxed)
                return (.gatewayTimeout, RequestDidLookUpCache(result: "only_if_cached_miss", reason: reason,
                                                               age: Int(age), ttl: ttl))
            }
            forward = why == .requestNoCache ? .request : .stale
            summary = CacheSummary(status: "stale", age: Int(age), ttl: ttl)
            // Without a validator there is nothing to ask conditionally: a full fetch replaces it
            // (and stale-if-error can still fall back on it).
            let validators = Self.validators(for: object.metadata.fields)
            validating = object
            return (.forward(validators: validators),
                    RequestDidLookUpCache(result: "stale", reason: reason, age: Int(age), ttl: ttl))
        }
    }

    /// If-None-Match from the stored ETag, If-Modified-Since from Last-Modified (RFC 9111 §4.3.1).
    static func validators(for stored: HTTPFields) -> HTTPFields? {
        var fields = HTTPFields()
        if let etag = stored[.eTag] { fields[.ifNoneMatch] = etag }
        if let lastModified = stored[.lastModified] { fields[.ifModifiedSince] = lastModified }
        return fields.isEmpty ? nil : fields
    }

    /// The stored response as the client gets it: `Age` (§5.1), `Cache-Status`, and a 304 when
    /// the client's own conditional matches it (RFC 9110 §13.2.2).
    private func answer(_ object: CachedObject, age: Double, status: CacheStatus) -> StoredAnswer {
        let m = object.metadata
        var fields = m.fields
        if status.hit {
            // §5.2.2.4: the fields a qualified no-cache names are not sent without revalidation.
            for name in object.facts.reading(targeted: decision.decision.readsCDNCacheControl).directives.noCacheFields {
                if let fieldName = HTTPField.Name(name) { fields[fieldName] = nil }
            }
        }
        fields[.age] = String(Int(age))
        fields.appendField(HTTPField(name: .cacheStatus, value: status.fieldValue()))
        if m.status == 200 && Self.clientConditionMatches(requestFields, stored: m.fields) {
            // RFC 9110 §15.4.5: a 304 carries the validators and caching fields, no content fields.
            for name in [HTTPField.Name.contentType, .contentEncoding, .contentLanguage, .contentRange] { fields[name] = nil }
            return StoredAnswer(object: object, status: 304, reasonPhrase: "Not Modified", fields: fields, segments: [])
        }
        let sendsBody = method != .head && m.status != 204 && m.status != 304
        if m.status == 200, method == .get, let range = requestFields[.range], Self.ifRangeHolds(requestFields, stored: m.fields) {
            switch ByteRanges.evaluate(range, length: object.bodyLength) {
            case .ignore:
                break
            case .unsatisfiable:
                // RFC 9110 §15.5.17.
                fields[.contentRange] = "bytes */\(object.bodyLength)"
                fields[.contentLength] = "0"
                return StoredAnswer(object: object, status: 416, reasonPhrase: "Range Not Satisfiable", fields: fields, segments: [])
            case .ranges(let ranges) where ranges.count == 1:
                let r = ranges[0]
                fields[.contentRange] = "bytes \(r.lowerBound)-\(r.upperBound)/\(object.bodyLength)"
                fields[.contentLength] = String(r.upperBound - r.lowerBound + 1)
                return StoredAnswer(object: object, status: 206, reasonPhrase: "Partial Content", fields: fields,
                                    segments: [.stored(r)])
            case .ranges(let ranges):
                // RFC 9110 §14.6: multipart/byteranges, each part with its own Content-Range.
                let boundary = "lookout-" + String(UInt64.random(in: 1...UInt64.max), radix: 16)
                let type = m.fields[.contentType]
                var segments: [BodySegment] = []
                for (index, r) in ranges.enumerated() {
                    var part = (index == 0 ? "" : "\r\n") + "--\(boundary)\r\n"
                    if let type { part += "Content-Type: \(type)\r\n" }
                    part += "Content-Range: bytes \(r.lowerBound)-\(r.upperBound)/\(object.bodyLength)\r\n\r\n"
                    segments.append(.literal(Array(part.utf8)))
                    segments.append(.stored(r))
                }
                segments.append(.literal(Array("\r\n--\(boundary)--\r\n".utf8)))
                fields[.contentType] = "multipart/byteranges; boundary=\(boundary)"
                fields[.contentLength] = String(segments.reduce(0) { $0 + $1.count })
                return StoredAnswer(object: object, status: 206, reasonPhrase: "Partial Content", fields: fields, segments: segments)
            }
        }
        fields[.contentLength] = String(object.bodyLength)
        let segments: [BodySegment] = sendsBody && object.bodyLength > 0 ? [.stored(0...(object.bodyLength - 1))] : []
        return StoredAnswer(object: object, status: m.status, reasonPhrase: m.reasonPhrase, fields: fields, segments: segments)
    }

    /// RFC 9110 §13.1.5: without If-Range, or when it names the stored representation (a strong
    /// ETag match, or exactly its Last-Modified date), the ranges apply; otherwise the whole
    /// representation is sent.
    static func ifRangeHolds(_ request: HTTPFields, stored: HTTPFields) -> Bool {
        guard let ifRange = request[.ifRange] else { return true }
        if ifRange.hasPrefix("\"") {
            guard let etag = stored[.eTag], !etag.hasPrefix("W/") else { return false }
            return etag == ifRange
        }
        guard let lastModified = stored[.lastModified] else { return false }
        return HTTPDate.unixSeconds(ifRange) != nil && HTTPDate.unixSeconds(ifRange) == HTTPDate.unixSeconds(lastModified)
    }

    /// RFC 9110 §13.2.2: If-None-Match (weak comparison) first; If-Modified-Since only without it.
    static func clientConditionMatches(_ request: HTTPFields, stored: HTTPFields) -> Bool {
        if let ifNoneMatch = request[.ifNoneMatch] {
            guard let etag = stored[.eTag] else { return false }
            let opaque = { (tag: Substring) -> Substring in tag.hasPrefix("W/") ? tag.dropFirst(2) : tag }
            return ifNoneMatch.split(separator: ",").contains { element in
                let tag = element.trimmingOWS()
                return tag == "*" || opaque(tag) == opaque(Substring(etag))
            }
        }
        if let since = request[.ifModifiedSince].flatMap(HTTPDate.unixSeconds),
           let modified = stored[.lastModified].flatMap(HTTPDate.unixSeconds) {
            return modified <= since
        }
        return false
    }

    // MARK: - The response

    /// An upstream attempt is about to send its request (§4.2.3's request_time).
    func attemptWillStart() {
        requestTime = Self.now()
    }

    /// A final response head arrived (after hop-by-hop fields were removed from `fields`).
    /// Returns what to do with it, and the records to write.
    func responseArrived(status: Int, reasonPhrase: String, fields: HTTPFields, framing: BodyFraming,
                         transferCoded: Bool = false) -> (ResponseAction, [any EventKind]) {
        let responseTime = Self.now()
        var records: [any EventKind] = []
        if method != .get && method != .head {
            invalidate(status: status, fields: fields)
        }
        if let stored = validating {
            if status == 304 {
                return (.answer(revalidated(stored, with: fields, responseTime: responseTime, records: &records)), records)
            }
            if status >= 500, let answer = staleOnError(stored, status: status) {
                if recordsWanted {
                    records.append(RequestDidLookUpCache(result: "stale", reason: "stale_if_error",
                                                         age: summary.age, ttl: summary.ttl))
                }
                return (.answer(answer), records)
            }
        }
        var cacheStatus = CacheStatus(forward: forward, forwardStatus: status)
        // The body's length when the origin announced it.
        var expected: Int64?
        if case .contentLength(let length) = framing { expected = Int64(length) }
        if case .none = framing { expected = 0 }
        if method == .get && forward != .bypass && forward != .method {
            let (stored, record) = transferCoded
                ? (false, TaskWillCacheResponse(stored: false, reason: StoragePolicy.Refusal.transferCoding.rawValue,
                                                rule: decision.rule))
                : beginStoring(status: status, reasonPhrase: reasonPhrase, fields: fields,
                               expectedLength: expected, responseTime: responseTime)
            cacheStatus.stored = stored
            summary.stored = stored
            if recordsWanted { records.append(record) }
        }
        if let fill {
            if let writer {
                fill.publish(head: CacheFill.Head(metadata: writer.metadata, expectedLength: expected,
                                                  reader: writer.openReader(), bodyOffset: writer.bodyOffset))
            } else {
                endFill(.notStored)
            }
        }
        return (.relay(cacheStatus: cacheStatus.fieldValue()), records)
    }

    /// §4.3.4: the 304's fields update the stored ones (Content-Length excepted), the times
    /// restart, and the client gets the stored body with the new fields.
    private func revalidated(_ object: CachedObject, with fields: HTTPFields, responseTime: Double,
                             records: inout [any EventKind]) -> StoredAnswer {
        var metadata = object.metadata
        for field in fields where field.name != .contentLength && field.name != .transferEncoding {
            metadata.fields[field.name] = nil
        }
        for field in fields where field.name != .contentLength && field.name != .transferEncoding {
            metadata.fields.append(field)
        }
        metadata.requestTime = requestTime
        metadata.responseTime = responseTime
        let stored = cache.store.updateMetadata(of: object, to: metadata)
        let updated = object.replacingMetadata(metadata)
        let (age, lifetime, _) = freshness(of: updated, now: responseTime)
        let ttl = Int((lifetime - age).rounded(.towardZero))
        cache.revalidations.add(1, ordering: .relaxed)
        summary = CacheSummary(status: "revalidated", age: Int(age), ttl: ttl, stored: stored)
        if recordsWanted {
            records.append(RequestDidLookUpCache(result: "revalidated", age: Int(age), ttl: ttl))
            if !stored { records.append(TaskWillCacheResponse(stored: false, reason: StoragePolicy.Refusal.writeFailed.rawValue)) }
        }
        return answer(updated, age: age, status: CacheStatus(forward: .stale, forwardStatus: 304, ttl: ttl, stored: stored))
    }

    /// RFC 5861 §4: an error while validating may be answered with the stale response.
    private func staleOnError(_ object: CachedObject, status: Int?) -> StoredAnswer? {
        let now = Self.now()
        let (age, lifetime, directives) = freshness(of: object, now: now)
        guard ReusePolicy.mayServeStaleOnError(staleness: age - lifetime, response: directives, request: requestDirectives)
        else { return nil }
        let ttl = Int((lifetime - age).rounded(.towardZero))
        cache.staleServed.add(1, ordering: .relaxed)
        summary = CacheSummary(status: "stale", age: Int(age), ttl: ttl)
        return answer(object, age: age, status: CacheStatus(forward: .stale, forwardStatus: status, ttl: ttl,
                                                            detail: "stale-if-error"))
    }

    /// The attempt failed without a response: a stale response may stand in (stale-if-error).
    func attemptFailed() -> (StoredAnswer, RequestDidLookUpCache)? {
        guard let stored = validating, let answer = staleOnError(stored, status: nil) else { return nil }
        return (answer, RequestDidLookUpCache(result: "stale", reason: "stale_if_error", age: summary.age, ttl: summary.ttl))
    }

    /// §3: whether to store, and the writer that copies the body when so.
    private func beginStoring(status: Int, reasonPhrase: String, fields: HTTPFields, expectedLength: Int64?,
                              responseTime: Double) -> (Bool, TaskWillCacheResponse) {
        let rule = decision.rule
        if decision.decision == .doNotCache {
            return (false, TaskWillCacheResponse(stored: false, reason: StoragePolicy.Refusal.rule.rawValue, rule: rule))
        }
        let directives = CacheControl.response(fields, targeted: decision.decision.readsCDNCacheControl)
        // The cheap refusals first: most responses that are not stored say so outright.
        if directives.noStore && !directives.mustUnderstand {
            return (false, TaskWillCacheResponse(stored: false, reason: StoragePolicy.Refusal.noStore.rawValue, rule: rule))
        }
        let lifetime = Freshness.lifetime(status: status, fields: fields, directives: directives, responseTime: responseTime,
                                          defaultTTL: decision.decision.defaultTTL).seconds
        if let refusal = StoragePolicy.refusal(method: method, requestFields: requestFields, requestDirectives: requestDirectives,
                                               status: status, responseFields: fields, responseDirectives: directives,
                                               freshnessLifetime: lifetime) {
            return (false, TaskWillCacheResponse(stored: false, reason: refusal.rawValue, rule: rule))
        }
        var stored = fields
        stored[.contentLength] = nil
        stored[.transferEncoding] = nil
        // §5.2.2.7: a shared cache stores the response without the fields `private="…"` names.
        for name in directives.privateFields { if let fieldName = HTTPField.Name(name) { stored[fieldName] = nil } }
        let varyNames = VaryKey.names(fields) ?? []
        let metadata = StoredMetadata(url: url, varyNames: varyNames, varyValues: VaryKey.values(of: varyNames, in: requestFields),
                                      requestTime: requestTime, responseTime: responseTime, status: status,
                                      reasonPhrase: reasonPhrase, fields: stored)
        switch cache.store.makeWriter(metadata: metadata, expectedLength: expectedLength) {
        case .success(let writer):
            self.writer = writer
            return (true, TaskWillCacheResponse(stored: true, rule: rule))
        case .failure(let refusal):
            return (false, TaskWillCacheResponse(stored: false, reason: refusal.rawValue, rule: rule))
        }
    }

    /// §4.4: a successful unsafe request invalidates the target URI and same-origin
    /// `Location` / `Content-Location`.
    private func invalidate(status: Int, fields: HTTPFields) {
        guard status < 400 else { return }
        cache.store.remove(url: url)
        for name in [HTTPField.Name.location, .contentLocation] {
            guard let value = fields[name] else { continue }
            let target = URLReference.resolve(value, against: url)
            guard Self.origin(of: target) == Self.origin(of: url) else { continue }
            cache.store.remove(url: target)
        }
    }

    /// "scheme://authority" of an absolute URL.
    static func origin(of url: String) -> Substring? {
        let utf8 = url.utf8
        guard let colon = utf8.firstIndex(of: UInt8(ascii: ":")),
              utf8[colon...].starts(with: "://".utf8) else { return nil }
        let authorityStart = utf8.index(colon, offsetBy: 3)
        let end = utf8[authorityStart...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
        return url[..<(end ?? utf8.endIndex)]
    }

    /// Body bytes relayed to the client: copied into the store.
    func relayed(_ bytes: UnsafeRawBufferPointer) -> TaskWillCacheResponse? {
        guard let writer else { return nil }
        if writer.append(bytes) {
            fill?.progress(written: writer.bodyLength)
            return nil
        }
        endFill(.failed)
        self.writer = nil
        summary.stored = false
        return TaskWillCacheResponse(stored: false, reason: writer.refusal?.rawValue, rule: decision.rule)
    }

    /// The response is complete: the stored copy goes in place.
    func responseEnded() -> TaskWillCacheResponse? {
        guard let writer else { return nil }
        self.writer = nil
        if let refusal = writer.commit() {
            endFill(.failed)
            summary.stored = false
            return TaskWillCacheResponse(stored: false, reason: refusal.rawValue, rule: decision.rule)
        }
        fill?.progress(written: writer.bodyLength)
        endFill(.complete)
        cache.stores.add(1, ordering: .relaxed)
        return nil
    }

    /// The exchange ended another way: nothing half-written is kept, and followers stop waiting.
    func abandon() {
        endFill(writer == nil ? .notStored : .failed)
        guard let writer else { return }
        self.writer = nil
        writer.abandon()
        summary.stored = false
    }

    private func endFill(_ ending: CacheFill.Ending) {
        guard let fill else { return }
        self.fill = nil
        fill.end(ending, now: Self.now())
    }
}
