import HTTPTypes
import LookoutHTTP

extension OTLPPoster {
    /// One Collector answer, read with the proxy's own response parser: its framing by
    /// Content-Length, by chunks (with trailers) or by the close (RFC 9112 §6.3), interim 1xx
    /// answers passed over (RFC 9110 §15.2), and whether the connection can carry the next batch.
    struct AnswerReader {
        private var parser = HTTPResponseParser()
        private var head: ResponseHead?
        private var body: [UInt8] = []
        /// Some of an answer has arrived: a connection closed before any is a kept one gone stale.
        private(set) var hasStarted = false

        init() {
            parser.expectResponse(to: .post)
        }

        /// Takes the bytes just read; the answer, and whether its connection can be kept, once
        /// it is complete.
        mutating func take(_ bytes: [UInt8]) throws(Failure) -> (answer: Answer, keep: Bool)? {
            hasStarted = hasStarted || !bytes.isEmpty
            var offset = 0
            while true {
                let step = bytes.withUnsafeBytes { all in
                    Result { () throws(HTTPParseError) in try parser.parse(UnsafeRawBufferPointer(rebasing: all[offset...])) }
                }
                let consumed: Int, event: HTTPParseEvent<ResponseHead>?
                switch step {
                case .success(let parsed): (consumed, event) = parsed
                case .failure(let error): throw .malformed("the Collector's answer is not HTTP/1.1 as RFC 9112 frames it: \(error)")
                }
                switch event {
                case nil:
                    return nil
                case .head(let parsed):
                    if parsed.status >= 200 { head = parsed }
                case .body(let range):
                    guard body.count + range.count <= OTLPPoster.maximumAnswerBytes else {
                        throw .malformed("the Collector's answer is over 4 MiB")
                    }
                    body += bytes[(offset + range.lowerBound)..<(offset + range.upperBound)]
                case .end:
                    // Bytes after the answer put the connection out of step: it is not kept.
                    return answer(keep: offset + consumed == bytes.count)
                }
                offset += consumed
            }
        }

        /// The Collector closed the connection: the answer if it ran until the close, nil if none
        /// had begun.
        mutating func closed() throws(Failure) -> (answer: Answer, keep: Bool)? {
            let event: HTTPParseEvent<ResponseHead>?
            do { event = try parser.finish() } catch {
                throw .io("the Collector closed the connection in the middle of its answer")
            }
            guard case .end = event else { return nil }
            return answer(keep: false)
        }

        private func answer(keep: Bool) -> (answer: Answer, keep: Bool)? {
            guard let head else { return nil }
            // Seconds; an HTTP date is taken as none (the exporter's own backoff applies).
            let retryAfter = head.headerFields[.retryAfter].flatMap { Double($0) }
            return (Answer(status: head.status, retryAfter: retryAfter, body: body), keep && head.keepAlive)
        }
    }
}
