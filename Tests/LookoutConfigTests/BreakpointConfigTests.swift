import Testing
@testable import LookoutConfig
import LookoutModel

@Suite struct BreakpointConfigTests {
    @Test func readsTheIssueShape() throws {
        let config = try load("""
        breakpoints:
          max_held: 100
          rules:
            - filter: 'host:api.example.com and method:POST'
              on: [request, response]
              timeout: 300
              on_timeout: continue
            - filter: 'status:5xx'
              on: response
              timeout: 2.5
              on_timeout: abort
        """)
        #expect(config.breakpoints.maxHeld == 100 && config.breakpoints.maxBodyBytes == 1 << 20)
        #expect(config.breakpoints.rules == [
            BreakpointRuleSpec(filter: "host:api.example.com and method:POST", onRequest: true, onResponse: true,
                               timeout: 300, onTimeout: .continue),
            BreakpointRuleSpec(filter: "status:5xx", onRequest: false, onResponse: true, timeout: 2.5, onTimeout: .abort),
        ])
    }

    @Test func defaultsArePausingRequestsForFiveMinutesThenGoingOn() throws {
        #expect(defaults.breakpoints == BreakpointSettings())
        let rule = try #require(try load("breakpoints: {rules: [{filter: 'method:PUT'}]}").breakpoints.rules.first)
        #expect(rule.onRequest && !rule.onResponse && rule.timeout == 300 && rule.onTimeout == .continue)
    }

    @Test func badValuesNameTheirKey() {
        #expect(error("breakpoints: {rules: [{filter: 'status:abc'}]}")?.contains("breakpoints.rules[0].filter: column 8") == true)
        #expect(error("breakpoints: {rules: [{on: [request]}]}")?.contains("breakpoints.rules[0].filter") == true)
        #expect(error("breakpoints: {rules: [{filter: 'method:GET', on: [later]}]}")?.contains("breakpoints.rules[0].on[0]") == true)
        #expect(error("breakpoints: {rules: [{filter: 'method:GET', timeout: 0}]}")?.contains("rules[0].timeout") == true)
        #expect(error("breakpoints: {rules: [{filter: 'method:GET', on_timeout: stop}]}")?.contains("on_timeout") == true)
        #expect(error("breakpoints: {rules: [{filter: 'method:GET', colour: red}]}")?.contains("colour") == true)
        #expect(error("breakpoints: {max_held: 0}")?.contains("breakpoints.max_held") == true)
        #expect(error("breakpoints: {max_body_bytes: -1}")?.contains("breakpoints.max_body_bytes") == true)
    }
}
