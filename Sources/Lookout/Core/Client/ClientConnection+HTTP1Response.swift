import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutModel
import LookoutUpstream

/// The HTTP/1.x side of a response: heads serialized for the wire (RFC 9112 §4), bodies as they
/// are or in chunks (§7.1), trailers after the last chunk. One exchange at a time writes here.
extension ClientConnection: ClientResponseWriter {
    func writeInformational(status: Int, reasonPhrase: String, fields: HTTPFields) {
        connection.write { HTTPSerializer.appendResponseHead(into: &$0, status: status, reasonPhrase: reasonPhrase,
                                                             version: .http1_1, headerFields: fields) }
    }

    func writeHead(status: Int, reasonPhrase: String, fields: HTTPFields, framing: ClientFraming) {
        responseFraming = framing
        connection.write { HTTPSerializer.appendResponseHead(into: &$0, status: status, reasonPhrase: reasonPhrase,
                                                             version: .http1_1, headerFields: fields) }
    }

    @discardableResult
    func writeBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        switch responseFraming {
        case .chunked:
            connection.write(HTTPSerializer.chunkHeader(length: bytes.count))
            connection.write(bytes)
            return connection.write(HTTPSerializer.crlf)
        case .contentLength, .untilClose:
            return connection.write(bytes)
        case .none:
            return true
        }
    }

    func writeEnd(trailers: HTTPFields?) {
        if responseFraming == .chunked { connection.write(HTTPSerializer.lastChunk(trailers: trailers)) }
        responseFraming = .none
    }

    func writeError(_ error: ProxyError, requestID: UInt64) {
        connection.write(ErrorResponse.bytes(for: error, closeConnection: true, requestID: requestID))
    }

    var switchableStream: ByteStream? { connection }
}
