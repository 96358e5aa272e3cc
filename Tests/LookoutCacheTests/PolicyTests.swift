import HTTPTypes
import LookoutHTTP
import Testing
@testable import LookoutCache

func fields(_ pairs: [(String, String)]) -> HTTPFields {
    var fields = HTTPFields()
    for (name, value) in pairs { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
    return fields
}

/// RFC 9110 §5.6.7's example date, and its time.
let rfcDate = "Sun, 06 Nov 1994 08:49:37 GMT"
let rfcTime = 784_111_777.0

@Suite struct CacheControlTests {
    @Test func parsesResponseDirectives() {
        let c = CacheControl(value: #"Public, MAX-AGE=60, s-maxage="30", no-cache="Set-Cookie, X-A", must-revalidate, stale-if-error=5"#)
        #expect(c.isPublic && c.mustRevalidate)
        #expect(c.maxAge == 60 && c.sMaxAge == 30 && c.staleIfError == 5)
        #expect(c.noCache && c.noCacheFields == ["set-cookie", "x-a"])
        #expect(c.conflicts.isEmpty)
    }

    @Test func parsesRequestDirectives() {
        let c = CacheControl(value: "max-stale, min-fresh=10, only-if-cached, no-store")
        #expect(c.maxStale == Int.max && c.minFresh == 10 && c.onlyIfCached && c.noStore)
        #expect(CacheControl(value: "max-stale=7").maxStale == 7)
    }

    @Test func combinesLines() {
        let c = CacheControl(fields([("Cache-Control", "private=\"x\""), ("Cache-Control", "max-age=5")]))
        #expect(c.isPrivate && c.privateFields == ["x"] && c.maxAge == 5)
    }

    @Test func unqualifiedFormWins() {
        #expect(CacheControl(value: #"no-cache="a", no-cache"#).noCacheFields.isEmpty)
        #expect(CacheControl(value: #"private, private="a""#).privateFields.isEmpty)
    }

    @Test(arguments: ["max-age=abc", "max-age=", "max-age=-1", "max-age=1.5", "max-age=5, max-age=6"])
    func invalidOrConflictingFreshnessIsRecorded(_ value: String) {
        #expect(CacheControl(value: value).conflicts == ["max-age"])
    }

    @Test func repeatedEqualValuesAreFine() {
        let c = CacheControl(value: "max-age=5, max-age=5")
        #expect(c.maxAge == 5 && c.conflicts.isEmpty)
    }

    @Test func hugeDeltaSecondsSaturate() {
        // RFC 9111 §1.2.2: 2^31 when the value cannot be represented.
        #expect(CacheControl(value: "max-age=99999999999999999999999").maxAge == 2_147_483_648)
    }

    @Test func ignoresUnknownAndEmptyElements() {
        let c = CacheControl(value: " , foo=bar, ,community=\"UCI\",no-transform")
        #expect(c.noTransform && c.conflicts.isEmpty && c.maxAge == nil)
    }
}

@Suite struct FreshnessTests {
    @Test func sMaxAgeOverMaxAgeOverExpires() {
        let f = fields([("Date", rfcDate), ("Expires", "Sun, 06 Nov 1994 09:49:37 GMT")])
        #expect(Freshness.lifetime(status: 200, fields: f, directives: CacheControl(value: "max-age=10, s-maxage=20"),
                                   responseTime: rfcTime, defaultTTL: 0) == (20, .sMaxAge))
        #expect(Freshness.lifetime(status: 200, fields: f, directives: CacheControl(value: "max-age=10"),
                                   responseTime: rfcTime, defaultTTL: 0) == (10, .maxAge))
        #expect(Freshness.lifetime(status: 200, fields: f, directives: CacheControl(),
                                   responseTime: rfcTime, defaultTTL: 0) == (3600, .expires))
    }

    @Test func invalidExpiresMeansExpired() {
        for expires in ["0", "-1", "yesterday"] {
            let f = fields([("Date", rfcDate), ("Expires", expires), ("Last-Modified", "Sun, 06 Nov 1994 07:49:37 GMT")])
            #expect(Freshness.lifetime(status: 200, fields: f, directives: CacheControl(), responseTime: rfcTime,
                                       defaultTTL: 0) == (0, .expires))
        }
        let twice = fields([("Expires", "Sun, 06 Nov 1994 09:49:37 GMT"), ("Expires", "Sun, 06 Nov 1994 10:49:37 GMT")])
        #expect(Freshness.lifetime(status: 200, fields: twice, directives: CacheControl(), responseTime: rfcTime,
                                   defaultTTL: 0).seconds == 0)
    }

    @Test func expiresWithoutDateUsesReceiptTime() {
        let f = fields([("Expires", "Sun, 06 Nov 1994 08:50:37 GMT")])
        #expect(Freshness.lifetime(status: 200, fields: f, directives: CacheControl(), responseTime: rfcTime,
                                   defaultTTL: 0).seconds == 60)
    }

    @Test func conflictingMaxAgeMeansStale() {
        #expect(Freshness.lifetime(status: 200, fields: HTTPFields(), directives: CacheControl(value: "max-age=5, max-age=9"),
                                   responseTime: rfcTime, defaultTTL: 0) == (0, .maxAge))
    }

    @Test func heuristicIsTenPercentOfLastModifiedAgeCapped() {
        let hourOld = fields([("Date", rfcDate), ("Last-Modified", "Sun, 06 Nov 1994 07:49:37 GMT")])
        #expect(Freshness.lifetime(status: 200, fields: hourOld, directives: CacheControl(), responseTime: rfcTime,
                                   defaultTTL: 0) == (360, .heuristic))
        let yearOld = fields([("Date", rfcDate), ("Last-Modified", "Sat, 06 Nov 1993 08:49:37 GMT")])
        #expect(Freshness.lifetime(status: 200, fields: yearOld, directives: CacheControl(), responseTime: rfcTime,
                                   defaultTTL: 0) == (Freshness.heuristicCap, .heuristic))
        // Not for a status that is not heuristically cacheable, unless public.
        #expect(Freshness.lifetime(status: 302, fields: hourOld, directives: CacheControl(), responseTime: rfcTime,
                                   defaultTTL: 0) == (0, .none))
        #expect(Freshness.lifetime(status: 302, fields: hourOld, directives: CacheControl(value: "public"),
                                   responseTime: rfcTime, defaultTTL: 0) == (360, .heuristic))
    }

    @Test func defaultTTLReplacesTheHeuristicOnly() {
        let f = fields([("Date", rfcDate), ("Last-Modified", "Sun, 06 Nov 1994 07:49:37 GMT")])
        #expect(Freshness.lifetime(status: 200, fields: f, directives: CacheControl(), responseTime: rfcTime,
                                   defaultTTL: 42) == (42, .defaultTTL))
        #expect(Freshness.lifetime(status: 200, fields: f, directives: CacheControl(value: "max-age=3"),
                                   responseTime: rfcTime, defaultTTL: 42) == (3, .maxAge))
    }

    @Test func ageFollowsSection4_2_3() {
        // Sent at t, received 2 s later, Date 10 s before receipt, Age 3: apparent 10, corrected
        // 3 + 2 = 5, initial 10; 7 s resident later the age is 17.
        let f = fields([("Date", HTTPDate.format(unixSeconds: 1_000_000_000 - 10)), ("Age", "3")])
        #expect(Freshness.currentAge(fields: f, requestTime: 999_999_998, responseTime: 1_000_000_000,
                                     now: 1_000_000_007) == 17)
        // A Date in the future gives no negative apparent age; the delay and Age still count.
        let future = fields([("Date", HTTPDate.format(unixSeconds: 1_000_000_100)), ("Age", "4")])
        #expect(Freshness.currentAge(fields: future, requestTime: 999_999_999, responseTime: 1_000_000_000,
                                     now: 1_000_000_000) == 5)
    }

    @Test func ageFieldUsesFirstMemberAndIgnoresGarbage() {
        #expect(Freshness.ageValue(fields([("Age", "5, 10")])) == 5)
        #expect(Freshness.ageValue(fields([("Age", "abc")])) == 0)
        #expect(Freshness.ageValue(fields([("Age", "-3")])) == 0)
        #expect(Freshness.ageValue(fields([("Age", "99999999999999999999")])) == 2_147_483_648)
    }
}

