import LookoutModel
import Testing
@testable import LookoutConfig

@Suite struct MessagesConfigTests {
    @Test func readsTheIssueShapeAndDefaultsToOn() throws {
        #expect(LookoutConfiguration().messages == MessagesSettings(enabled: true, previewBytes: 256, decodeBudgetBytes: 1 << 20))
        let config = try load("""
        messages:
          enabled: false
          preview_bytes: 64
          decode_budget_bytes: 4096
        """)
        #expect(config.messages == MessagesSettings(enabled: false, previewBytes: 64, decodeBudgetBytes: 4096))
    }

    @Test func errorsNameTheKey() {
        #expect(error("messages:\n  preview_bytes: 70000")?.contains("messages.preview_bytes: must be between 0 and 65536") == true)
        #expect(error("messages:\n  decode_budget_bytes: -1")?.contains("messages.decode_budget_bytes") == true)
        #expect(error("messages:\n  enabled: maybe")?.contains("messages.enabled") == true)
        #expect(error("messages:\n  preview: 10")?.contains("messages.preview") == true)
    }
}
