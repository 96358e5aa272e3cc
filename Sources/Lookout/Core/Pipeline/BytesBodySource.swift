import HTTPTypes
import LookoutHTTP
import LookoutModel

/// An answer's body already in memory (an operator's or a hook's answer, bounded by the admin
/// endpoint's and the hook's reply limits), sent in 64 KiB pieces while the client keeps up.
package final class BytesBodySource: ResponseBodySource, @unchecked Sendable {  // confined to the exchange's loop queue
    private let bytes: [UInt8]
    private var offset = 0

    package init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    package func send(to client: ClientResponseWriter, observe: (UnsafeRawBufferPointer) -> Void) -> BodyProgress {
        while offset < bytes.count {
            let end = min(bytes.count, offset + 64 * 1024)
            let accepted = bytes.withUnsafeBytes { raw -> Bool in
                let piece = UnsafeRawBufferPointer(rebasing: raw[offset..<end])
                observe(piece)
                return client.writeBody(piece)
            }
            offset = end
            if !accepted && offset < bytes.count { return .waiting }
        }
        return .done
    }

    /// Never fails: the bytes are all here.
    package var failure: ProxyError { .sessionUnavailable(reason: .shuttingDown) }
}

extension StageAnswer {
    /// An answer with a body from memory: `Content-Length` set from it.
    package init(status: Int, headers: [(name: String, value: String)], body: [UInt8], phase: String) {
        var fields = HTTPFields()
        for (name, value) in headers {
            if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        fields[.contentLength] = String(body.count)
        fields[.transferEncoding] = nil
        self.init(status: status, reasonPhrase: ReasonPhrase.standard(for: status), fields: fields,
                  framing: body.isEmpty ? .none : .contentLength, body: body.isEmpty ? nil : BytesBodySource(body),
                  phase: phase)
    }
}
