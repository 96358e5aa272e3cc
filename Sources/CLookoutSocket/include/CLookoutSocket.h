#ifndef CLOOKOUT_SOCKET_H
#define CLOOKOUT_SOCKET_H
#include <stdint.h>
#include <sys/socket.h>

/// accept4(2) with SOCK_NONBLOCK | SOCK_CLOEXEC: Glibc's Swift module hides it behind _GNU_SOURCE.
int lookout_accept_nonblocking(int fd, struct sockaddr *address, socklen_t *length);

/// epoll(7) without `struct epoll_event`, which is packed on x86-64 and so unsafe to build in
/// Swift: a registration carries a 64-bit token, and waiting unpacks tokens and event masks
/// into two plain arrays.
enum {
    LOOKOUT_POLL_IN = 0x001,     /* EPOLLIN */
    LOOKOUT_POLL_OUT = 0x004,    /* EPOLLOUT */
    LOOKOUT_POLL_ERR = 0x008,    /* EPOLLERR */
    LOOKOUT_POLL_HUP = 0x010,    /* EPOLLHUP */
    LOOKOUT_POLL_RDHUP = 0x2000, /* EPOLLRDHUP */
};
int lookout_epoll_create(void);
/// Watches `fd` edge-triggered for input, output, peer shutdown and errors.
int lookout_epoll_add(int epfd, int fd, uint64_t token);
int lookout_epoll_remove(int epfd, int fd);
/// epoll_wait (timeout in milliseconds, -1 for none; EINTR retried): fills up to `capacity`
/// tokens and masks, returns the count or -1.
int lookout_epoll_poll(int epfd, uint64_t *tokens, uint32_t *masks, int capacity, int timeout);
/// Polls `epfd` without sleeping until something is ready or `spin_ns` nanoseconds have passed,
/// offering the CPU to other runnable threads (sched_yield) between polls. Returns the count
/// filled: 0 when the time ran out, -1 on failure. Sets `*gave_way` (and returns 0) when one
/// yield lasted the whole spin: other threads ran a full slice, so the CPU is wanted.
int lookout_epoll_spin(int epfd, uint64_t *tokens, uint32_t *masks, int capacity, int64_t spin_ns,
                       int *gave_way);
/// CLOCK_MONOTONIC in nanoseconds (vDSO: no system call).
int64_t lookout_monotonic_ns(void);
/// The "some" line's `total=` of a PSI file (/proc/pressure/cpu: microseconds during which at
/// least one runnable task waited for a CPU), read from offset 0 of the open `fd`; -1 on failure.
int64_t lookout_pressure_some_total(int fd);
/// An eventfd watched (level-triggered) by `epfd` under `token`, for waking a thread blocked in
/// `lookout_epoll_poll`; -1 on failure.
int lookout_epoll_add_wake(int epfd, uint64_t token);
/// Makes a wake descriptor readable.
void lookout_wake(int fd);
/// Names the calling thread (prctl(2) is variadic, so Swift cannot call it).
void lookout_name_thread(const char *name);
/// The calling thread's kernel id (gettid(2); hidden behind _GNU_SOURCE in Glibc's Swift module).
int lookout_thread_id(void);

/// Bytes written to a TCP socket that the peer has not acknowledged yet (SIOCOUTQ; ioctl(2) is
/// variadic, so Swift cannot call it), or -1.
int lookout_unacknowledged_byte_count(int fd);

/// An rtnetlink socket (nonblocking) subscribed to link and IPv4/IPv6 route changes, or -1.
int lookout_route_monitor_open(void);
/// Reads and discards every pending notification; returns how many, or -1 on a socket error.
int lookout_route_monitor_drain(int fd);
/// The interface a default route (IPv4 first, then IPv6, main table) leaves through, if it is up:
/// 1 and its name in `name`, 0 when there is none, -1 when the routes cannot be read.
int lookout_default_route_interface(char *name, size_t length);
/// The interface's ARPHRD_* hardware type (SIOCGIFHWADDR, in this network namespace), or -1.
int lookout_interface_hardware_type(const char *name);
/// 1 when the interface answers the wireless-extensions name query (a Wi-Fi device).
int lookout_interface_is_wireless(const char *name);

/// Copies `length` bytes from `in_fd` at `*in_offset` to the current offset of `out_fd` in the
/// kernel (copy_file_range(2), behind _GNU_SOURCE); returns the bytes copied or -1.
long lookout_copy_file_range(int in_fd, long long *in_offset, int out_fd, size_t length);

/// sync_file_range(2) (behind _GNU_SOURCE): starts and/or waits for the writeback of
/// `length` bytes of `fd` at `offset`. Returns 0 or -1 (errno set).
enum {
    LOOKOUT_SYNC_WAIT_BEFORE = 1, /* SYNC_FILE_RANGE_WAIT_BEFORE */
    LOOKOUT_SYNC_WRITE = 2,       /* SYNC_FILE_RANGE_WRITE */
    LOOKOUT_SYNC_WAIT_AFTER = 4,  /* SYNC_FILE_RANGE_WAIT_AFTER */
};
int lookout_sync_file_range(int fd, long long offset, long long length, unsigned int flags);
/// Starts `argv` (searched in PATH) in `directory` with pipes for its stdin and stdout (its stderr
/// is the caller's); the caller's ends are close-on-exec. 0, or the errno that stopped it.
int lookout_spawn_piped(char *const argv[], const char *directory, int *pid, int *to_child, int *from_child);
/// The address a REDIRECT-ed connection was sent to before netfilter changed it (SO_ORIGINAL_DST,
/// or IP6T_SO_ORIGINAL_DST for `family` AF_INET6). 0, or the errno (ENOENT: not redirected).
int lookout_original_destination(int fd, int family, struct sockaddr_storage *destination, socklen_t *length);
/// IP_TRANSPARENT (IPV6_TRANSPARENT), for a listener that TPROXY rules feed; 0 or the errno.
int lookout_set_transparent(int fd, int family);
/// A nonblocking socket made inside the network namespace `netns_fd` (the calling thread enters it
/// and comes back); 0 and `*socket_fd`, or the errno.
int lookout_socket_in_netns(int netns_fd, int family, int type, int *socket_fd);
/// pidfd_open(2): a descriptor that turns readable when the process exits; -1 on failure.
int lookout_pidfd_open(int pid);
/// unshare(CLONE_NEWNET): the calling thread (and what it starts from then on) gets a new,
/// empty network namespace. 0 or the errno.
int lookout_unshare_network(void);
/// setns(netns_fd, CLONE_NEWNET) for the calling thread; 0 or the errno.
int lookout_enter_network(int netns_fd);
#endif
