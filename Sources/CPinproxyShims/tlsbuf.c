#include "pp_tlsbuf.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <errno.h>
#include <unistd.h>

/* Bytes in data[start..<end]; the space after end is free. */
typedef struct {
    unsigned char *data;
    size_t start;     /* first byte not yet consumed (sent, or read by OpenSSL) */
    size_t end;       /* one past the last byte added */
    size_t capacity;
    int eof;          /* input: the socket reached end of stream */
    int fd;           /* input: the socket OpenSSL reads itself, or -1 */
    int drained;      /* input: a short read found the socket empty */
    int error;        /* input: errno of a failed read(2), or 0 */
} bytebuf;

/* Makes room for count more bytes after end: moves what is held to the
 * front, then grows. Returns 0 when memory runs out. */
static int reserve(bytebuf *o, size_t count) {
    if (o->start == o->end) o->start = o->end = 0;
    if (o->end + count <= o->capacity) return 1;
    size_t used = o->end - o->start;
    if (o->start > 0) {
        memmove(o->data, o->data + o->start, used);
        o->start = 0;
        o->end = used;
    }
    if (used + count <= o->capacity) return 1;
    size_t capacity = o->capacity ? o->capacity : 4096;
    while (capacity < used + count) capacity *= 2;
    unsigned char *grown = realloc(o->data, capacity);
    if (grown == NULL) return 0;
    o->data = grown;
    o->capacity = capacity;
    return 1;
}

static void release(bytebuf *o) {
    if (o == NULL || o->end > o->start) return;
    free(o->data);
    o->data = NULL;
    o->start = o->end = o->capacity = 0;
}

/* OpenSSL writing records (output), or bytes read before TLS started (input).
 * Output is only ever held here: the owner sends it, a turn's records
 * together. Sending each large record from OpenSSL's buffer as it was
 * sealed saved a copy per byte but cost a system call per 16 KiB record,
 * and measured dearer on the real CPU (docs/proxy.md, "Bulk over HTTP/2"). */
static int bytebuf_write(BIO *bio, const char *in, int length) {
    bytebuf *o = BIO_get_data(bio);
    BIO_clear_retry_flags(bio);
    if (o == NULL || in == NULL || length <= 0) return 0;
    if (!reserve(o, (size_t)length)) return -1;
    memcpy(o->data + o->end, in, (size_t)length);
    o->end += (size_t)length;
    return length;
}

static long bytebuf_ctrl(BIO *bio, int command, long number, void *pointer) {
    (void)number;
    (void)pointer;
    bytebuf *o = BIO_get_data(bio);
    switch (command) {
    case BIO_CTRL_FLUSH:
        return 1;
    case BIO_CTRL_PENDING:
    case BIO_CTRL_WPENDING:
        return o ? (long)(o->end - o->start) : 0;
    case BIO_CTRL_EOF:
        return o ? (o->eof && o->end == o->start) : 1;
    default:
        return 0;
    }
}

static int bytebuf_create(BIO *bio) {
    bytebuf *o = calloc(1, sizeof *o);
    if (o == NULL) return 0;
    o->fd = -1;
    BIO_set_data(bio, o);
    BIO_set_init(bio, 1);
    return 1;
}

static int bytebuf_destroy(BIO *bio) {
    bytebuf *o = BIO_get_data(bio);
    if (o != NULL) {
        free(o->data);
        free(o);
    }
    BIO_set_data(bio, NULL);
    BIO_set_init(bio, 0);
    return 1;
}

static BIO_METHOD *outbuf_method;
static BIO_METHOD *inbuf_method;
static pthread_once_t methods_once = PTHREAD_ONCE_INIT;

static int inbuf_read(BIO *bio, char *out, int length);

static BIO_METHOD *make_method(const char *name, int (*read)(BIO *, char *, int)) {
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, name);
    if (m == NULL) return NULL;
    if (read != NULL) BIO_meth_set_read(m, read);
    BIO_meth_set_write(m, bytebuf_write);
    BIO_meth_set_ctrl(m, bytebuf_ctrl);
    BIO_meth_set_create(m, bytebuf_create);
    BIO_meth_set_destroy(m, bytebuf_destroy);
    return m;
}

static void make_methods(void) {
    outbuf_method = make_method("pinproxy output buffer", NULL);
    inbuf_method = make_method("pinproxy input buffer", inbuf_read);
}

BIO *pp_outbuf_new(void) {
    pthread_once(&methods_once, make_methods);
    return outbuf_method ? BIO_new(outbuf_method) : NULL;
}

