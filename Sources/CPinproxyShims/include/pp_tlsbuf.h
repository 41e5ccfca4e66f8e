#ifndef PINPROXY_PP_TLSBUF_H
#define PINPROXY_PP_TLSBUF_H
/* Buffers between OpenSSL and a non-blocking socket.
 *
 * The output BIO collects the records OpenSSL writes, so that everything a
 * connection produces in one turn of its event loop leaves in one send(2):
 * a socket BIO would make one system call per record, and on loopback each
 * of those also delivers to (and wakes) the peer. */
#include <openssl/bio.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes held: input not yet read by OpenSSL, or output not yet sent. */
size_t pp_tlsbuf_pending(BIO *bio);
/* Frees a buffer's memory if it holds nothing (an idle connection). */
void pp_tlsbuf_release(BIO *bio);

/* A new input BIO: the owner reads the socket straight into it, and OpenSSL
 * reads records from it. Empty, it asks OpenSSL to retry, or reports end of
 * stream once pp_inbuf_set_eof was called. */
BIO *pp_inbuf_new(void);
/* read(2) from fd straight into the buffer, at most max bytes (*asked: how
 * many were asked for). Returns read's result (errno set on -1). */
long pp_inbuf_read_from(BIO *bio, int fd, size_t max, size_t *asked);
/* Appends bytes that were read before TLS started. */
int pp_inbuf_append(BIO *bio, const void *bytes, size_t count);
/* The last count bytes appended (count at most what the buffer holds). */
const unsigned char *pp_inbuf_tail(BIO *bio, size_t count);
/* The socket reached end of stream: an empty buffer now reads as EOF. */
void pp_inbuf_set_eof(BIO *bio);

/* A new output BIO (one per connection; the SSL owns it after SSL_set_bio). */
BIO *pp_outbuf_new(void);
/* Sends held bytes to fd until all are sent or the socket is full, and drops
 * what was sent. Returns the bytes still held, or -errno on a socket error
 * other than EAGAIN/EWOULDBLOCK. */
long pp_outbuf_send(BIO *bio, int fd);

#ifdef __cplusplus
}
#endif
#endif
