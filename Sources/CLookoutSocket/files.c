#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>
#include "CLookoutSocket.h"

long lookout_copy_file_range(int in_fd, long long *in_offset, int out_fd, size_t length) {
    off_t offset = (off_t)*in_offset;
    ssize_t n = copy_file_range(in_fd, &offset, out_fd, NULL, length, 0);
    *in_offset = (long long)offset;
    return (long)n;
}

int lookout_sync_file_range(int fd, long long offset, long long length, unsigned int flags) {
    return sync_file_range(fd, (off_t)offset, (off_t)length, flags);
}
