#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include "CLookoutSocket.h"

int lookout_original_destination(int fd, int family, struct sockaddr_storage *destination, socklen_t *length) {
    memset(destination, 0, sizeof *destination);
    *length = family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    int result = family == AF_INET6
        ? getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, destination, length)
        : getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, destination, length);
    return result == 0 ? 0 : errno;
}

int lookout_set_transparent(int fd, int family) {
    int on = 1;
    int result = family == AF_INET6
        ? setsockopt(fd, SOL_IPV6, IPV6_TRANSPARENT, &on, sizeof on)
        : setsockopt(fd, SOL_IP, IP_TRANSPARENT, &on, sizeof on);
    return result == 0 ? 0 : errno;
}

int lookout_socket_in_netns(int netns_fd, int family, int type, int *socket_fd) {
    // setns(2) moves only the calling thread; it moves back before returning, so the socket is the
    // only thing that stays in the other namespace (a socket keeps the namespace it was made in).
    int home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (home < 0) return errno;
    if (setns(netns_fd, CLONE_NEWNET) != 0) {
        int error = errno;
        close(home);
        return error;
    }
    int fd = socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int error = fd < 0 ? errno : 0;
    if (setns(home, CLONE_NEWNET) != 0) {
        // The thread cannot go home: it must not serve anything else from the wrong namespace.
        abort();
    }
    close(home);
    if (error != 0) return error;
    *socket_fd = fd;
    return 0;
}

int lookout_pidfd_open(int pid) {
    long fd = syscall(SYS_pidfd_open, pid, 0);
    return fd < 0 ? -1 : (int)fd;
}

int lookout_unshare_network(void) {
    return unshare(CLONE_NEWNET) == 0 ? 0 : errno;
}

int lookout_enter_network(int netns_fd) {
    return setns(netns_fd, CLONE_NEWNET) == 0 ? 0 : errno;
}
