// The floor for "one more TCP hop" (part of Tests/bench/run.sh; not a proxy).
//
// Listens on 127.0.0.1:FROM and relays each connection byte for byte to 127.0.0.1:TO: no HTTP,
// no CONNECT, no logging, no timeouts. One thread per core, each with its own SO_REUSEPORT
// listener and edge-triggered epoll set; nonblocking sockets; every chunk costs exactly one
// read and one write. What a proxy reaches on a row is bounded by what this reaches there:
// the difference between this and direct is the kernel's cost of the second connection.
//
// With "splice" as the fourth argument, bytes move socket -> pipe -> socket with splice(2) and
// never enter user space (the zero-copy variant of the same relay; measured for CONNECT bulk).
//
// With "connect=HOST:PORT", TO_PORT is a proxy: each connection first sends it CONNECT HOST:PORT
// and waits for its 2xx head, then relays. That puts a client that cannot speak to a proxy
// (h2load, h2spec) in front of Lookout's interception.
//
// usage: floor_relay FROM_PORT TO_PORT [THREADS] [splice] [connect=HOST:PORT]
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUFFER (256 * 1024)

struct side {
    int fd;
    struct side *peer;
    char *pending;   // bytes read from `peer` that `fd` has not taken yet
    size_t offset, length;
    int pipe_out, pipe_in;  // splice mode: the pipe holding them instead ([0] and [1])
    int eof;         // `fd` sent FIN
};

static int from_port, to_port, use_splice;
static const char *connect_target;

// Sends CONNECT on the still-blocking socket and reads the answer head byte by byte, so not a
// byte of the tunnel is consumed; 0 when the proxy answered 2xx.
static int open_tunnel(int u) {
    char request[512], head[4096];
    int n = snprintf(request, sizeof request, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", connect_target, connect_target);
    if (write(u, request, (size_t)n) != n) return -1;
    size_t got = 0;
    while (got < sizeof head - 1) {
        if (read(u, head + got, 1) != 1) return -1;
        got++;
        if (got >= 4 && memcmp(head + got - 4, "\r\n\r\n", 4) == 0) break;
    }
    head[got] = 0;
    return strncmp(head, "HTTP/1.1 2", 10) == 0 ? 0 : -1;
}

// Closed pairs are freed after the batch: later events of the same batch may name them.
static __thread struct side *closed[512];
static __thread int closed_count;

static void close_pair(struct side *s) {
    struct side *p = s->peer, *first = s < p ? s : p;
    if (first->fd < 0) return;
    close(s->fd);
    close(p->fd);
    s->fd = p->fd = -1;
    free(s->pending);
    free(p->pending);
    if (use_splice) {
        close(s->pipe_out); close(s->pipe_in);
        close(p->pipe_out); close(p->pipe_in);
    }
    if (closed_count < 512) closed[closed_count++] = first;
}

// Writes what `to` owes; returns 0 when it must wait for room, -1 on error.
static int flush(struct side *to) {
    while (to->offset < to->length) {
        ssize_t n = use_splice
            ? splice(to->pipe_out, NULL, to->fd, NULL, to->length - to->offset, SPLICE_F_MOVE | SPLICE_F_NONBLOCK)
            : send(to->fd, to->pending + to->offset, to->length - to->offset, MSG_NOSIGNAL);
        if (n > 0) { to->offset += (size_t)n; continue; }
        if (n < 0 && errno == EAGAIN) return 0;
        return -1;
    }
    to->offset = to->length = 0;
    if (to->peer->eof) shutdown(to->fd, SHUT_WR);
    return 1;
}

// Moves bytes from `from` to its peer until one side would block; -1 when the pair is done.
static int relay(struct side *from) {
    struct side *to = from->peer;
    for (;;) {
        int f = flush(to);
        if (f < 0) return -1;
        if (f == 0 || from->eof) break;
        ssize_t n = use_splice
            ? splice(from->fd, NULL, to->pipe_in, NULL, BUFFER, SPLICE_F_MOVE | SPLICE_F_NONBLOCK)
            : read(from->fd, to->pending, BUFFER);
        if (n > 0) { to->length = (size_t)n; continue; }
        if (n == 0) { from->eof = 1; shutdown(to->fd, SHUT_WR); break; }
        if (errno == EAGAIN) break;
        return -1;
    }
    return (from->eof && to->eof && to->length == 0 && from->peer->length == 0) ? -1 : 0;
}

static int listener(void) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)from_port) };
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (bind(fd, (void *)&a, sizeof a) != 0 || listen(fd, 4096) != 0) { perror("listen"); exit(1); }
    return fd;
}

static void *loop(void *unused) {
    (void)unused;
    int ep = epoll_create1(0), lfd = listener(), one = 1;
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL }, events[256];
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    struct sockaddr_in origin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)to_port) };
    inet_pton(AF_INET, "127.0.0.1", &origin.sin_addr);
    for (;;) {
        int n = epoll_wait(ep, events, 256, -1);
        for (int i = 0; i < n; i++) {
            struct side *s = events[i].data.ptr;
            if (s == NULL) {
                int c;
                while ((c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    // A blocking connect keeps this simple; on loopback it returns at once.
                    int u = socket(AF_INET, SOCK_STREAM, 0);
                    if (connect(u, (void *)&origin, sizeof origin) != 0) { close(c); close(u); continue; }
                    if (connect_target && open_tunnel(u) != 0) { close(c); close(u); continue; }
                    fcntl(u, F_SETFL, O_NONBLOCK);
                    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct side *pair = calloc(2, sizeof *pair);
                    pair[0] = (struct side){ .fd = c, .peer = &pair[1], .pending = malloc(BUFFER) };
                    pair[1] = (struct side){ .fd = u, .peer = &pair[0], .pending = malloc(BUFFER) };
                    for (int k = 0; use_splice && k < 2; k++) {
                        int ends[2];
                        if (pipe2(ends, O_NONBLOCK) != 0) { perror("pipe2"); exit(1); }
                        fcntl(ends[1], F_SETPIPE_SZ, BUFFER);
                        pair[k].pipe_out = ends[0];
                        pair[k].pipe_in = ends[1];
                    }
                    for (int k = 0; k < 2; k++) {
                        struct epoll_event e = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = &pair[k] };
                        epoll_ctl(ep, EPOLL_CTL_ADD, pair[k].fd, &e);
                    }
                }
                continue;
            }
            if (s->fd < 0) continue;
            // Readable: move from s to its peer. Writable: s owes bytes read from its peer.
            if (relay(s) < 0 || relay(s->peer) < 0) close_pair(s);
        }
        for (int i = 0; i < closed_count; i++) free(closed[i]);
        closed_count = 0;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: floor_relay FROM_PORT TO_PORT [THREADS] [splice] [connect=HOST:PORT]\n"); return 2; }
    from_port = atoi(argv[1]);
    to_port = atoi(argv[2]);
    int threads = argc > 3 && atoi(argv[3]) > 0 ? atoi(argv[3]) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 4; i < argc; i++) {
        if (strcmp(argv[i], "splice") == 0) use_splice = 1;
        if (strncmp(argv[i], "connect=", 8) == 0) connect_target = argv[i] + 8;
    }
    pthread_t t;
    for (int i = 1; i < threads; i++) pthread_create(&t, NULL, loop, NULL);
    loop(NULL);
}
