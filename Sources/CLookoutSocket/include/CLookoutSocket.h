#ifndef CLOOKOUT_SOCKET_H
#define CLOOKOUT_SOCKET_H
#include <sys/socket.h>

/// accept4(2) with SOCK_NONBLOCK | SOCK_CLOEXEC: Glibc's Swift module hides it behind _GNU_SOURCE.
int lookout_accept_nonblocking(int fd, struct sockaddr *address, socklen_t *length);
#endif
