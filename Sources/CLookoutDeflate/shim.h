#ifndef CLOOKOUT_DEFLATE_H
#define CLOOKOUT_DEFLATE_H
// libdeflate: whole-buffer DEFLATE and gzip, for OTLP export batches (one buffer each).
#include <libdeflate.h>
#endif
