import Foundation
import Glibc
import HTTPTypes
import LookoutTLS
import Testing
@testable import Lookout
@testable import LookoutModel

@Suite struct URLReferenceTests {
    /// RFC 3986 §5.4.1 and §5.4.2, against the RFC's base (with http for its scheme).
    @Test(arguments: [
        ("g", "http://a/b/c/g"), ("./g", "http://a/b/c/g"), ("g/", "http://a/b/c/g/"), ("/g", "http://a/g"),
        ("//g", "http://g/"), ("?y", "http://a/b/c/d;p?y"), ("g?y", "http://a/b/c/g?y"), ("#s", "http://a/b/c/d;p?q"),
        ("g#s", "http://a/b/c/g"), (";x", "http://a/b/c/;x"), ("", "http://a/b/c/d;p?q"), (".", "http://a/b/c/"),
        ("./", "http://a/b/c/"), ("..", "http://a/b/"), ("../", "http://a/b/"), ("../g", "http://a/b/g"),
        ("../..", "http://a/"), ("../../g", "http://a/g"), ("../../../g", "http://a/g"), ("/./g", "http://a/g"),
        ("/../g", "http://a/g"), ("g.", "http://a/b/c/g."), (".g", "http://a/b/c/.g"), ("g..", "http://a/b/c/g.."),
        ("./../g", "http://a/b/g"), ("./g/.", "http://a/b/c/g/"), ("g/./h", "http://a/b/c/g/h"), ("g/../h", "http://a/b/c/h"),
        ("https://other.example:8443/x?y", "https://other.example:8443/x?y"), ("HTTP://A/b", "http://A/b"),
    ])
    func resolvesLikeTheRFC(_ reference: String, _ expected: String) {
        #expect(URLReference.resolve(reference, against: "http://a/b/c/d;p?q") == expected)
    }
}

@Suite struct RedirectPolicyTests {
    private func policy(_ rule: RedirectRule, hosts: [String] = ["**.example.com", "example.com"]) throws -> RedirectPolicy {
        RedirectPolicy(rules: HostRuleSet([(try hosts.map { try HostPattern($0) }, rule)]))
    }

    private func context(_ location: String, status: Int = 302, from url: String = "http://a.example.com/start",
                         method: HTTPRequest.Method = .get, followed: Int = 0, visited: Set<String> = [],
                         hasBody: Bool = false, replayable: Bool = false) -> RedirectContext {
        RedirectContext(status: status, location: location, requestURL: url, method: method, redirectsFollowed: followed,
                        visitedURLs: visited.union([url]), hasBody: hasBody, bodyIsReplayable: replayable)
    }

    @Test func noRulePassesUnchanged() throws {
        let outcome = try policy(RedirectRule(follow: true)).outcome(for: context("/x", from: "http://other.test/a"))
        #expect(outcome == RedirectOutcome(decision: .pass(location: nil), target: "http://other.test/x", reason: "no_rule"))
    }

    @Test func followsRelativeAndAbsolute() throws {
        let p = try policy(RedirectRule(follow: true))
        #expect(p.outcome(for: context("next?q=1")).decision == .follow(url: "http://a.example.com/next?q=1"))
        #expect(p.outcome(for: context("https://b.example.com/z")).decision == .follow(url: "https://b.example.com/z"))
    }

    @Test func aLocationThatIsNoHTTPURLIsPassed() throws {
        let p = try policy(RedirectRule(follow: true))
        for location in ["ftp://files.example.com/x", "mailto:someone@example.com", "http://bad host/"] {
            let outcome = p.outcome(for: context(location))
            #expect(outcome.decision == .pass(location: nil) && outcome.reason == "unsupported_location", "\(location)")
        }
    }

    @Test func notFollowingPasses() throws {
        let outcome = try policy(RedirectRule(follow: false)).outcome(for: context("/x"))
        #expect(outcome.decision == .pass(location: nil) && outcome.reason == "not_following")
    }

