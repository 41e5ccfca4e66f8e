#include "pp_io.h"
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <stdint.h>
#include <unistd.h>
#include <malloc.h>

int pp_poll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int pp_poll_control(int pollfd, int op, int fd, int read, int write) {
    struct epoll_event event = {0};
    event.events = (read ? EPOLLIN : 0) | (write ? EPOLLOUT : 0);
    event.data.fd = fd;
    int ops[3] = {EPOLL_CTL_ADD, EPOLL_CTL_MOD, EPOLL_CTL_DEL};
    if (op < 0 || op > 2) return -1;
    return epoll_ctl(pollfd, ops[op], fd, &event);
}

int pp_poll_wait(int pollfd, pp_ready_event *out, int max, int timeout_ms) {
    struct epoll_event events[128];
    if (max > 128) max = 128;
    int n = epoll_wait(pollfd, events, max, timeout_ms);
    for (int i = 0; i < n; i++) {
        out[i].fd = events[i].data.fd;
        out[i].readable = (events[i].events & EPOLLIN) != 0;
        out[i].writable = (events[i].events & EPOLLOUT) != 0;
        out[i].broken = (events[i].events & (EPOLLERR | EPOLLHUP)) != 0;
    }
    return n;
}

int pp_wakeup_create(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

void pp_wakeup_signal(int fd) {
    uint64_t one = 1;
    (void)!write(fd, &one, sizeof one);
}

void pp_wakeup_reset(int fd) {
    uint64_t value;
    (void)!read(fd, &value, sizeof value);
}

int pp_release_free_memory(void) { return malloc_trim(0); }
