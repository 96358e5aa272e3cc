#if canImport(Glibc)
import Glibc
#endif
import LookoutMessages

/// Opens an exchange's `<id>.messages.jsonl` in the capture folder, and counts it in the folder's
/// bound when it is done.
struct MessageCapture {
    let store: BodyCaptureStore
    let rule: CaptureRule

    /// The file for exchange `id`; nil when it cannot be created (the summary then has no path).
    func open(id: UInt64) -> MessageCaptureFile? {
        guard rule.responseBodies || rule.requestBodies, let (fd, path) = store.open(name: "\(id).messages.jsonl") else {
            return nil
        }
        return MessageCaptureFile(fd: fd, path: path, maxBytes: rule.maxBodyBytes)
    }

    func finished(_ file: MessageCaptureFile) {
        file.close()
        store.finished(file.path, size: file.written)
    }
}
