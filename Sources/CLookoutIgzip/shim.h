#ifndef CLOOKOUT_IGZIP_H
#define CLOOKOUT_IGZIP_H
// ISA-L's igzip: whole-buffer gzip for OTLP export batches (one buffer each).
#include <string.h>
#include <isa-l/igzip_lib.h>

/// Level 1's working memory, in bytes (a macro, which Swift cannot read).
static inline size_t lookout_igzip_level1_buffer_size(void) { return ISAL_DEF_LVL1_DEFAULT; }

/// Compresses `first` then `second` (an export request's prefix and its records, which need not
/// be copied together first) into `out` as one gzip member (RFC 1952) at level 1, using
/// `level_buffer` (`lookout_igzip_level1_buffer_size()` bytes). Returns the gzip's length, or 0
/// when `out` is too small or igzip fails.
static inline size_t lookout_igzip_gzip(const unsigned char *first, size_t first_length,
                                        const unsigned char *second, size_t second_length,
                                        unsigned char *out, size_t out_length, unsigned char *level_buffer) {
    if (first_length > UINT32_MAX - second_length || out_length > UINT32_MAX) return 0;
    struct isal_zstream stream;
    isal_deflate_init(&stream);
    stream.flush = NO_FLUSH;
    stream.level = 1;
    stream.level_buf = level_buffer;
    stream.level_buf_size = ISAL_DEF_LVL1_DEFAULT;
    stream.gzip_flag = IGZIP_GZIP;
    stream.next_out = out;
    stream.avail_out = (uint32_t)out_length;
    // Stateful deflate: a call returns once its input is taken (or the output is full), and
    // the next call's input continues the same stream.
    stream.end_of_stream = 0;
    stream.next_in = (unsigned char *)first;
    stream.avail_in = (uint32_t)first_length;
    if (isal_deflate(&stream) != COMP_OK || stream.avail_in != 0) return 0;
    stream.end_of_stream = 1;
    stream.next_in = (unsigned char *)second;
    stream.avail_in = (uint32_t)second_length;
    if (isal_deflate(&stream) != COMP_OK || stream.internal_state.state != ZSTATE_END) return 0;
    return stream.total_out;
}
#endif
