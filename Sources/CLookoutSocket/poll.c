#define _GNU_SOURCE
#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
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

int lookout_epoll_poll(int epfd, uint64_t *tokens, uint32_t *masks, int capacity, int timeout) {
    struct epoll_event events[256];
    if (capacity > 256) capacity = 256;
    int n;
    do {
        n = epoll_wait(epfd, events, capacity, timeout);
    } while (n < 0 && errno == EINTR);
    for (int i = 0; i < n; i++) {
        tokens[i] = events[i].data.u64;
        masks[i] = events[i].events;
    }
    return n;
}

int lookout_epoll_add_wake(int epfd, uint64_t token) {
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) return -1;
    struct epoll_event event = { .events = EPOLLIN, .data.u64 = token };
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event) != 0) { close(fd); return -1; }
    return fd;
}

void lookout_wake(int fd) {
    uint64_t one = 1;
    ssize_t unused = write(fd, &one, sizeof one);
    (void)unused;
}

int lookout_thread_id(void) {
    return (int)gettid();
}

void lookout_name_thread(const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
}
