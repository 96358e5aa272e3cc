import Foundation
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

    @Test func descriptorSetsAreReadAndCheckedWhereTheConfigIsRead() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-descriptors-\(getpid())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // FileDescriptorSet { file { name: "a.proto" package: "p" } }, by hand.
        let good: [UInt8] = [0x0a, 0x0c, 0x0a, 0x07] + Array("a.proto".utf8) + [0x12, 0x01, 0x70]
        FileManager.default.createFile(atPath: folder + "/good.pb", contents: Data(good))
        FileManager.default.createFile(atPath: folder + "/bad.pb", contents: Data("not a descriptor".utf8))
        let config = try load("grpc:\n  descriptor_sets: [\"\(folder)/good.pb\"]")
        #expect(config.grpcDescriptorSets == [DescriptorSetFile(path: folder + "/good.pb", bytes: good)])
        #expect(error("grpc:\n  descriptor_sets: [\"\(folder)/bad.pb\"]")?.contains("grpc.descriptor_sets[0]") == true)
        #expect(error("grpc:\n  descriptor_sets: [\"\(folder)/absent.pb\"]")?.contains("cannot read") == true)
        #expect(error("grpc:\n  descriptor_set: []")?.contains("grpc.descriptor_set") == true)
    }
}