size_t pp_tlsbuf_pending(BIO *bio) {
    bytebuf *o = BIO_get_data(bio);
    return o ? o->end - o->start : 0;
}

void pp_tlsbuf_release(BIO *bio) { release(BIO_get_data(bio)); }

const unsigned char *pp_outbuf_peek(BIO *bio, size_t *count) {
    bytebuf *o = BIO_get_data(bio);
    if (o == NULL || o->end == o->start) {
        *count = 0;
        return NULL;
    }
    *count = o->end - o->start;
    return o->data + o->start;
}

void pp_tlsbuf_consume(BIO *bio, size_t count) {
    bytebuf *o = BIO_get_data(bio);
    if (o == NULL) return;
    size_t held = o->end - o->start;
    o->start += count < held ? count : held;
    if (o->start == o->end) o->start = o->end = 0;
}


/* Input. */

/* Bytes held come first (fed before the socket was attached, or by a test).
 * Then, with a socket attached, OpenSSL's own record buffer is handed to
 * read(2): the record lands where it is decrypted, with no copy in between.
 * A read shorter than asked means the socket is empty for now; the next
 * reads report "retry" without a system call until pp_inbuf_arm says that
 * the socket is readable again. */
static int inbuf_read(BIO *bio, char *out, int length) {
    bytebuf *o = BIO_get_data(bio);
    BIO_clear_retry_flags(bio);
    if (o == NULL || out == NULL || length <= 0) return 0;
    size_t held = o->end - o->start;
    if (held == 0) {
        if (o->eof) return 0;
        if (o->fd < 0 || o->drained || o->error) {
            BIO_set_retry_read(bio);
            return -1;
        }
        for (;;) {
            ssize_t n = read(o->fd, out, (size_t)length);
            if (n > 0) {
                if (n < length) o->drained = 1;
                return (int)n;
            }
            if (n == 0) {
                o->eof = 1;
                return 0;
            }
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                o->drained = 1;
                BIO_set_retry_read(bio);
                return -1;
            }
            o->error = errno;
            return -1;
        }
    }
    size_t n = held < (size_t)length ? held : (size_t)length;
    memcpy(out, o->data + o->start, n);
    o->start += n;
    if (o->start == o->end) o->start = o->end = 0;
    return (int)n;
}

BIO *pp_inbuf_new(void) {
    pthread_once(&methods_once, make_methods);
    return inbuf_method ? BIO_new(inbuf_method) : NULL;
}

unsigned char *pp_inbuf_reserve(BIO *bio, size_t max, size_t *room) {
    bytebuf *o = BIO_get_data(bio);
    *room = 0;
    if (o == NULL || max == 0) return NULL;
    /* The buffer grows to max once; a partial record left over is moved to
     * the front rather than growing it further, so a busy connection keeps
     * one allocation of max bytes (below malloc's mmap threshold). */
    size_t held = o->end - o->start;
    if (!reserve(o, o->capacity >= max ? (held < max ? max - held : 1) : max)) return NULL;
    size_t free_space = o->capacity - o->end;
    *room = free_space > max ? max : free_space;
    return o->data + o->end;
}

void pp_inbuf_commit(BIO *bio, size_t count) {
    bytebuf *o = BIO_get_data(bio);
    if (o == NULL || count > o->capacity - o->end) return;
    o->end += count;
}

int pp_inbuf_append(BIO *bio, const void *bytes, size_t count) {
    return count > 0 && count <= INT_MAX ? bytebuf_write(bio, bytes, (int)count) : 0;
}

const unsigned char *pp_inbuf_tail(BIO *bio, size_t count) {
    bytebuf *o = BIO_get_data(bio);
    if (o == NULL || count > o->end - o->start) return NULL;
    return o->data + o->end - count;
}

void pp_inbuf_set_eof(BIO *bio) {
    bytebuf *o = BIO_get_data(bio);
    if (o) o->eof = 1;
}

void pp_inbuf_attach(BIO *bio, int fd, int drained) {
    bytebuf *o = BIO_get_data(bio);
    if (o == NULL) return;
    o->fd = fd;
    o->drained = drained;
}

void pp_inbuf_arm(BIO *bio) {
    bytebuf *o = BIO_get_data(bio);
    if (o) o->drained = 0;
}

int pp_inbuf_state(BIO *bio, int *error) {
    bytebuf *o = BIO_get_data(bio);
    *error = o ? o->error : 0;
    if (o == NULL || o->fd < 0) return PP_INBUF_DETACHED;
    if (o->eof) return PP_INBUF_ENDED;
    return o->drained ? PP_INBUF_EMPTY : PP_INBUF_READABLE;
}
