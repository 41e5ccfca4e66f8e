#include "pp_verify.h"

#include <openssl/crypto.h>

#define PP_VERIFY_LOG_CAPACITY 64

struct pp_verify_log {
    int count;
    int codes[PP_VERIFY_LOG_CAPACITY];
    int depths[PP_VERIFY_LOG_CAPACITY];
};

pp_verify_log *pp_verify_log_new(void) {
    pp_verify_log *log = OPENSSL_zalloc(sizeof(*log));
    return log;
}

void pp_verify_log_free(pp_verify_log *log) { OPENSSL_free(log); }
int pp_verify_log_count(const pp_verify_log *log) { return log ? log->count : 0; }
int pp_verify_log_code(const pp_verify_log *log, int i) { return log->codes[i]; }
int pp_verify_log_depth(const pp_verify_log *log, int i) { return log->depths[i]; }

static int pp_verify_log_index = -1;
static CRYPTO_ONCE pp_verify_log_once = CRYPTO_ONCE_STATIC_INIT;

static void pp_verify_log_init(void) {
    pp_verify_log_index = X509_STORE_CTX_get_ex_new_index(0, "pinproxy verify log", NULL, NULL, NULL);
}

static int pp_verify_collect_cb(int ok, X509_STORE_CTX *ctx) {
    if (ok) return 1;
    pp_verify_log *log = X509_STORE_CTX_get_ex_data(ctx, pp_verify_log_index);
    if (!log) return 0;
    int code = X509_STORE_CTX_get_error(ctx);
    int depth = X509_STORE_CTX_get_error_depth(ctx);
    for (int i = 0; i < log->count; i++) {
        if (log->codes[i] == code && log->depths[i] == depth) return 1;
    }
    if (log->count < PP_VERIFY_LOG_CAPACITY) {
        log->codes[log->count] = code;
        log->depths[log->count] = depth;
        log->count++;
    }
    return 1;
}

int pp_x509_verify_collecting(X509_STORE_CTX *ctx, pp_verify_log *log) {
    if (!CRYPTO_THREAD_run_once(&pp_verify_log_once, pp_verify_log_init) || pp_verify_log_index < 0) return -1;
    if (!X509_STORE_CTX_set_ex_data(ctx, pp_verify_log_index, log)) return -1;
    X509_STORE_CTX_set_verify_cb(ctx, pp_verify_collect_cb);
    int rc = X509_verify_cert(ctx);
    X509_STORE_CTX_set_ex_data(ctx, pp_verify_log_index, NULL);
    return rc;
}
