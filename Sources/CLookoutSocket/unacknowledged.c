#include <linux/sockios.h>
#include <sys/ioctl.h>

#include "CLookoutSocket.h"

int lookout_unacknowledged_byte_count(int fd) {
    int count = 0;
    return ioctl(fd, SIOCOUTQ, &count) == 0 ? count : -1;
}
