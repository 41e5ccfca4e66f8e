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
int pp_TLS1_2_VERSION(void) { return TLS1_2_VERSION; }
int pp_TLS1_3_VERSION(void) { return TLS1_3_VERSION; }
int pp_SSL_TLSEXT_ERR_OK(void) { return SSL_TLSEXT_ERR_OK; }
int pp_SSL_TLSEXT_ERR_NOACK(void) { return SSL_TLSEXT_ERR_NOACK; }
int pp_SSL_TLSEXT_ERR_ALERT_FATAL(void) { return SSL_TLSEXT_ERR_ALERT_FATAL; }