    @Test func downgradeIsRefusedWhenPassingAndFollowing() throws {
        for follow in [false, true] {
            let outcome = try policy(RedirectRule(follow: follow))
                .outcome(for: context("http://a.example.com/plain", from: "https://a.example.com/secure"))
            #expect(outcome.decision == .refuse(.redirectFailed(reason: .downgradeRefused(location: "http://a.example.com/plain"))))
            #expect(outcome.reason == "downgrade")
        }
        let allowed = try policy(RedirectRule(follow: true, allowDowngrade: true))
            .outcome(for: context("http://a.example.com/plain", from: "https://a.example.com/secure"))
        #expect(allowed.decision == .follow(url: "http://a.example.com/plain"))
    }

    @Test func crossHostPassesWhenNotAllowed() throws {
        let outcome = try policy(RedirectRule(follow: true, allowCrossHost: false)).outcome(for: context("http://b.example.com/"))
        #expect(outcome.decision == .pass(location: nil) && outcome.reason == "cross_host")
        let samePort = try policy(RedirectRule(follow: true, allowCrossHost: false)).outcome(for: context("/same"))
        #expect(samePort.decision == .follow(url: "http://a.example.com/same"))
    }

    @Test func bodiesMustBeReplayableFor307And308Only() throws {
        let p = try policy(RedirectRule(follow: true))
        #expect(p.outcome(for: context("/x", status: 307, method: .post, hasBody: true)).reason == "body_not_replayable")
        #expect(p.outcome(for: context("/x", status: 308, method: .put, hasBody: true, replayable: true)).reason == "rule")
        // 303 and a POST's 301/302 become GETs: no body needed.
        #expect(p.outcome(for: context("/x", status: 303, method: .put, hasBody: true)).reason == "rule")
        #expect(p.outcome(for: context("/x", status: 302, method: .post, hasBody: true)).reason == "rule")
    }

    @Test func loopAndLimit() throws {
        let p = try policy(RedirectRule(follow: true, maxHops: 2))
        let loop = p.outcome(for: context("/start", from: "http://a.example.com/b", visited: ["http://a.example.com/start"]))
        #expect(loop.decision == .refuse(.redirectFailed(reason: .loop(url: "http://a.example.com/start"))))
        let limit = p.outcome(for: context("/c", followed: 2))
        #expect(limit.decision == .refuse(.redirectFailed(reason: .limitExceeded(maxHops: 2))))
        #expect(ProxyError.redirectFailed(reason: .limitExceeded(maxHops: 2)).code == "redirect_limit_exceeded")
        #expect(ProxyError.redirectFailed(reason: .loop(url: "x")).status == 502)
    }

    @Test func rewriteAppliesToPassedAndFollowed() throws {
        let rule = RedirectRule(follow: false, rewrites: [("http://old.example.com/", "https://new.example.com/v2/")])
        let passed = try policy(rule).outcome(for: context("http://old.example.com/a?b"))
        #expect(passed.decision == .pass(location: "https://new.example.com/v2/a?b"))
        var following = rule
        following.follow = true
        let followed = try policy(following).outcome(for: context("http://old.example.com/a?b"))
        #expect(followed.decision == .follow(url: "https://new.example.com/v2/a?b"))
    }

    @Test func methodRulesOfRFC9110() {
        #expect(RedirectStatus.method(after: 301, from: .post) == .get)
        #expect(RedirectStatus.method(after: 302, from: .put) == .put)
        #expect(RedirectStatus.method(after: 303, from: .put) == .get)
        #expect(RedirectStatus.method(after: 303, from: .head) == .head)
        #expect(RedirectStatus.method(after: 307, from: .post) == .post)
        #expect(!RedirectStatus.isFollowable(300) && !RedirectStatus.isFollowable(304) && RedirectStatus.isFollowable(308))
    }
}

@Suite struct RetryPolicyTests {
    private func context(_ outcome: AttemptOutcome, method: HTTPRequest.Method = .get, attempt: Int = 1, retries: Int = 0,
                         reused: Bool = false, replayable: Bool = true, now: Double = 1_000_000) -> RetryContext {
        RetryContext(method: method, host: "api.example.com", attempt: attempt, retriesByRule: retries, outcome: outcome,
                     usedReusedConnection: reused, receivedResponseBytes: false, bodyIsReplayable: replayable, now: now)
    }

    private func policy(_ configure: (inout RetryRule) -> Void) throws -> RetryPolicy {
        var rule = RetryRule()
        rule.limit = 2
        rule.jitter = false
        configure(&rule)
        return RetryPolicy(rules: HostRuleSet([([try HostPattern("**")], rule)]), random: { 0 })
    }

