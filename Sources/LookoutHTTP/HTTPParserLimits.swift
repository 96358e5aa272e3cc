/// Limits enforced incrementally while bytes arrive.
///
/// Stored as 32-bit counts: every client connection's parser holds a copy, and idle keep-alive
/// connections count by the thousand. Values past `UInt32.max` are clamped to it.
public struct HTTPParserLimits: Sendable {
    private var requestLine: UInt32
    private var headerBytes: UInt32
    private var headerCount: UInt32
    private var chunkLine: UInt32
    private var trailerBytes: UInt32

    /// Request line (without its CRLF) longer than this -> `.requestLineTooLong`, even before the CRLF arrives.
    public var maxRequestLineBytes: Int {
        get { Int(requestLine) }
        set { requestLine = Self.clamped(newValue) }
    }
    /// Whole head including the start line and the final empty line -> `.headerSectionTooLarge`.
    public var maxHeaderBytes: Int {
        get { Int(headerBytes) }
        set { headerBytes = Self.clamped(newValue) }
    }
    /// Number of header (or trailer) field lines -> `.tooManyHeaders`.
    public var maxHeaderCount: Int {
        get { Int(headerCount) }
        set { headerCount = Self.clamped(newValue) }
    }
    /// Chunk-size line including extensions (without its CRLF) -> `.invalidChunkedEncoding`.
    public var maxChunkLineBytes: Int {
        get { Int(chunkLine) }
        set { chunkLine = Self.clamped(newValue) }
    }
    /// Trailer section including its final empty line -> `.headerSectionTooLarge`.
    public var maxTrailerBytes: Int {
        get { Int(trailerBytes) }
        set { trailerBytes = Self.clamped(newValue) }
    }

    public init(
        maxRequestLineBytes: Int = 8192,
        maxHeaderBytes: Int = 65536,
        maxHeaderCount: Int = 128,
        maxChunkLineBytes: Int = 4096,
        maxTrailerBytes: Int = 16384
    ) {
        requestLine = Self.clamped(maxRequestLineBytes)
        headerBytes = Self.clamped(maxHeaderBytes)
        headerCount = Self.clamped(maxHeaderCount)
        chunkLine = Self.clamped(maxChunkLineBytes)
        trailerBytes = Self.clamped(maxTrailerBytes)
    }

    private static func clamped(_ value: Int) -> UInt32 { UInt32(clamping: value) }
}
