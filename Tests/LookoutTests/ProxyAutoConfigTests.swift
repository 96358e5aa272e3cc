import Testing
@testable import Lookout
import LookoutTLS

/// The proxy auto-config script's text: the listener it names and the host lists it carries
/// (its decisions are evaluated by Chromium in `Tests/integration/test_pac.py`).
@Suite struct ProxyAutoConfigTests {
    @Test func namesTheListenerAnIPv6OneBracketed() {
        #expect(ProxyAutoConfig.script(listener: "127.0.0.1:8080", direct: []).contains("return \"PROXY 127.0.0.1:8080\";"))
        #expect(ProxyAutoConfig.script(listener: "[::1]:8080", direct: []).contains("return \"PROXY [::1]:8080\";"))
    }

    @Test func sortsThePatternsByKind() throws {
        let direct = try ["intranet.test", "*.one.test", "**.deep.test", "10.0.0.1"].map { try HostPattern($0) }
        let script = ProxyAutoConfig.script(listener: "127.0.0.1:8080", direct: direct)
        #expect(script.contains("var lookoutExact = [\"intranet.test\", \"10.0.0.1\"];"))
        #expect(script.contains("var lookoutOneLabel = [\"one.test\"];"))
        #expect(script.contains("var lookoutAnyDepth = [\"deep.test\"];"))
        #expect(script.contains("var lookoutEveryHost = false;"))
        let everything = ProxyAutoConfig.script(listener: "127.0.0.1:8080", direct: [try HostPattern("**")])
        #expect(everything.contains("var lookoutEveryHost = true;"))
        #expect(ProxyAutoConfig.script(listener: "127.0.0.1:8080", direct: []).contains("var lookoutExact = [];"))
    }
}
