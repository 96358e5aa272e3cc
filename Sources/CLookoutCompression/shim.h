#ifndef CLOOKOUT_COMPRESSION_H
#define CLOOKOUT_COMPRESSION_H
#include <string.h>
#include <zlib.h>
#include <brotli/decode.h>

/// Decodes gzip (window_bits 15 + 32: zlib or gzip, detected), zlib (15) or raw deflate (-15)
/// from `in` into `out`. Returns the decoded length, -1 on corrupt input, -2 when `out` is too small.
static inline long lookout_inflate(const unsigned char *in, size_t in_length, unsigned char *out, size_t out_length,
                                   int window_bits) {
    z_stream stream;
    memset(&stream, 0, sizeof stream);
    if (inflateInit2(&stream, window_bits) != Z_OK) return -1;
    stream.next_in = (unsigned char *)in;
    stream.avail_in = (uInt)in_length;
    stream.next_out = out;
    stream.avail_out = (uInt)out_length;
    int status = inflate(&stream, Z_FINISH);
    long produced = (long)stream.total_out;
    inflateEnd(&stream);
    if (status == Z_STREAM_END) return produced;
    if (status == Z_BUF_ERROR && stream.avail_out == 0) return -2;
    return -1;
}

/// Prepares `stream` to write gzip (RFC 1952: window_bits 15 + 16) at `level`; Z_OK on success.
/// `deflateInit2` is a macro, which Swift cannot call.
static inline int lookout_deflate_init_gzip(z_stream *stream, int level) {
    memset(stream, 0, sizeof *stream);
    return deflateInit2(stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
}

/// Prepares `stream` to inflate raw deflate (RFC 1951) piece by piece, as WebSocket's
/// permessage-deflate sends it (RFC 7692 §7.2.2); Z_OK on success.
static inline int lookout_inflate_raw_init(z_stream *stream) {
    memset(stream, 0, sizeof *stream);
    return inflateInit2(stream, -15);
}

/// Decodes brotli; the same results as `lookout_inflate`.
static inline long lookout_brotli_decode(const unsigned char *in, size_t in_length, unsigned char *out, size_t out_length) {
    size_t produced = out_length;
    BrotliDecoderResult result = BrotliDecoderDecompress(in_length, in, &produced, out);
    if (result == BROTLI_DECODER_RESULT_SUCCESS) return (long)produced;
    return result == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT ? -2 : -1;
}
#endif
