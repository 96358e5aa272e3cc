import HTTPTypes
import Testing
@testable import Lookout
@testable import LookoutStages
import LookoutHTTP
import LookoutModel
import LookoutTLS

/// The stages that decide what becomes of an attempt: redirects and retries.
@Suite struct AttemptStagesTests {
    private func redirects(_ rule: RedirectRule) throws -> RedirectStage {
        RedirectStage(handler: RedirectPolicy(rules: HostRuleSet([([try HostPattern("**")], rule)])))
    }

    private func head(_ status: Int, _ fields: HTTPFields = [:]) -> ResponseHead {
        ResponseHead(status: status, reasonPhrase: ReasonPhrase.standard(for: status), version: .http1_1, headerFields: fields,
                     framing: .none, keepAlive: true, headLength: 0)
    }

    @Test func aFollowedRedirectIsAnotherAttemptToTheResolvedURL() throws {
        let handle = TestStageHandle(.get, "http://origin.test/a/b")
        let plan = try redirects(RedirectRule(follow: true)).attemptResponse(head(302, [.location: "../c"]),
                                                                             attempt: handle.attempt(), exchange: handle)
        guard case .follow(let url, let status)? = plan else { Issue.record("not followed: \(String(describing: plan))"); return }
        #expect(url == "http://origin.test/c" && status == 302)
        #expect(handle.events.first is TaskWillPerformRedirect)
    }

    @Test func aPassedRedirectGoesToTheClientAndOtherStatusesAreNotTheStagesConcern() throws {
        let handle = TestStageHandle(.get, "http://origin.test/a")
        let stage = try redirects(RedirectRule(follow: false))
        guard case .forward? = stage.attemptResponse(head(301, [.location: "/b"]), attempt: handle.attempt(), exchange: handle)
        else { Issue.record("not passed"); return }
        // No Location, or not a redirect: no opinion, and nothing recorded.
        let quiet = TestStageHandle(.get, "http://origin.test/a")
        #expect(noPlan(stage.attemptResponse(head(302), attempt: quiet.attempt(), exchange: quiet)))
        #expect(noPlan(stage.attemptResponse(head(200), attempt: quiet.attempt(), exchange: quiet)))
        #expect(quiet.events.isEmpty)
    }

    @Test func aDowngradeIsRefusedWithItsCode() throws {
        let handle = TestStageHandle(.get, "https://origin.test/a")
        let plan = try redirects(RedirectRule(follow: true)).attemptResponse(head(302, [.location: "http://origin.test/b"]),
                                                                             attempt: handle.attempt(), exchange: handle)
        guard case .fail(let error)? = plan else { Issue.record("not refused: \(String(describing: plan))"); return }
        #expect(error.code == "redirect_downgrade_refused")
    }

    private func retries(limit: Int) throws -> RetryStage {
        var rule = RetryRule()
        rule.limit = limit
        rule.backoffBase = 0.5
        rule.jitter = false
        return RetryStage(retrier: RetryPolicy(rules: HostRuleSet([([try HostPattern("origin.test")], rule)])))
    }

    @Test func aListedStatusIsRetriedAfterTheBackoffUntilTheLimit() throws {
        let stage = try retries(limit: 1)
        let handle = TestStageHandle(.get, "http://origin.test/a")
        let plan = stage.attemptResponse(head(503), attempt: handle.attempt(1), exchange: handle)
        guard case .retry(let delay, let counts)? = plan else { Issue.record("not retried"); return }
        #expect(delay == 0.5 && counts)
        #expect(handle.events.first is RequestIsRetrying)
        // The second attempt has used the rule's one retry.
        #expect(noPlan(stage.attemptResponse(head(503), attempt: handle.attempt(2), exchange: handle)))
        #expect(noPlan(stage.attemptResponse(head(200), attempt: handle.attempt(1), exchange: handle)))
    }

    @Test func aPostIsNotRetriedByDefaultButAStalePooledConnectionIs() throws {
        let stage = try retries(limit: 3)
        let post = TestStageHandle(.post, "http://origin.test/a", framing: .contentLength(2))
        #expect(noPlan(stage.attemptFailed(.upstreamFailed(reason: .connectFailed("refused")), attempt: post.attempt(),
                                           exchange: post)))
        let get = TestStageHandle(.get, "http://other.test/a")
        let plan = stage.attemptFailed(.upstreamFailed(reason: .closed("reset")), attempt: get.attempt(1, reused: true), exchange: get)
        guard case .retry(0, false)? = plan else { Issue.record("a stale pooled connection not retried"); return }
    }
}

/// No opinion from the stage (`ResponsePlan` is not `Equatable`).
func noPlan(_ plan: ResponsePlan?) -> Bool {
    if case .none = plan { true } else { false }
}
