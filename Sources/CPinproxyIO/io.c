#ifdef __linux__
#include "pp_io.h"
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <stdint.h>
#include <unistd.h>
#include <malloc.h>
#include <stdlib.h>

int pp_poll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int pp_poll_control(int pollfd, pp_poll_op op, int fd, unsigned events) {
    struct epoll_event event = {0};
    event.events = ((events & PP_EVENT_READABLE) ? EPOLLIN : 0) | ((events & PP_EVENT_WRITABLE) ? EPOLLOUT : 0);
    event.data.fd = fd;
    switch (op) {
    case PP_POLL_ADD: return epoll_ctl(pollfd, EPOLL_CTL_ADD, fd, &event);
    case PP_POLL_MODIFY: return epoll_ctl(pollfd, EPOLL_CTL_MOD, fd, &event);
    case PP_POLL_REMOVE: return epoll_ctl(pollfd, EPOLL_CTL_DEL, fd, &event);
    }
    return -1;
}

int pp_poll_wait(int pollfd, pp_ready_event *out, int max, int timeout_ms) {
    struct epoll_event events[128];
    if (max > 128) max = 128;
    int n = epoll_wait(pollfd, events, max, timeout_ms);
    for (int i = 0; i < n; i++) {
        unsigned e = events[i].events;
        out[i].fd = events[i].data.fd;
        out[i].events = ((e & EPOLLIN) ? PP_EVENT_READABLE : 0) | ((e & EPOLLOUT) ? PP_EVENT_WRITABLE : 0)
            | ((e & (EPOLLERR | EPOLLHUP)) ? PP_EVENT_BROKEN : 0);
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

int pp_timer_create(void) { return timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK); }

int pp_timer_arm(int fd, uint64_t deadline_ns) {
    struct itimerspec spec = {0};
    if (deadline_ns == 0) deadline_ns = 1; /* an all-zero value would disarm */
    spec.it_value.tv_sec = (time_t)(deadline_ns / 1000000000u);
    spec.it_value.tv_nsec = (long)(deadline_ns % 1000000000u);
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, NULL);
}

int pp_timer_disarm(int fd) {
    struct itimerspec spec = {0};
    return timerfd_settime(fd, 0, &spec, NULL);
}

uint64_t pp_clock_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

int pp_release_free_memory(void) { return malloc_trim(0); }

int pp_limit_allocator_arenas(int count) {
    if (getenv("MALLOC_ARENA_MAX") != NULL) return 0;
    return mallopt(M_ARENA_MAX, count);
}
#endif