@Suite struct HTTPDateTests {
    @Test func parsesAllThreeForms() {
        #expect(HTTPDate.unixSeconds(rfcDate) == rfcTime)
        #expect(HTTPDate.unixSeconds("Sunday, 06-Nov-94 08:49:37 GMT") == rfcTime)
        #expect(HTTPDate.unixSeconds("Sun Nov  6 08:49:37 1994") == rfcTime)
        #expect(HTTPDate.unixSeconds("0") == nil)
    }

    @Test func formatsIMFFixdate() {
        #expect(HTTPDate.format(unixSeconds: Int64(rfcTime)) == rfcDate)
        #expect(HTTPDate.format(unixSeconds: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(unixSeconds: 951_782_400) == "Tue, 29 Feb 2000 00:00:00 GMT")
    }
}

@Suite struct StoragePolicyTests {
    func refusal(_ method: HTTPRequest.Method = .get, request: [(String, String)] = [], status: Int = 200,
                 response: [(String, String)], lifetime: Double = 60) -> StoragePolicy.Refusal? {
        let req = fields(request), res = fields(response)
        return StoragePolicy.refusal(method: method, requestFields: req, requestDirectives: CacheControl(req),
                                     status: status, responseFields: res, responseDirectives: CacheControl(res),
                                     freshnessLifetime: lifetime)
    }

