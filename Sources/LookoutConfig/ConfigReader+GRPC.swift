import Foundation
import LookoutMessages
import Yams

/// A `grpc.descriptor_sets` file and its bytes, read when the config is.
public struct DescriptorSetFile: Sendable, Equatable {
    public var path: String
    public var bytes: [UInt8]
}

/// The `grpc` section: each descriptor set is read and checked here, so `lookout config check`
/// names a missing or wrong file.
extension ConfigReader {
    /// The largest descriptor set read (they are a few KiB to a few MiB).
    static let maximumDescriptorSetBytes = 64 << 20

    func readDescriptorSets(_ node: Node) -> [DescriptorSetFile] {
        let files = stringList(node, path: "grpc.descriptor_sets", expected: "descriptor set files (protoc --descriptor_set_out)") ?? []
        return files.compactMap { text, fileNode, filePath -> DescriptorSetFile? in
            guard let file = resolve(text) else { return nil }
            guard let data = FileManager.default.contents(atPath: file) else {
                fail(fileNode, filePath, "cannot read \(file)")
                return nil
            }
            guard data.count <= Self.maximumDescriptorSetBytes else {
                fail(fileNode, filePath, "\(file) is over \(Self.maximumDescriptorSetBytes) bytes")
                return nil
            }
            let bytes = [UInt8](data)
            if let problem = DescriptorSet.problem(bytes) {
                fail(fileNode, filePath, "\(file) \(problem) (write it with protoc --descriptor_set_out)")
                return nil
            }
            return DescriptorSetFile(path: file, bytes: bytes)
        }
    }
}
