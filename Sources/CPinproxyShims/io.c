#include "pp_io.h"
#include <sys/epoll.h>

int pp_poll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int pp_poll_control(int pollfd, int op, int fd, int read, int write) {
    struct epoll_event event = {0};
    event.events = (read ? EPOLLIN : 0) | (write ? EPOLLOUT : 0);
    event.data.fd = fd;
    int ops[3] = {EPOLL_CTL_ADD, EPOLL_CTL_MOD, EPOLL_CTL_DEL};
    if (op < 0 || op > 2) return -1;
    return epoll_ctl(pollfd, ops[op], fd, &event);
}

int pp_poll_ready(int pollfd, pp_ready_event *out, int max) {
    struct epoll_event events[128];
    if (max > 128) max = 128;
    int n = epoll_wait(pollfd, events, max, 0);
    for (int i = 0; i < n; i++) {
        out[i].fd = events[i].data.fd;
        out[i].readable = (events[i].events & EPOLLIN) != 0;
        out[i].writable = (events[i].events & EPOLLOUT) != 0;
        out[i].broken = (events[i].events & (EPOLLERR | EPOLLHUP)) != 0;
    }
    return n;
}
