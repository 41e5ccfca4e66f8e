#ifndef PINPROXY_PP_IO_H
#define PINPROXY_PP_IO_H

#ifdef __cplusplus
extern "C" {
#endif

/* Socket readiness for the proxy's event loops. <sys/epoll.h> is not part of
 * Swift's Glibc module; these wrappers keep its packed struct and flag macros
 * out of Swift. */
typedef struct {
    int fd;
    int readable;  /* EPOLLIN */
    int writable;  /* EPOLLOUT */
    int broken;    /* EPOLLERR or EPOLLHUP: the next read or write reports why */
} pp_ready_event;

/* epoll_create1(EPOLL_CLOEXEC). */
int pp_poll_create(void);
/* Watches fd for reading and/or writing (level-triggered); op: 0 add, 1 modify, 2 remove. */
int pp_poll_control(int pollfd, int op, int fd, int read, int write);
/* epoll_wait waiting up to timeout_ms for the first event. */
int pp_poll_wait(int pollfd, pp_ready_event *out, int max, int timeout_ms);

/* A non-blocking eventfd that wakes a loop blocked in pp_poll_wait. */
int pp_wakeup_create(void);
/* Makes the eventfd readable. */
void pp_wakeup_signal(int fd);
/* Reads the eventfd back to not readable. */
void pp_wakeup_reset(int fd);

/* malloc_trim(0): returns whole free pages of the heap to the system. */
int pp_release_free_memory(void);

#ifdef __cplusplus
}
#endif
#endif