    @Test func staleConnectionRetryNeedsNoRule() {
        let stale = RetryPolicy.staleConnectionsOnly.decision(for: context(.failure(.upstreamFailed(reason: .closed("x"))), reused: true))
        #expect(stale == .retry(delay: 0, reason: "stale_pooled_connection", countsAgainstRule: false))
        #expect(RetryPolicy.staleConnectionsOnly.decision(for: context(.failure(.upstreamFailed(reason: .closed("x"))))) == .doNotRetry)
        #expect(RetryPolicy.staleConnectionsOnly.decision(for: context(.response(status: 503, retryAfter: nil))) == .doNotRetry)
    }

    @Test func backoffGrowsAndIsCapped() throws {
        let p = try policy { $0.limit = 5; $0.backoffBase = 0.5; $0.backoffMultiplier = 3; $0.backoffMax = 4 }
        let delays = (0..<4).map { retries -> Double? in
            if case .retry(let delay, _, _) = p.decision(for: context(.response(status: 503, retryAfter: nil), retries: retries)) {
                return delay
            }
            return nil
        }
        #expect(delays == [0.5, 1.5, 4, 4])
    }

    @Test func jitterStaysInTheUpperHalf() throws {
        var rule = RetryRule()
        rule.limit = 1
        let low = RetryPolicy(rules: HostRuleSet([([try HostPattern("**")], rule)]), random: { 0 })
        let high = RetryPolicy(rules: HostRuleSet([([try HostPattern("**")], rule)]), random: { 0.999 })
        let outcome = AttemptOutcome.response(status: 502, retryAfter: nil)
        #expect(low.decision(for: context(outcome)) == .retry(delay: 0.1, reason: "502", countsAgainstRule: true))
        guard case .retry(let delay, _, _) = high.decision(for: context(outcome)) else { Issue.record("no retry"); return }
        #expect(delay > 0.199 && delay < 0.2)
    }

    @Test func limitsMethodsStatusesAndErrors() throws {
        let p = try policy { _ in }
        #expect(p.decision(for: context(.response(status: 503, retryAfter: nil), retries: 2)) == .doNotRetry)
        #expect(p.decision(for: context(.response(status: 503, retryAfter: nil), method: .post)) == .doNotRetry)
        #expect(p.decision(for: context(.response(status: 429, retryAfter: nil))) == .doNotRetry)
        #expect(p.decision(for: context(.response(status: 500, retryAfter: nil))) == .doNotRetry)
        #expect(p.decision(for: context(.failure(.upstreamFailed(reason: .connectFailed("refused")))))
                == .retry(delay: 0.2, reason: "upstream_connect_failed", countsAgainstRule: true))
        #expect(p.decision(for: context(.failure(.upstreamFailed(reason: .firstByteTimedOut(after: 1))))) == .doNotRetry)
        #expect(p.decision(for: context(.response(status: 503, retryAfter: nil), replayable: false)) == .doNotRetry)
        let listed = try policy { $0.statuses = [429]; $0.methods = ["POST"] }
        #expect(listed.decision(for: context(.response(status: 429, retryAfter: nil), method: .post))
                == .retry(delay: 0.2, reason: "429", countsAgainstRule: true))
    }

    @Test func retryAfterSecondsAndDatesCapped() throws {
        let p = try policy { $0.maxRetryAfter = 30 }
        #expect(p.decision(for: context(.response(status: 503, retryAfter: "3"))) == .retry(delay: 3, reason: "503", countsAgainstRule: true))
        #expect(p.decision(for: context(.response(status: 503, retryAfter: "120"))) == .retry(delay: 30, reason: "503", countsAgainstRule: true))
        // 784111777 = Sun, 06 Nov 1994 08:49:37 GMT (RFC 9110 §5.6.7).
        let now = 784_111_777.0 - 5
        for date in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
            #expect(p.decision(for: context(.response(status: 503, retryAfter: date), now: now))
                    == .retry(delay: 5, reason: "503", countsAgainstRule: true), "\(date)")
        }
        // Garbage falls back to the backoff; a date in the past means now.
        #expect(p.decision(for: context(.response(status: 503, retryAfter: "soon"))) == .retry(delay: 0.2, reason: "503", countsAgainstRule: true))
        #expect(p.decision(for: context(.response(status: 503, retryAfter: "Sun, 06 Nov 1994 08:49:37 GMT"), now: 2e9))
                == .retry(delay: 0, reason: "503", countsAgainstRule: true))
        let ignoring = try policy { $0.honorRetryAfter = false }
        #expect(ignoring.decision(for: context(.response(status: 503, retryAfter: "9"))) == .retry(delay: 0.2, reason: "503", countsAgainstRule: true))
    }

    @Test func mostSpecificRuleWins() throws {
        var none = RetryRule()
        none.limit = 0
        var some = RetryRule()
        some.limit = 3
        some.replayBodyBytes = 99
        let p = RetryPolicy(rules: HostRuleSet([([try HostPattern("**")], some), ([try HostPattern("api.example.com")], none)]))
        #expect(!p.keepsBodies(forHost: "api.example.com"))
        #expect(p.keepsBodies(forHost: "www.example.com") && p.replayLimit(forHost: "www.example.com") == 99)
    }
}

