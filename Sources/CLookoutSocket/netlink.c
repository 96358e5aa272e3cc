#define _GNU_SOURCE
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include "CLookoutSocket.h"

int lookout_route_monitor_open(void) {
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0) return -1;
    struct sockaddr_nl address = { .nl_family = AF_NETLINK,
                                   .nl_groups = RTMGRP_LINK | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE };
    if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0) { close(fd); return -1; }
    return fd;
}

int lookout_route_monitor_drain(int fd) {
    char buffer[8192];
    int messages = 0;
    for (;;) {
        ssize_t n = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n > 0) { messages++; continue; }
        if (n < 0 && errno == EINTR) continue;
        // ENOBUFS: the kernel dropped notifications; the caller looks at the routes anyway.
        if (n < 0 && (errno == EAGAIN || errno == ENOBUFS)) return messages;
        return n == 0 ? messages : -1;
    }
}

static int interface_is_up(int index, char *name, size_t length) {
    char found[IF_NAMESIZE];
    if (if_indextoname((unsigned)index, found) == NULL) return 0;
    int probe = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (probe < 0) return 0;
    struct ifreq request;
    memset(&request, 0, sizeof request);
    strncpy(request.ifr_name, found, IF_NAMESIZE - 1);
    int up = ioctl(probe, SIOCGIFFLAGS, &request) == 0 && (request.ifr_flags & IFF_UP) && (request.ifr_flags & IFF_RUNNING);
    close(probe);
    if (up) { strncpy(name, found, length - 1); name[length - 1] = 0; }
    return up;
}

/* One RTM_GETROUTE dump for `family`; 1 when a unicast default route of the main table leaves
   through an interface that is up (its name in `name`), 0 when none, -1 on error. */
static int default_route(int family, char *name, size_t length) {
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0) return -1;
    struct { struct nlmsghdr header; struct rtmsg route; } request;
    memset(&request, 0, sizeof request);
    request.header.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
    request.header.nlmsg_type = RTM_GETROUTE;
    request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    request.header.nlmsg_seq = 1;
    request.route.rtm_family = (unsigned char)family;
    struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
    if (sendto(fd, &request, request.header.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) {
        close(fd);
        return -1;
    }
    char buffer[16384];
    int found = 0;
    for (;;) {
        ssize_t n = recv(fd, buffer, sizeof buffer, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) { close(fd); return found ? 1 : -1; }
        for (struct nlmsghdr *h = (struct nlmsghdr *)buffer; NLMSG_OK(h, (unsigned)n); h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_type == NLMSG_DONE) { close(fd); return found; }
            if (h->nlmsg_type == NLMSG_ERROR) { close(fd); return -1; }
            if (h->nlmsg_type != RTM_NEWROUTE || found) continue;
            struct rtmsg *route = NLMSG_DATA(h);
            if (route->rtm_dst_len != 0 || route->rtm_table != RT_TABLE_MAIN || route->rtm_type != RTN_UNICAST) continue;
            int length_left = (int)RTM_PAYLOAD(h);
            for (struct rtattr *a = RTM_RTA(route); RTA_OK(a, length_left); a = RTA_NEXT(a, length_left)) {
                if (a->rta_type == RTA_OIF && interface_is_up(*(int *)RTA_DATA(a), name, length)) { found = 1; break; }
            }
        }
    }
}

int lookout_default_route_interface(char *name, size_t length) {
    int v4 = default_route(AF_INET, name, length);
    if (v4 == 1) return 1;
    int v6 = default_route(AF_INET6, name, length);
    if (v6 == 1) return 1;
    return (v4 < 0 && v6 < 0) ? -1 : 0;
}

int lookout_interface_hardware_type(const char *name) {
    int probe = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (probe < 0) return -1;
    struct ifreq request;
    memset(&request, 0, sizeof request);
    strncpy(request.ifr_name, name, IF_NAMESIZE - 1);
    int type = ioctl(probe, SIOCGIFHWADDR, &request) == 0 ? request.ifr_hwaddr.sa_family : -1;
    close(probe);
    return type;
}

int lookout_interface_is_wireless(const char *name) {
    int probe = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (probe < 0) return 0;
    /* SIOCGIWNAME (wireless extensions, also answered for cfg80211 devices): struct iwreq
       starts with the interface name, like struct ifreq. */
    struct ifreq request;
    memset(&request, 0, sizeof request);
    strncpy(request.ifr_name, name, IF_NAMESIZE - 1);
    int wireless = ioctl(probe, 0x8B01, &request) == 0;
    close(probe);
    return wireless;
}
