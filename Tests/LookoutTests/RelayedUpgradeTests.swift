import LookoutHTTP
import Testing
@testable import Lookout
@testable import LookoutModel

@Suite struct RelayedUpgradeTests {
    private func head(upgrade: String?, framing: BodyFraming = .none) -> RequestHead {
        RequestHead(method: .get, rawTarget: "http://a/", target: .origin(path: "/"), version: .http1_1,
                    headerFields: [:], framing: framing, keepAlive: true, expectsContinue: false,
                    upgrade: upgrade, headLength: 0)
    }

    @Test func relaysWhatTheClientAsksForOnABodilessRequest() {
        #expect(Exchange.relayedUpgrade(head(upgrade: "websocket")) == "websocket")
        #expect(Exchange.relayedUpgrade(head(upgrade: "WebSocket, foo/2")) == "WebSocket, foo/2")
    }

    @Test func keepsTheExchangeHTTPWhenNoSwitchCanBeRelayed() {
        #expect(Exchange.relayedUpgrade(head(upgrade: nil)) == nil)
        // h2c, alone or among others, would hide the rest of the exchange in an opaque tunnel.
        #expect(Exchange.relayedUpgrade(head(upgrade: "h2c")) == nil)
        #expect(Exchange.relayedUpgrade(head(upgrade: "websocket, H2C")) == nil)
        // A request body would have to be relayed before the switch: not supported, so not asked.
        #expect(Exchange.relayedUpgrade(head(upgrade: "websocket", framing: .contentLength(3))) == nil)
        #expect(Exchange.relayedUpgrade(head(upgrade: "websocket", framing: .chunked)) == nil)
    }
}
