import Foundation
import HTTPTypes
import Testing
@testable import Lookout
@testable import LookoutStages
import LookoutModel

/// The hook stage through the test handle, with a real command hook: a program that answers each
/// call with the action in its first argument.
@Suite(.serialized) struct HookStageTests {
    private static let program = """
        import json, sys
        for line in sys.stdin:
            call = json.loads(line)
            print(json.dumps({"id": call["id"], "phase": call["phase"], "action": sys.argv[1],
                              "reason": "refused by the test"}), flush=True)
        """

    private func hooks(_ action: String) throws -> Hooks {
        try Hooks(settings: [HookSettings(name: "gate", filter: "method:POST",
                                          transport: .command(["python3", "-c", Self.program, action], workingDirectory: "/"),
                                          // A loaded machine may take seconds to start python: the verdict
                                          // must be the hook's, never its timeout's.
                                          timeoutMilliseconds: 10_000)],
                  restarted: { _, _, _ in })
    }

    private func run(_ action: String) throws -> (TestStageHandle, StageVerdict?) {
        let hooks = try hooks(action)
        defer { hooks.all.forEach { $0.transport.stop() } }
        let stage = HookStage(hooks: hooks)
        let handle = TestStageHandle(.post, "http://api.test/orders", framing: .contentLength(2))
        guard case .holdWithBody = stage.requestHead(handle) else { Issue.record("not held for the hook"); return (handle, nil) }
        stage.requestBodyHeld(Array("{}".utf8), complete: true, exchange: handle)
        let deadline = Date().addingTimeInterval(10)
        while handle.resumeCount == 0 && Date() < deadline { usleep(10_000) }
        return (handle, handle.firstResume)
    }

    @Test func aContinuingHookLetsTheRequestGoOn() throws {
        let (_, verdict) = try run("continue")
        guard case .proceed? = verdict else { Issue.record("not resumed: \(String(describing: verdict))"); return }
    }

    @Test func anAbortingHookFailsTheExchangeWithHookFailed() throws {
        let (_, verdict) = try run("abort")
        guard case .fail(let error)? = verdict else { Issue.record("not aborted: \(String(describing: verdict))"); return }
        #expect(error.code == "hook_failed")
    }

    @Test func aRequestTheFilterDoesNotMatchIsNotHeld() throws {
        let hooks = try hooks("abort")
        defer { hooks.all.forEach { $0.transport.stop() } }
        guard case .proceed = HookStage(hooks: hooks).requestHead(TestStageHandle(.get, "http://api.test/orders")) else {
            Issue.record("a GET was held"); return
        }
    }
}
