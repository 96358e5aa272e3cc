import LookoutTLS
import Testing
@testable import Lookout
@testable import LookoutModel

@Suite struct MapRulesTests {
    private func prefix(_ host: String, _ path: String, secure: Bool = true, port: Int = 443) throws -> MapRemoteRule.Prefix {
        MapRemoteRule.Prefix(isSecure: secure, host: try HostPattern(host), port: port, path: path,
                             text: "\(secure ? "https" : "http")://\(host)\(path)")
    }

    private func remote(_ from: MapRemoteRule.Prefix, to path: String) -> MapRemoteRule {
        MapRemoteRule(from: from, toHost: "127.0.0.1", toPort: 3000, toIsSecure: false, toPath: path,
                      toText: "http://127.0.0.1:3000\(path)", preserveHost: false, allowDowngrade: false)
    }

    @Test func theRestOfThePathFollowsWithOneSlash() throws {
        #expect(remote(try prefix("a.test", "/v2/"), to: "/").targetPath(for: "/v2/users?x=1") == "/users?x=1")
        #expect(remote(try prefix("a.test", "/v2/"), to: "/api").targetPath(for: "/v2/users") == "/api/users")
        #expect(remote(try prefix("a.test", "/v2"), to: "/api/").targetPath(for: "/v2/users") == "/api/users")
        #expect(remote(try prefix("a.test", "/v2"), to: "/api/").targetPath(for: "/v2?q") == "/api?q")
        #expect(remote(try prefix("a.test", "/"), to: "/").targetPath(for: "/") == "/")
        #expect(remote(try prefix("a.test", "/"), to: "/base/").targetPath(for: "/x/y") == "/base/x/y")
    }

    @Test func localFirstThenTheLongestRemotePrefix() throws {
        let rules = MapRules(
            remote: [remote(try prefix("**.a.test", "/"), to: "/wild/"), remote(try prefix("api.a.test", "/"), to: "/exact/"),
                     remote(try prefix("api.a.test", "/v2/"), to: "/v2/")],
            local: [MapLocalRule(from: try prefix("api.a.test", "/config.json"), file: "/f/c.json", status: 200,
                                 contentType: "application/json")])
        func target(_ host: String, _ path: String, secure: Bool = true, port: Int = 443) -> String? {
            switch rules.match(isSecure: secure, host: host, port: port, path: path) {
            case .remote(let rule)?: return rule.targetPath(for: path)
            case .local(let rule)?: return rule.file
            case nil: return nil
            }
        }
        #expect(target("api.a.test", "/config.json?v=2") == "/f/c.json")
        #expect(target("api.a.test", "/config.json.bak") == "/exact/config.json.bak")
        #expect(target("api.a.test", "/v2/x") == "/v2/x")
        #expect(target("API.a.test", "/other") == "/exact/other")
        #expect(target("b.a.test", "/other") == "/wild/other")
        #expect(target("api.a.test", "/v2/x", secure: false, port: 80) == nil)
        #expect(target("api.a.test", "/v2/x", port: 8443) == nil)
        #expect(target("a.test", "/") == nil)
    }

    @Test func contentTypesFollowTheExtension() {
        #expect(MapRules.contentType(forFile: "/x/config.JSON") == "application/json")
        #expect(MapRules.contentType(forFile: "/x/a.tar.gz") == "application/octet-stream")
        #expect(MapRules.contentType(forFile: "/x.d/README") == "application/octet-stream")
        #expect(MapRules.contentType(forFile: "page.html") == "text/html; charset=utf-8")
    }
}
