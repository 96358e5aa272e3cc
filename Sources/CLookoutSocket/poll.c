#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

int64_t lookout_monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

int lookout_epoll_spin(int epfd, uint64_t *tokens, uint32_t *masks, int capacity, int64_t spin_ns,
                       int *gave_way) {
    int64_t start = lookout_monotonic_ns();
    *gave_way = 0;
    for (;;) {
        int n = lookout_epoll_poll(epfd, tokens, masks, capacity, 0);
        if (n != 0) return n;
        int64_t before = lookout_monotonic_ns();
        sched_yield();
        int64_t after = lookout_monotonic_ns();
        /* A yield as long as the whole spin ran other threads for a full time slice: they
           want this CPU, so stop polling. Short ones (a helper thread's turn) are fine. */
        if (after - before >= spin_ns) {
            *gave_way = 1;
            return 0;
        }
        if (after - start >= spin_ns) return 0;
    }
}

int64_t lookout_pressure_some_total(int fd) {
    char text[256];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    if (n <= 0) return -1;
    text[n] = 0;
    /* "some avg10=0.00 avg60=0.00 avg300=0.00 total=12345\nfull ..." (Documentation/accounting/psi.rst) */
    char *end = strchr(text, '\n');
    if (end) *end = 0;
    if (strncmp(text, "some ", 5) != 0) return -1;
    char *total = strstr(text, "total=");
    if (!total) return -1;
    return strtoll(total + 6, NULL, 10);
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
