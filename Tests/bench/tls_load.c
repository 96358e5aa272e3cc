/*
 * tls_load: an HTTPS load client for Lookout's benchmark (Tests/bench/tls_bench.py).
 *
 * wrk cannot tunnel through an HTTP proxy, so this does what the TLS rows need, directly
 * or through a proxy's CONNECT, one thread per connection:
 *   keepalive  each connection: (CONNECT,) TLS handshake, then GET PATH in a loop
 *   newconn    each request: connect, (CONNECT,) TLS handshake, GET with Connection: close
 *   bulk       each connection: one GET PATH, the whole body read and counted
 * Certificates are verified against --cafile for --sni (the host the URL names).
 * Prints one line: BENCHJSON {"requests":N,"bytes":B,"seconds":S,"p50_us":..,"p99_us":..,"errors":E}
 *
 * cc -O2 -Wall -o tls_load tls_load.c -lssl -lcrypto -lpthread
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum mode { KEEPALIVE, NEWCONN, BULK };

static enum mode mode = KEEPALIVE;
static const char *connect_host = "127.0.0.1"; /* where TCP goes: the proxy, or the origin */
static int connect_port;
static const char *tunnel_target;              /* host:port for CONNECT; NULL = direct */
static const char *sni = "localhost";
static const char *path = "/1k";
static const char *cafile;
static int conns = 64;
static double duration = 10;
static int resume;                             /* newconn: offer the last session again */
static SSL_CTX *ctx;
static double deadline;

struct worker {
    pthread_t thread;
    uint64_t requests, bytes, errors;
    uint32_t *latencies; /* microseconds, one per request */
    size_t count, capacity;
    SSL_SESSION *session;
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void record(struct worker *w, double seconds) {
    if (w->count == w->capacity) {
        w->capacity = w->capacity ? w->capacity * 2 : 4096;
        w->latencies = realloc(w->latencies, w->capacity * sizeof *w->latencies);
        if (!w->latencies) { perror("realloc"); exit(2); }
    }
    w->latencies[w->count++] = (uint32_t)(seconds * 1e6);
}

static int tcp_connect(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(connect_port)};
    inet_pton(AF_INET, connect_host, &addr.sin_addr);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) { close(fd); return -1; }
    return fd;
}

/* Sends CONNECT and reads the proxy's answer head; 0 when it is a 2xx. */
static int open_tunnel(int fd) {
    char request[512];
    int n = snprintf(request, sizeof request, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", tunnel_target, tunnel_target);
    if (send(fd, request, n, MSG_NOSIGNAL) != n) return -1;
    char head[4096];
    size_t have = 0;
    while (have < sizeof head - 1) { /* byte by byte: nothing after the head may be consumed */
        ssize_t r = recv(fd, head + have, 1, 0);
        if (r <= 0) return -1;
        have++;
        if (have >= 4 && memcmp(head + have - 4, "\r\n\r\n", 4) == 0) break;
    }
    head[have] = 0;
    return strncmp(head, "HTTP/1.1 2", 10) == 0 || strncmp(head, "HTTP/1.0 2", 10) == 0 ? 0 : -1;
}

static SSL *tls_open(struct worker *w, int *fd_out) {
    int fd = tcp_connect();
    if (fd < 0) return NULL;
    if (tunnel_target && open_tunnel(fd) != 0) { close(fd); return NULL; }
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (inet_addr(sni) == INADDR_NONE) {
        SSL_set_tlsext_host_name(ssl, sni);
        SSL_set1_host(ssl, sni);
    } else {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), sni); /* an IP literal: check IP SANs */
    }
    if (resume && w->session) SSL_set_session(ssl, w->session);
    if (SSL_connect(ssl) != 1) {
        SSL_free(ssl);
        close(fd);
        return NULL;
    }
    if (resume) {
        if (w->session) SSL_SESSION_free(w->session);
        w->session = SSL_get1_session(ssl);
    }
    *fd_out = fd;
    return ssl;
}

static void tls_close(SSL *ssl, int fd) {
    SSL_free(ssl);
    close(fd);
}

