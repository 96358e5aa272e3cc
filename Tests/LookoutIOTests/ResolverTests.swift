import Dispatch
import Testing
@testable import LookoutIO

@Suite struct ResolverTests {
    private func resolve(_ host: String) async -> Result<Resolution, ResolveError> {
        let group = EventLoopGroup(count: 1)
        let resolver = Resolver(cacheTTL: 30)
        return await withCheckedContinuation { done in
            group.loops[0].execute {
                resolver.resolve(host: host, port: 8080, on: group.loops[0]) { done.resume(returning: $0) }
            }
        }
    }

    @Test func ipLiteralsNeedNoLookup() async throws {
        let v4 = try await resolve("127.0.0.1").get()
        #expect(v4.addresses.map(\.description) == ["127.0.0.1:8080"])
        let v6 = try await resolve("::1").get()
        #expect(v6.addresses.map(\.description) == ["[::1]:8080"])
    }

    /// RFC 6761: answered locally, so these never query a DNS server.
    @Test func specialUseNamesAreAnsweredLocally() async throws {
        let local = try await resolve("LocalHost").get()
        #expect(local.addresses.map(\.description) == ["127.0.0.1:8080", "[::1]:8080"])
        let sub = try await resolve("api.localhost.").get()
        #expect(sub.addresses.first?.description == "127.0.0.1:8080")
        guard case .failure(let error) = await resolve("nonexistent.invalid") else {
            Issue.record("an .invalid name resolved")
            return
        }
        #expect(error.message.contains("RFC 6761"))
    }
}
