#include "pp_ssl.h"

long pp_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
long pp_SSL_CTX_set_options(SSL_CTX *ctx, uint64_t options) { return (long)SSL_CTX_set_options(ctx, options); }
int pp_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int v) { return (int)SSL_CTX_set_min_proto_version(ctx, v); }
int pp_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int v) { return (int)SSL_CTX_set_max_proto_version(ctx, v); }
long pp_SSL_CTX_set_tlsext_servername_callback(SSL_CTX *ctx, int (*cb)(SSL *, int *, void *)) {
    return SSL_CTX_set_tlsext_servername_callback(ctx, cb);
}
long pp_SSL_CTX_set_tlsext_servername_arg(SSL_CTX *ctx, void *arg) {
    return SSL_CTX_set_tlsext_servername_arg(ctx, arg);
}
int pp_SSL_set_tlsext_host_name(SSL *ssl, const char *name) { return (int)SSL_set_tlsext_host_name(ssl, name); }
long pp_SSL_set_mode(SSL *ssl, long mode) { return SSL_set_mode(ssl, mode); }
int pp_SSL_set1_host(SSL *ssl, const char *host) { return SSL_set1_host(ssl, host); }
int pp_SSL_set0_chain_ref(SSL *ssl, STACK_OF(X509) *chain) { return (int)SSL_set1_chain(ssl, chain); }

long pp_SSL_MODE_ENABLE_PARTIAL_WRITE(void) { return SSL_MODE_ENABLE_PARTIAL_WRITE; }
long pp_SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER(void) { return SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER; }
long pp_SSL_MODE_RELEASE_BUFFERS(void) { return SSL_MODE_RELEASE_BUFFERS; }
uint64_t pp_SSL_OP_NO_COMPRESSION(void) { return SSL_OP_NO_COMPRESSION; }
uint64_t pp_SSL_OP_IGNORE_UNEXPECTED_EOF(void) { return SSL_OP_IGNORE_UNEXPECTED_EOF; }
uint64_t pp_SSL_OP_NO_RENEGOTIATION(void) { return SSL_OP_NO_RENEGOTIATION; }
uint64_t pp_SSL_OP_NO_TICKET(void) { return SSL_OP_NO_TICKET; }
int pp_TLS1_2_VERSION(void) { return TLS1_2_VERSION; }
int pp_TLS1_3_VERSION(void) { return TLS1_3_VERSION; }
int pp_SSL_TLSEXT_ERR_OK(void) { return SSL_TLSEXT_ERR_OK; }
int pp_SSL_TLSEXT_ERR_NOACK(void) { return SSL_TLSEXT_ERR_NOACK; }
int pp_SSL_TLSEXT_ERR_ALERT_FATAL(void) { return SSL_TLSEXT_ERR_ALERT_FATAL; }

long pp_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_session_cache_mode(ctx, mode); }
long pp_SSL_SESS_CACHE_OFF(void) { return SSL_SESS_CACHE_OFF; }
long pp_SSL_SESS_CACHE_SERVER(void) { return SSL_SESS_CACHE_SERVER; }
long pp_SSL_SESS_CACHE_CLIENT(void) { return SSL_SESS_CACHE_CLIENT; }

int pp_SSL_CB_READ_ALERT(void) { return SSL_CB_READ_ALERT; }
int pp_SSL_CB_WRITE_ALERT(void) { return SSL_CB_WRITE_ALERT; }
int pp_SSL_CB_HANDSHAKE_DONE(void) { return SSL_CB_HANDSHAKE_DONE; }
int pp_SSL_ERROR_WANT_CLIENT_HELLO_CB(void) { return SSL_ERROR_WANT_CLIENT_HELLO_CB; }
int pp_SSL_CLIENT_HELLO_SUCCESS(void) { return SSL_CLIENT_HELLO_SUCCESS; }
int pp_SSL_CLIENT_HELLO_RETRY(void) { return SSL_CLIENT_HELLO_RETRY; }
int pp_SSL_CLIENT_HELLO_ERROR(void) { return SSL_CLIENT_HELLO_ERROR; }
int pp_SSL_VERIFY_PEER(void) { return SSL_VERIFY_PEER; }
int pp_SSL_VERIFY_NONE(void) { return SSL_VERIFY_NONE; }
