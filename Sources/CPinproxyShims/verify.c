#include "pp_verify.h"

#include <openssl/asn1.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>

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

int pp_x509_sigalgs_differ_only_in_null(const X509 *x) {
    const X509_ALGOR *outer = NULL;
    X509_get0_signature(NULL, &outer, x);
    const X509_ALGOR *inner = X509_get0_tbs_sigalg(x);
    if (!outer || !inner) return 0;
    const ASN1_OBJECT *outer_oid = NULL, *inner_oid = NULL;
    int outer_type = V_ASN1_UNDEF, inner_type = V_ASN1_UNDEF;
    const void *outer_value = NULL, *inner_value = NULL;
    X509_ALGOR_get0(&outer_oid, &outer_type, &outer_value, outer);
    X509_ALGOR_get0(&inner_oid, &inner_type, &inner_value, inner);
    if (!outer_oid || !inner_oid || OBJ_cmp(outer_oid, inner_oid) != 0) return 0;
    return (outer_type == V_ASN1_UNDEF && inner_type == V_ASN1_NULL)
        || (outer_type == V_ASN1_NULL && inner_type == V_ASN1_UNDEF);
}

/* The tbsCertificate's DER: the first element of the certificate's outer SEQUENCE. */
static int pp_tbs_der(X509 *x, unsigned char **der_out, const unsigned char **tbs, long *tbs_length) {
    unsigned char *der = NULL;
    int der_length = i2d_X509(x, &der);
    if (der_length <= 0) return 0;
    const unsigned char *p = der;
    long length = 0;
    int tag = 0, klass = 0;
    if (ASN1_get_object(&p, &length, &tag, &klass, der_length) & 0x80) { OPENSSL_free(der); return 0; }
    const unsigned char *start = p;
    if (ASN1_get_object(&p, &length, &tag, &klass, der_length - (long)(p - der)) & 0x80) { OPENSSL_free(der); return 0; }
    *der_out = der;
    *tbs = start;
    *tbs_length = (long)(p - start) + length;
    return 1;
}

int pp_x509_signature_verifies(X509 *x, EVP_PKEY *key, int null_parameters_equivalent) {
    if (!key) return 0;
    if (X509_verify(x, key) == 1) return 1;
    ERR_clear_error();
    if (!null_parameters_equivalent || !pp_x509_sigalgs_differ_only_in_null(x)) return 0;
    int digest_nid = NID_undef, key_nid = NID_undef;
    const ASN1_OBJECT *oid = NULL;
    X509_ALGOR_get0(&oid, NULL, NULL, X509_get0_tbs_sigalg(x));
    if (!OBJ_find_sigid_algs(OBJ_obj2nid(oid), &digest_nid, &key_nid)) return 0;
    const EVP_MD *md = digest_nid == NID_undef ? NULL : EVP_get_digestbynid(digest_nid);
    if (digest_nid != NID_undef && !md) return 0;
    const ASN1_BIT_STRING *signature = NULL;
    X509_get0_signature(&signature, NULL, x);
    unsigned char *der = NULL;
    const unsigned char *tbs = NULL;
    long tbs_length = 0;
    if (!signature || !pp_tbs_der(x, &der, &tbs, &tbs_length)) return 0;
    int ok = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (ctx && EVP_DigestVerifyInit(ctx, NULL, md, NULL, key) == 1) {
        ok = EVP_DigestVerify(ctx, ASN1_STRING_get0_data(signature), (size_t)ASN1_STRING_length(signature),
                              tbs, (size_t)tbs_length) == 1;
    }
    EVP_MD_CTX_free(ctx);
    OPENSSL_free(der);
    ERR_clear_error();
    return ok;
}

static int pp_issued_by_signature(X509_STORE_CTX *ctx, X509 *x, X509 *issuer, int lenient) {
    (void)ctx;
    if (X509_NAME_cmp(X509_get_subject_name(issuer), X509_get_issuer_name(x)) != 0) return 0;
    return pp_x509_signature_verifies(x, X509_get0_pubkey(issuer), lenient);
}

static int pp_issued_by_signature_exact(X509_STORE_CTX *ctx, X509 *x, X509 *issuer) {
    return pp_issued_by_signature(ctx, x, issuer, 0);
}

static int pp_issued_by_signature_lenient(X509_STORE_CTX *ctx, X509 *x, X509 *issuer) {
    return pp_issued_by_signature(ctx, x, issuer, 1);
}

void pp_x509_store_match_issuers_by_signature(X509_STORE *store, int null_parameters_equivalent) {
    X509_STORE_set_check_issued(store, null_parameters_equivalent ? pp_issued_by_signature_lenient
                                                                  : pp_issued_by_signature_exact);
}
