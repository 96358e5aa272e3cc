#define _GNU_SOURCE
#include <errno.h>
#include <sys/epoll.h>
#include <unistd.h>
#include "CLookoutSocket.h"

_Static_assert(LOOKOUT_POLL_IN == EPOLLIN && LOOKOUT_POLL_OUT == EPOLLOUT && LOOKOUT_POLL_ERR == EPOLLERR
               && LOOKOUT_POLL_HUP == EPOLLHUP && LOOKOUT_POLL_RDHUP == EPOLLRDHUP, "epoll flags");

int lookout_epoll_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

int lookout_epoll_add(int epfd, int fd, uint64_t token) {
    struct epoll_event event = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.u64 = token };
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event);
}

int lookout_epoll_remove(int epfd, int fd) {
    struct epoll_event unused = { 0 };
    return epoll_ctl(epfd, EPOLL_CTL_DEL, fd, &unused);
}

int lookout_epoll_poll(int epfd, uint64_t *tokens, uint32_t *masks, int capacity) {
    struct epoll_event events[256];
    if (capacity > 256) capacity = 256;
    int n;
    do {
        n = epoll_wait(epfd, events, capacity, 0);
    } while (n < 0 && errno == EINTR);
    for (int i = 0; i < n; i++) {
        tokens[i] = events[i].data.u64;
        masks[i] = events[i].events;
    }
    return n;
}
