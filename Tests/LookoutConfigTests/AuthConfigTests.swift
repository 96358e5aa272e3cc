import Testing
@testable import LookoutConfig

@Suite("auth.users") struct AuthConfigTests {
    @Test func defaultsToNoAuthentication() throws {
        #expect(try ConfigurationLoader.load(yaml: "", file: "x.yaml").auth.users.isEmpty)
    }

    @Test func readsNamePasswordPairsAndKeepsColonsInPasswords() throws {
        let yaml = "auth:\n  users: [\"alice:s3cret\", \"bob:a:b:c\"]\n"
        #expect(try ConfigurationLoader.load(yaml: yaml, file: "x.yaml").auth.users == ["alice:s3cret", "bob:a:b:c"])
    }

    @Test(arguments: [
        ("auth:\n  users: alice:x", "2:10 auth.users: expected a list of \"name:password\" strings"),
        ("auth:\n  users: [\"nocolon\"]", "2:11 auth.users[0]: expected \"name:password\" with a non-empty name"),
        ("auth:\n  users: [\":pw\"]", "2:11 auth.users[0]: expected \"name:password\" with a non-empty name"),
        ("auth:\n  users: [\"a:1\", \"a:2\"]", "2:18 auth.users[1]: user 'a' is listed twice (first on line 2)"),
        ("auth:\n  user: []", "2:3 auth.user: unknown key 'user'; did you mean 'users'?"),
    ])
    func rejectsMalformedEntries(yaml: String, expected: String) {
        do {
            _ = try ConfigurationLoader.load(yaml: yaml, file: "x.yaml")
            Issue.record("accepted \(yaml)")
        } catch {
            let text = error.errors.map { "\($0.line):\($0.column) \($0.keyPath): \($0.message)" }
            #expect(text.contains { $0.hasPrefix(expected) }, "\(text)")
        }
    }
}