/* Sends one GET and reads the response (Content-Length framing); body bytes, or -1. */
static long long exchange(SSL *ssl, int keep_alive) {
    char request[512];
    int n = snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", path, tunnel_target ? tunnel_target : sni,
                     keep_alive ? "" : "Connection: close\r\n");
    if (SSL_write(ssl, request, n) != n) return -1;
    static __thread char buffer[256 * 1024];
    size_t have = 0;
    char *end = NULL;
    while (!end) {
        int r = SSL_read(ssl, buffer + have, (int)(sizeof buffer - 1 - have));
        if (r <= 0) return -1;
        have += r;
        buffer[have] = 0;
        end = strstr(buffer, "\r\n\r\n");
        if (!end && have >= sizeof buffer - 1) return -1;
    }
    if (strncmp(buffer, "HTTP/1.1 200", 12) != 0) return -1;
    const char *length_field = strcasestr(buffer, "\r\ncontent-length:");
    if (!length_field || length_field > end) return -1;
    long long length = atoll(length_field + 17);
    long long body = (long long)have - (end + 4 - buffer);
    while (body < length) {
        int r = SSL_read(ssl, buffer, (int)sizeof buffer);
        if (r <= 0) return -1;
        body += r;
    }
    return length;
}

static void *run_worker(void *arg) {
    struct worker *w = arg;
    int fd = -1;
    SSL *ssl = NULL;
    while (now() < deadline) {
        double started = now();
        if (!ssl) {
            ssl = tls_open(w, &fd);
            if (!ssl) { w->errors++; usleep(1000); continue; }
        }
        long long got = exchange(ssl, mode == KEEPALIVE);
        if (got < 0) {
            w->errors++;
            tls_close(ssl, fd);
            ssl = NULL;
            continue;
        }
        w->requests++;
        w->bytes += got;
        record(w, now() - started);
        if (mode != KEEPALIVE) {
            tls_close(ssl, fd);
            ssl = NULL;
        }
        if (mode == BULK) break;
    }
    if (ssl) tls_close(ssl, fd);
    return NULL;
}

static int compare(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void usage(void) {
    fprintf(stderr, "usage: tls_load --connect HOST:PORT [--tunnel HOST:PORT] --sni NAME --cafile FILE\n"
                    "                [--mode keepalive|newconn|bulk] [--path P] [--conns N] [--duration S] [--resume]\n");
    exit(2);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--resume")) { resume = 1; continue; }
        if (!v) usage();
        i++;
        if (!strcmp(a, "--connect")) {
            char *colon = strrchr(v, ':');
            if (!colon) usage();
            connect_host = strndup(v, colon - v);
            connect_port = atoi(colon + 1);
        } else if (!strcmp(a, "--tunnel")) tunnel_target = v;
        else if (!strcmp(a, "--sni")) sni = v;
        else if (!strcmp(a, "--cafile")) cafile = v;
        else if (!strcmp(a, "--path")) path = v;
        else if (!strcmp(a, "--conns")) conns = atoi(v);
        else if (!strcmp(a, "--duration")) duration = atof(v);
        else if (!strcmp(a, "--mode")) {
            if (!strcmp(v, "keepalive")) mode = KEEPALIVE;
            else if (!strcmp(v, "newconn")) mode = NEWCONN;
            else if (!strcmp(v, "bulk")) mode = BULK;
            else usage();
        } else usage();
    }
    if (!connect_port || !cafile || conns < 1) usage();
    ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (SSL_CTX_load_verify_locations(ctx, cafile, NULL) != 1) {
        ERR_print_errors_fp(stderr);
        return 2;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (!resume) SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);

    struct worker *workers = calloc(conns, sizeof *workers);
    double started = now();
    deadline = started + duration;
    if (mode == BULK) deadline = started + 3600; /* one download each, however long it takes */
    for (int i = 0; i < conns; i++) pthread_create(&workers[i].thread, NULL, run_worker, &workers[i]);
    uint64_t requests = 0, bytes = 0, errors = 0;
    size_t total = 0;
    for (int i = 0; i < conns; i++) {
        pthread_join(workers[i].thread, NULL);
        requests += workers[i].requests;
        bytes += workers[i].bytes;
        errors += workers[i].errors;
        total += workers[i].count;
    }
    double seconds = now() - started;
    uint32_t *all = malloc((total ? total : 1) * sizeof *all);
    size_t at = 0;
    for (int i = 0; i < conns; i++) {
        memcpy(all + at, workers[i].latencies, workers[i].count * sizeof *all);
        at += workers[i].count;
    }
    qsort(all, total, sizeof *all, compare);
    uint32_t p50 = total ? all[total / 2] : 0, p99 = total ? all[(size_t)(total * 0.99)] : 0;
    printf("BENCHJSON {\"requests\":%llu,\"bytes\":%llu,\"seconds\":%.3f,\"p50_us\":%u,\"p99_us\":%u,\"errors\":%llu}\n",
           (unsigned long long)requests, (unsigned long long)bytes, seconds, p50, p99, (unsigned long long)errors);
    return requests ? 0 : 1;
}
