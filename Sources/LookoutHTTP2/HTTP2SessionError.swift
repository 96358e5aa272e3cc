import CLookoutNGHTTP2

/// nghttp2 failed; `message` is its description.
public struct HTTP2SessionError: Error, CustomStringConvertible {
    public let message: String
    public let code: Int32

    init(_ message: String) {
        self.message = message
        self.code = 0
    }

    init(code: Int32) {
        self.message = String(cString: nghttp2_strerror(code))
        self.code = code
    }

    public var description: String { message }
}
