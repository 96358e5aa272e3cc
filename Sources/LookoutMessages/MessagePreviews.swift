import Foundation
import LookoutModel

/// How records and capture files show a message's bytes.
public enum MessagePreviews {
    /// The first `limit` bytes: as text when `isText` and they are UTF-8 (cut at a character's
    /// start), else base64.
    public static func preview(_ bytes: [UInt8], isText: Bool, limit: Int, truncated: Bool) -> MessagePreview? {
        guard limit > 0, !bytes.isEmpty else { return nil }
        var shown = Array(bytes.prefix(limit))
        let cut = truncated || bytes.count > limit
        if isText {
            // Back off to the start of a UTF-8 character (continuation bytes are 10xxxxxx).
            if cut, bytes.count > shown.count {
                while let last = shown.last, last & 0xc0 == 0x80 { shown.removeLast() }
                if let last = shown.last, last >= 0xc0 { shown.removeLast() }
            }
            if let text = String(validating: shown, as: UTF8.self) { return MessagePreview(text: text, truncated: cut) }
        }
        return MessagePreview(base64: Data(shown).base64EncodedString(), truncated: cut)
    }
}
