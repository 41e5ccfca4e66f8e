#ifdef __linux__
/* accept4 */
#define _GNU_SOURCE
#include "pp_io.h"
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <stdint.h>
#include <unistd.h>
#include <malloc.h>
#include <stdlib.h>
#include <signal.h>
#include <pthread.h>
#include <string.h>
#include <errno.h>
#include <sys/socket.h>

int pp_poll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int pp_accept(int listener) { return accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC); }

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

/* The pipe the handler writes to; -1 when no relay runs. */
static volatile sig_atomic_t relay_fd = -1;
/* The actions found when the relay started, put back when it stops. */
static struct sigaction previous_int, previous_term;

static void relay_signal(int signo) {
    int saved = errno;
    unsigned char number = (unsigned char)signo;
    int fd = relay_fd;
    /* A full pipe drops the byte: the reader has a signal of that kind to read already. */
    if (fd >= 0) (void)!write(fd, &number, 1);
    errno = saved;
}

int pp_signal_relay_start(int fd) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = relay_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    relay_fd = fd;
    if (sigaction(SIGINT, &action, &previous_int) != 0) {
        relay_fd = -1;
        return -1;
    }
    if (sigaction(SIGTERM, &action, &previous_term) != 0) {
        int saved = errno;
        sigaction(SIGINT, &previous_int, NULL);
        relay_fd = -1;
        errno = saved;
        return -1;
    }
    /* A process may start with the signals blocked (a parent's mask is inherited: Foundation's
     * Process started from a Dispatch worker thread passes on one that blocks nearly every
     * signal), and a signal blocked in every thread stays pending for ever. Unblocked here,
     * this thread at least takes them; one already pending arrives now. */
    sigset_t both;
    sigemptyset(&both);
    sigaddset(&both, SIGINT);
    sigaddset(&both, SIGTERM);
    pthread_sigmask(SIG_UNBLOCK, &both, NULL);
    return 0;
}

void pp_signal_relay_stop(void) {
    sigaction(SIGINT, &previous_int, NULL);
    sigaction(SIGTERM, &previous_term, NULL);
    relay_fd = -1;
}

#endif