    @Test func storesAFreshGET() {
        #expect(refusal(response: [("Cache-Control", "max-age=60")]) == nil)
    }

    @Test func refusals() {
        #expect(refusal(.post, response: [("Cache-Control", "max-age=60")]) == .method)
        #expect(refusal(.head, response: [("Cache-Control", "max-age=60")]) == .method)
        #expect(refusal(status: 206, response: [("Cache-Control", "max-age=60")]) == .status)
        #expect(refusal(status: 304, response: [("Cache-Control", "max-age=60")]) == .status)
        #expect(refusal(request: [("Cache-Control", "no-store")], response: [("Cache-Control", "max-age=60")]) == .requestNoStore)
        #expect(refusal(response: [("Cache-Control", "max-age=60, no-store")]) == .noStore)
        #expect(refusal(response: [("Cache-Control", "max-age=60, private")]) == .private)
        #expect(refusal(request: [("Authorization", "Basic x")], response: [("Cache-Control", "max-age=60")]) == .authorization)
        #expect(refusal(response: [("Cache-Control", "max-age=60"), ("Vary", "Accept, *")]) == .varyStar)
        #expect(refusal(status: 302, response: [], lifetime: 0) == .noFreshness)
        #expect(refusal(response: [], lifetime: 0) == .noFreshness)
    }

    @Test func qualifiedPrivateIsStoredWithoutTheFields() {
        #expect(refusal(response: [("Cache-Control", #"max-age=60, private="Set-Cookie""#)]) == nil)
    }

    @Test func authorizationAllowedBySharedDirectives() {
        for directive in ["public", "s-maxage=60", "must-revalidate, max-age=60"] {
            #expect(refusal(request: [("Authorization", "Basic x")], response: [("Cache-Control", directive)]) == nil)
        }
    }

    @Test func mustUnderstandOverridesNoStoreForKnownStatuses() {
        #expect(refusal(response: [("Cache-Control", "max-age=60, no-store, must-understand")]) == nil)
        #expect(refusal(status: 299, response: [("Cache-Control", "max-age=60, no-store, must-understand")]) == .mustUnderstand)
    }

    @Test func zeroLifetimeWithAValidatorIsStored() {
        #expect(refusal(response: [("Cache-Control", "no-cache"), ("ETag", "\"a\"")], lifetime: 0) == nil)
    }
}

@Suite struct ReusePolicyTests {
    func decide(age: Double, lifetime: Double, response: String = "", request: [(String, String)] = []) -> ReusePolicy.Decision {
        let req = fields(request)
        return ReusePolicy.decide(age: age, lifetime: lifetime, response: CacheControl(value: response),
                                  requestFields: req, request: CacheControl(req))
    }

    @Test func freshAndStale() {
        #expect(decide(age: 10, lifetime: 60) == .fresh)
        #expect(decide(age: 60, lifetime: 60) == .validate(.stale))
    }

    @Test func requestDirectives() {
        #expect(decide(age: 1, lifetime: 60, request: [("Cache-Control", "no-cache")]) == .validate(.requestNoCache))
        #expect(decide(age: 1, lifetime: 60, request: [("Pragma", "no-cache")]) == .validate(.requestNoCache))
        // Pragma is ignored when Cache-Control is present (RFC 9111 §5.4).
        #expect(decide(age: 1, lifetime: 60, request: [("Pragma", "no-cache"), ("Cache-Control", "max-stale")]) == .fresh)
        #expect(decide(age: 30, lifetime: 60, request: [("Cache-Control", "max-age=20")]) == .validate(.requestMaxAge))
        #expect(decide(age: 30, lifetime: 60, request: [("Cache-Control", "min-fresh=40")]) == .validate(.requestMinFresh))
        #expect(decide(age: 70, lifetime: 60, request: [("Cache-Control", "max-stale=20")]) == .staleAccepted)
        #expect(decide(age: 90, lifetime: 60, request: [("Cache-Control", "max-stale=20")]) == .validate(.stale))
        #expect(decide(age: 9999, lifetime: 60, request: [("Cache-Control", "max-stale")]) == .staleAccepted)
    }

