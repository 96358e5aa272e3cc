#if canImport(Glibc)
import Glibc
#endif
import LookoutMessages
import LookoutTLS

/// Opens an exchange's `<id>.messages.jsonl` in the capture folder, and counts it in the folder's
/// bound when it is done.
package struct MessageCapture {
    let store: BodyCaptureStore
    let rule: CaptureRule

    /// The capture of the messages of an exchange (or tunnel) to `clientKey`, when a capture rule
    /// covers that host.
    package static func matching(_ clientKey: HostRuleKey, store: BodyCaptureStore?, settings: CaptureSettings?) -> MessageCapture? {
        guard let store, let rule = settings?.rules.match(for: clientKey)?.rule else { return nil }
        return MessageCapture(store: store, rule: rule)
    }

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
