#define _GNU_SOURCE
#include <sys/socket.h>
#include "CLookoutSocket.h"

int lookout_accept_nonblocking(int fd, struct sockaddr *address, socklen_t *length) {
    return accept4(fd, address, length, SOCK_NONBLOCK | SOCK_CLOEXEC);
}