    @Test func responseDirectives() {
        #expect(decide(age: 1, lifetime: 60, response: "no-cache") == .validate(.responseNoCache))
        #expect(decide(age: 1, lifetime: 60, response: #"no-cache="set-cookie""#) == .fresh)
        for directive in ["must-revalidate", "proxy-revalidate", "s-maxage=60"] {
            #expect(decide(age: 70, lifetime: 60, response: directive, request: [("Cache-Control", "max-stale")])
                    == .validate(.mustRevalidate))
        }
        #expect(decide(age: 70, lifetime: 60, response: "stale-while-revalidate=30") == .staleWhileRevalidate)
        #expect(decide(age: 95, lifetime: 60, response: "stale-while-revalidate=30") == .validate(.stale))
    }

    @Test func staleIfError() {
        #expect(ReusePolicy.mayServeStaleOnError(staleness: 10, response: CacheControl(value: "stale-if-error=20"), request: CacheControl()))
        #expect(!ReusePolicy.mayServeStaleOnError(staleness: 30, response: CacheControl(value: "stale-if-error=20"), request: CacheControl()))
        #expect(ReusePolicy.mayServeStaleOnError(staleness: 30, response: CacheControl(), request: CacheControl(value: "stale-if-error=60")))
        #expect(!ReusePolicy.mayServeStaleOnError(staleness: 1, response: CacheControl(value: "stale-if-error=20, must-revalidate"),
                                                   request: CacheControl()))
    }
}

@Suite struct VaryKeyTests {
    @Test func namesAreLowercasedAndDeduplicated() {
        #expect(VaryKey.names(fields([("Vary", "Accept-Encoding, accept-language"), ("Vary", "ACCEPT-ENCODING")]))
                == ["accept-encoding", "accept-language"])
        #expect(VaryKey.names(fields([("Vary", "Accept, *")])) == nil)
        #expect(VaryKey.names(HTTPFields()) == [])
    }

    @Test func valuesAreNormalised() {
        let a = VaryKey.values(of: ["accept-encoding"], in: fields([("Accept-Encoding", "gzip,  br")]))
        let b = VaryKey.values(of: ["accept-encoding"], in: fields([("Accept-Encoding", "gzip"), ("Accept-Encoding", "br")]))
        #expect(a == b && a == ["gzip,br"])
        #expect(VaryKey.values(of: ["accept-language"], in: HTTPFields()) == [nil])
        #expect(VaryKey.values(of: ["accept-language"], in: fields([("Accept-Language", "")])) == [""])
    }
}

@Suite struct CacheStatusTests {
    @Test func formatsRFC9211Members() {
        #expect(CacheStatus(hit: true, ttl: 87).fieldValue() == "Lookout; hit; ttl=87")
        #expect(CacheStatus(forward: .stale, forwardStatus: 304, stored: true).fieldValue()
                == "Lookout; fwd=stale; fwd-status=304; stored")
        #expect(CacheStatus(forward: .uriMiss, ttl: -3, collapsed: true).fieldValue() == "Lookout; fwd=uri-miss; ttl=-3; collapsed")
    }
}

@Suite struct ByteRangesTests {
    @Test func singleRanges() {
        #expect(ByteRanges.evaluate("bytes=0-499", length: 10_000) == .ranges([0...499]))
        #expect(ByteRanges.evaluate("bytes=9500-", length: 10_000) == .ranges([9500...9999]))
        #expect(ByteRanges.evaluate("bytes=-500", length: 10_000) == .ranges([9500...9999]))
        #expect(ByteRanges.evaluate("bytes=-50000", length: 10_000) == .ranges([0...9999]))
        #expect(ByteRanges.evaluate("bytes=9000-99999", length: 10_000) == .ranges([9000...9999]))
    }

    @Test func multipleRangesCoalesce() {
        #expect(ByteRanges.evaluate("bytes=0-9, 20-29", length: 100) == .ranges([0...9, 20...29]))
        #expect(ByteRanges.evaluate("bytes=0-9,5-19,20-29", length: 100) == .ranges([0...29]))
        #expect(ByteRanges.evaluate("bytes=50-59, 0-9", length: 100) == .ranges([50...59, 0...9]))
    }

    @Test func unsatisfiableAndIgnored() {
        #expect(ByteRanges.evaluate("bytes=100-", length: 100) == .unsatisfiable)
        #expect(ByteRanges.evaluate("bytes=-0", length: 100) == .unsatisfiable)
        #expect(ByteRanges.evaluate("bytes=5-1", length: 100) == .ignore)
        #expect(ByteRanges.evaluate("items=0-1", length: 100) == .ignore)
        #expect(ByteRanges.evaluate("bytes=a-b", length: 100) == .ignore)
        #expect(ByteRanges.evaluate("bytes=-", length: 100) == .ignore)
        let many = "bytes=" + (0..<17).map { "\($0 * 2)-\($0 * 2)" }.joined(separator: ",")
        #expect(ByteRanges.evaluate(many, length: 100) == .ignore)
    }
}
