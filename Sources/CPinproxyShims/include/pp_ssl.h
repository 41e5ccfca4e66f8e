#ifndef PINPROXY_PP_SSL_H
#define PINPROXY_PP_SSL_H
/* Prefixed wrappers for libssl macros. */
#include <openssl/ssl.h>

#ifdef __cplusplus
extern "C" {
#endif

long pp_SSL_CTX_set_mode(SSL_CTX *ctx, long mode);
long pp_SSL_CTX_set_options(SSL_CTX *ctx, uint64_t options);
int pp_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version);
int pp_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version);
long pp_SSL_CTX_set_tlsext_servername_callback(SSL_CTX *ctx, int (*cb)(SSL *, int *, void *));
long pp_SSL_CTX_set_tlsext_servername_arg(SSL_CTX *ctx, void *arg);
int pp_SSL_set_tlsext_host_name(SSL *ssl, const char *name);
long pp_SSL_set_mode(SSL *ssl, long mode);
int pp_SSL_set1_host(SSL *ssl, const char *host);
int pp_SSL_set0_chain_ref(SSL *ssl, STACK_OF(X509) *chain);

/* Constants that are macros in ssl.h. */
long pp_SSL_MODE_ENABLE_PARTIAL_WRITE(void);
long pp_SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER(void);
long pp_SSL_MODE_RELEASE_BUFFERS(void);
uint64_t pp_SSL_OP_NO_COMPRESSION(void);
uint64_t pp_SSL_OP_IGNORE_UNEXPECTED_EOF(void);
uint64_t pp_SSL_OP_NO_RENEGOTIATION(void);
uint64_t pp_SSL_OP_NO_TICKET(void);
int pp_TLS1_2_VERSION(void);
int pp_TLS1_3_VERSION(void);
int pp_SSL_TLSEXT_ERR_OK(void);
int pp_SSL_TLSEXT_ERR_NOACK(void);
int pp_SSL_TLSEXT_ERR_ALERT_FATAL(void);

long pp_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode);
long pp_SSL_SESS_CACHE_OFF(void);
long pp_SSL_SESS_CACHE_SERVER(void);
long pp_SSL_SESS_CACHE_CLIENT(void);

/* Info-callback flags (compound macros). */
int pp_SSL_CB_READ_ALERT(void);
int pp_SSL_CB_WRITE_ALERT(void);
int pp_SSL_CB_HANDSHAKE_DONE(void);
int pp_SSL_ERROR_WANT_CLIENT_HELLO_CB(void);
int pp_SSL_CLIENT_HELLO_SUCCESS(void);
int pp_SSL_CLIENT_HELLO_RETRY(void);
int pp_SSL_CLIENT_HELLO_ERROR(void);
int pp_SSL_VERIFY_PEER(void);
int pp_SSL_VERIFY_NONE(void);

#ifdef __cplusplus
}
#endif
#endif
