#ifndef PINPROXY_PP_TLSBUF_H
#define PINPROXY_PP_TLSBUF_H
/* Buffers between OpenSSL and whatever carries its bytes (a socket, a test).
 *
 * The input BIO lends its free space, so the owner reads the network
 * straight into it (pp_inbuf_reserve, then pp_inbuf_commit); once a socket
 * is attached (pp_inbuf_attach), OpenSSL's record reads go to read(2) on it
 * directly, so a record lands where it is decrypted. The output BIO
 * lends what it holds (pp_outbuf_peek, then pp_tlsbuf_consume), so the owner
 * sends straight from it. The output collects every record OpenSSL writes,
 * so that what a connection produces in one turn of its event loop can leave
 * in one send(2): a socket BIO would make one system call per record, and on
 * loopback each of those also delivers to (and wakes) the peer. */
#include <openssl/bio.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes held: input not yet read by OpenSSL, or output not yet sent. */
size_t pp_tlsbuf_pending(BIO *bio);
/* Frees a buffer's memory if it holds nothing (an idle connection). */
void pp_tlsbuf_release(BIO *bio);

/* Drops count held bytes from the front (consumed: sent, for output). */
void pp_tlsbuf_consume(BIO *bio, size_t count);

/* A new input BIO: the owner puts network bytes into it, and OpenSSL reads
 * records from it. Empty, it asks OpenSSL to retry, or reports end of stream
 * once pp_inbuf_set_eof was called. */
BIO *pp_inbuf_new(void);
/* Free space after the held bytes, at most max (*room: how much; 0 and NULL
 * when memory runs out). Bytes written there count once committed. */
unsigned char *pp_inbuf_reserve(BIO *bio, size_t max, size_t *room);
/* Counts count bytes written into the reserved space as held. */
void pp_inbuf_commit(BIO *bio, size_t count);
/* Appends bytes (a copy). */
int pp_inbuf_append(BIO *bio, const void *bytes, size_t count);
/* The last count bytes appended (count at most what the buffer holds). */
const unsigned char *pp_inbuf_tail(BIO *bio, size_t count);
/* The socket reached end of stream: an empty buffer now reads as EOF. */
void pp_inbuf_set_eof(BIO *bio);

/* Lets OpenSSL read the socket fd itself, into its own record buffer (with
 * read-ahead, one read(2) takes a whole record), once the held bytes are
 * read. drained: the last read of fd was short (the socket is empty). */
void pp_inbuf_attach(BIO *bio, int fd, int drained);
/* The attached socket became readable: the next read may call read(2). */
void pp_inbuf_arm(BIO *bio);
/* What the attached socket said last; *error: errno of a failed read, or 0. */
#define PP_INBUF_DETACHED 0
#define PP_INBUF_READABLE 1
#define PP_INBUF_EMPTY 2
#define PP_INBUF_ENDED 3
int pp_inbuf_state(BIO *bio, int *error);

/* A new output BIO (one per connection; the SSL owns it after SSL_set_bio). */
BIO *pp_outbuf_new(void);
/* The held bytes (*count of them; NULL when none), to be consumed with
 * pp_tlsbuf_consume once taken. */
const unsigned char *pp_outbuf_peek(BIO *bio, size_t *count);

#ifdef __cplusplus
}
#endif
#endif