@Suite struct ReplayableBodyTests {
    @Test func memoryThenDiskAndReadBack() throws {
        let directory = "/tmp/lookout-replay-test-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let body = ReplayableBody(limit: 3 << 20, directory: directory)
        let chunk = (0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        for _ in 0..<40 { #expect(chunk.withUnsafeBytes { body.append($0) }) }
        #expect(body.count == 40 * 65_536 && body.isOnDisk && !body.isOverLimit)
        var read: [UInt8] = []
        var offset: UInt64 = 0
        while offset < body.count {
            let n = body.read(from: offset, maximum: 50_000) { read.append(contentsOf: $0) }
            offset += UInt64(n)
        }
        #expect(read == Array((0..<40).map { _ in chunk }.joined()))
        // Past the limit nothing more is kept.
        #expect(!chunk.withUnsafeBytes { body.append($0) } || body.count <= 3 << 20)
    }

    @Test func overTheLimitIsNotReplayable() {
        let body = ReplayableBody(limit: 10, directory: "/tmp")
        #expect(Array("0123456789".utf8).withUnsafeBytes { body.append($0) })
        #expect(!Array("x".utf8).withUnsafeBytes { body.append($0) })
        #expect(body.isOverLimit && body.count == 10 && !body.isOnDisk)
    }
}

/// Header rules' edits (`headers.rules`) and the `Forwarded` element.
@Suite struct HeaderRuleTests {
    @Test func editsRemoveThenSetThenAddAndReportWhatChanged() {
        var fields = HTTPFields()
        fields.append(HTTPField(name: HTTPField.Name("X-Debug")!, value: "0"))
        fields.append(HTTPField(name: HTTPField.Name("X-Debug")!, value: "2"))
        fields.append(HTTPField(name: HTTPField.Name("X-Trace")!, value: "client"))
        fields.append(HTTPField(name: HTTPField.Name("X-Internal")!, value: "secret"))
        let edits = HeaderEdits(remove: [HTTPField.Name("X-Internal")!, HTTPField.Name("X-Absent")!],
                                set: [HTTPField(name: HTTPField.Name("X-Debug")!, value: "1")],
                                add: [HTTPField(name: HTTPField.Name("X-Trace")!, value: "lookout")])
        let changes = edits.apply(to: &fields)
        #expect(fields[values: HTTPField.Name("X-Debug")!] == ["1"])
        #expect(fields[values: HTTPField.Name("X-Trace")!] == ["client", "lookout"])
        #expect(fields[HTTPField.Name("X-Internal")!] == nil)
        #expect(changes.removed == ["x-internal"])  // only what was there
        #expect(changes.set.count == 1 && changes.added.count == 1)
        #expect(!edits.isEmpty && HeaderEdits().isEmpty)
    }

    @Test func forwardedNamesTheClientAddressWithoutItsPort() {
        #expect(ForwardedElement.value(clientAddress: "127.0.0.1:5123", scheme: "http") == "for=127.0.0.1;proto=http")
        // RFC 7239 §6: an IPv6 node is bracketed and, holding ":", quoted.
        #expect(ForwardedElement.value(clientAddress: "[::1]:5123", scheme: "https") == "for=\"[::1]\";proto=https")
        #expect(ForwardedElement.node("") == "unknown")
    }
}
