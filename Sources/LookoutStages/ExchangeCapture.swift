#if canImport(Glibc)
import Lookout
import Glibc
import LookoutModel
import LookoutUpstream
#endif

/// The bodies of one exchange written to files as they stream (config `capture`): the request as
/// the client sent it, the response as the client got it (content codings as received). Each
/// file stops at the rule's `max_body_bytes` and is marked truncated; a failed write stops that
/// body's capture and says so, and the traffic never waits for or depends on it.
final class ExchangeCapture {  // confined to the exchange's loop queue
    enum Body: String { case request, response }

    private final class File {
        let body: Body
        let path: String
        var fd: Int32
        var written: Int64 = 0
        var truncated = false
        init(body: Body, path: String, fd: Int32) {
            self.body = body
            self.path = path
            self.fd = fd
        }
    }

    private let store: BodyCaptureStore
    private let rule: CaptureRule
    private let requestID: UInt64
    private var request: File?
    private var response: File?
    private var requestDone = false
    private var responseDone = false
    private(set) var summary = CaptureSummary()

    init(store: BodyCaptureStore, rule: CaptureRule, requestID: UInt64) {
        self.store = store
        self.rule = rule
        self.requestID = requestID
    }

    /// Request body bytes from the client; a `capture.didFail` record when writing failed.
    func requestBytes(_ bytes: UnsafeRawBufferPointer) -> CaptureDidFail? {
        guard rule.requestBodies, !requestDone else { return nil }
        return append(bytes, to: .request)
    }

    /// Response body bytes on their way to the client.
    func responseBytes(_ bytes: UnsafeRawBufferPointer) -> CaptureDidFail? {
        guard rule.responseBodies, !responseDone else { return nil }
        return append(bytes, to: .response)
    }

    func requestEnded() { close(.request) }
    func responseEnded() { close(.response) }

    /// The exchange is over: whatever is open is closed as it is.
    func finish() {
        close(.request)
        close(.response)
    }

    private func append(_ bytes: UnsafeRawBufferPointer, to body: Body) -> CaptureDidFail? {
        guard bytes.count > 0 else { return nil }
        var file = body == .request ? request : response
        if file == nil {
            guard let (fd, path) = store.open(name: "\(requestID).\(body.rawValue)") else {
                return fail(body, path: store.directory + "/\(requestID).\(body.rawValue)", code: errno)
            }
            file = File(body: body, path: path, fd: fd)
            if body == .request { request = file; summary.request = path } else { response = file; summary.response = path }
        }
        guard let file, file.fd >= 0 else { return nil }
        let room = rule.maxBodyBytes - file.written
        let count = Int(min(Int64(bytes.count), max(0, room)))
        if count < bytes.count {
            file.truncated = true
            summary.truncated = true
        }
        if count > 0 {
            guard let base = bytes.baseAddress, Self.writeAll(file.fd, base, count) else {
                let code = errno
                close(body)
                return fail(body, path: file.path, code: code)
            }
            file.written += Int64(count)
        }
        if file.truncated { close(body) }
        return nil
    }

    private func fail(_ body: Body, path: String, code: Int32) -> CaptureDidFail {
        if body == .request { requestDone = true } else { responseDone = true }
        summary.error = "\(body.rawValue): \(String(cString: strerror(code)))"
        return CaptureDidFail(body: body.rawValue, path: path, error: String(cString: strerror(code)))
    }

    private func close(_ body: Body) {
        if body == .request { requestDone = true } else { responseDone = true }
        guard let file = body == .request ? request : response, file.fd >= 0 else { return }
        _ = Glibc.close(file.fd)
        file.fd = -1
        store.finished(file.path, size: file.written)
    }

    private static func writeAll(_ fd: Int32, _ base: UnsafeRawPointer, _ count: Int) -> Bool {
        var done = 0
        while done < count {
            let n = write(fd, base + done, count - done)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            done += n
        }
        return true
    }
}
