#ifndef PINPROXY_PP_IO_H
#define PINPROXY_PP_IO_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Socket readiness for the proxy's event loops. <sys/epoll.h> is not part of
 * Swift's Glibc module; these wrappers keep its packed struct and flag macros
 * out of Swift, which speaks in the PP_EVENT_* bits (its IOEvents). */

/* Readiness bits, asked for and reported. */
#define PP_EVENT_READABLE 1u /* EPOLLIN */
#define PP_EVENT_WRITABLE 2u /* EPOLLOUT */
#define PP_EVENT_BROKEN 4u   /* EPOLLERR or EPOLLHUP (reported only): the next read or write reports why */

typedef enum { PP_POLL_ADD, PP_POLL_MODIFY, PP_POLL_REMOVE } pp_poll_op;

typedef struct {
    int fd;
    unsigned events; /* PP_EVENT_* bits */
} pp_ready_event;

/* epoll_create1(EPOLL_CLOEXEC). */
int pp_poll_create(void);
/* Adds, changes or removes fd's watch for the PP_EVENT_* bits in events (level-triggered). */
int pp_poll_control(int pollfd, pp_poll_op op, int fd, unsigned events);
/* The next connection of a listening socket, non-blocking and close-on-exec
   from the start (accept4: no window in which a child process could inherit
   it, and no fcntl calls after); -1 with errno as accept sets it. */
int pp_accept(int listener);
/* epoll_wait waiting up to timeout_ms for the first event. */
int pp_poll_wait(int pollfd, pp_ready_event *out, int max, int timeout_ms);

/* A non-blocking eventfd that wakes a loop blocked in pp_poll_wait. */
int pp_wakeup_create(void);
/* Makes the eventfd readable. */
void pp_wakeup_signal(int fd);
/* Reads the eventfd back to not readable. */
void pp_wakeup_reset(int fd);

/* A non-blocking timerfd on CLOCK_MONOTONIC, for a loop's timers. */
int pp_timer_create(void);
/* Arms the timerfd to become readable at deadline_ns on CLOCK_MONOTONIC (absolute; replaces any earlier arming). */
int pp_timer_arm(int fd, uint64_t deadline_ns);
/* Disarms the timerfd. */
int pp_timer_disarm(int fd);
/* Now on CLOCK_MONOTONIC, in nanoseconds. */
uint64_t pp_clock_ns(void);

/* malloc_trim(0): returns whole free pages of the heap to the system. */
int pp_release_free_memory(void);

/* Limits glibc's malloc arenas to `count` (mallopt M_ARENA_MAX), unless
   MALLOC_ARENA_MAX is set in the environment, which then decides. Returns 1
   when the limit was set. */
int pp_limit_allocator_arenas(int count);

/* SIGINT and SIGTERM relayed through a pipe: from pp_signal_relay_start on, a
 * handler installed with sigaction (in every thread, at once) writes the number
 * of each signal as one byte to fd, which the caller reads on a queue of its
 * own. Nothing else runs in the handler. The calling thread unblocks both signals,
 * which a parent may have left blocked. Returns -1 with errno set when a handler could
 * not be installed (then none is). */
int pp_signal_relay_start(int fd);
/* Back to the actions found at start; the pipe is no longer written. Not
 * for two relays at once: start saves what stop puts back. */
void pp_signal_relay_stop(void);

#ifdef __cplusplus
}
#endif
#endif
