import HTTPTypes
import Testing

@testable import LookoutCache

/// RFC 9213: `CDN-Cache-Control` replaces `Cache-Control` and `Expires` when it is valid.
@Suite struct TargetedCacheControlTests {
    static func targeted(_ value: String, _ extra: [(String, String)] = []) -> CacheControl? {
        CacheControl.targeted(fields([("CDN-Cache-Control", value)] + extra))
    }

    @Test func directivesKeepTheirRFC9111Meaning() throws {
        let c = try #require(Self.targeted("foobar, max-age=3600, s-maxage=60, stale-if-error=5, must-revalidate, public"))
        #expect(c.isTargeted && c.maxAge == 3600 && c.sMaxAge == 60 && c.staleIfError == 5 && c.mustRevalidate && c.isPublic)
        #expect(try #require(Self.targeted("no-store")).noStore)
        #expect(try #require(Self.targeted("private")).isPrivate)
        let qualified = try #require(Self.targeted(#"no-cache="Set-Cookie, X-A""#))
        #expect(qualified.noCache && qualified.noCacheFields == ["set-cookie", "x-a"])
        #expect(try #require(Self.targeted("no-store=?0")).noStore == false)
    }

    @Test func hugeMaxAgeSaturates() throws {
        #expect(try #require(Self.targeted("max-age=99999999999")).maxAge == 2_147_483_648)
    }

    @Test(arguments: ["max-age=\"10000\"", "max-age=-1", "max-age=1.5", "max-age=?1"])
    func wrongTypedFreshnessIsStale(_ value: String) throws {
        let c = try #require(Self.targeted(value))
        #expect(c.maxAge == nil && c.conflicts.contains("max-age"))
        #expect(Freshness.lifetime(status: 200, fields: fields([("CDN-Cache-Control", value)]), directives: c,
                                   responseTime: rfcTime, defaultTTL: 0) == (0, .maxAge))
    }

    @Test(arguments: ["", "MaX-aGe=3600", "max-age =100", "max-age= 100", "max-age=10000, &&&&&"])
    func invalidOrEmptyFieldFallsBack(_ value: String) {
        #expect(Self.targeted(value) == nil)
        let f = fields([("CDN-Cache-Control", value), ("Cache-Control", "no-store")])
        #expect(CacheControl.response(f, targeted: true).noStore)
    }

    @Test func targetedFieldReplacesCacheControlAndExpires() {
        let f = fields([("Date", rfcDate), ("Cache-Control", "no-store, max-age=1"), ("CDN-Cache-Control", "max-age=600"),
                        ("Expires", "Sun, 06 Nov 1994 09:49:37 GMT")])
        let targeted = CacheControl.response(f, targeted: true)
        #expect(!targeted.noStore)
        #expect(Freshness.lifetime(status: 200, fields: f, directives: targeted, responseTime: rfcTime,
                                   defaultTTL: 0) == (600, .maxAge))
        // A rule with cdn_cache_control: false reads Cache-Control as before.
        #expect(CacheControl.response(f, targeted: false).noStore)
        // max-age=0 with a future Expires: the Expires is ignored.
        let zero = fields([("Date", rfcDate), ("CDN-Cache-Control", "max-age=0"), ("Expires", "Sun, 06 Nov 1994 09:49:37 GMT")])
        #expect(Freshness.lifetime(status: 200, fields: zero, directives: CacheControl.response(zero, targeted: true),
                                   responseTime: rfcTime, defaultTTL: 0) == (0, .maxAge))
        // Without max-age, the targeted field still hides Expires: no explicit freshness.
        let bare = fields([("Date", rfcDate), ("CDN-Cache-Control", "public"), ("Expires", "Sun, 06 Nov 1994 09:49:37 GMT")])
        let directives = CacheControl.response(bare, targeted: true)
        #expect(!Freshness.hasExplicitFreshness(bare, directives))
        #expect(Freshness.lifetime(status: 200, fields: bare, directives: directives, responseTime: rfcTime,
                                   defaultTTL: 0).source == .none)
    }
}
