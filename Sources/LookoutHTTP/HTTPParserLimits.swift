/// Limits enforced incrementally while bytes arrive.
public struct HTTPParserLimits: Sendable {
    /// Request line (without its CRLF) longer than this -> `.requestLineTooLong`, even before the CRLF arrives.
    public var maxRequestLineBytes: Int
    /// Whole head including the start line and the final empty line -> `.headerSectionTooLarge`.
    public var maxHeaderBytes: Int
    /// Number of header (or trailer) field lines -> `.tooManyHeaders`.
    public var maxHeaderCount: Int
    /// Chunk-size line including extensions (without its CRLF) -> `.invalidChunkedEncoding`.
    public var maxChunkLineBytes: Int
    /// Trailer section including its final empty line -> `.headerSectionTooLarge`.
    public var maxTrailerBytes: Int

    public init(
        maxRequestLineBytes: Int = 8192,
        maxHeaderBytes: Int = 65536,
        maxHeaderCount: Int = 128,
        maxChunkLineBytes: Int = 4096,
        maxTrailerBytes: Int = 16384
    ) {
        self.maxRequestLineBytes = maxRequestLineBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxChunkLineBytes = maxChunkLineBytes
        self.maxTrailerBytes = maxTrailerBytes
    }
}
