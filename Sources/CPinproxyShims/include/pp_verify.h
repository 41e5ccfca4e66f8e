#ifndef PINPROXY_PP_VERIFY_H
#define PINPROXY_PP_VERIFY_H
/*
 * Chain verification helpers for the pinning harness. X509_verify_cert stops
 * at the first error by default; a client emulation needs every error and the
 * chain as far as it was built, so these helpers run the verification with a
 * callback that records each error and lets the verification go on.
 */
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every error one verification met: X509_V_ERR_* code and chain depth. */
typedef struct pp_verify_log pp_verify_log;
pp_verify_log *pp_verify_log_new(void);
void pp_verify_log_free(pp_verify_log *log);
int pp_verify_log_count(const pp_verify_log *log);
int pp_verify_log_code(const pp_verify_log *log, int i);
int pp_verify_log_depth(const pp_verify_log *log, int i);

/* Runs X509_verify_cert on an initialised ctx, recording each error into log
 * and continuing past it. Returns X509_verify_cert's result: 1 with an empty
 * log means the chain verified; 1 with entries means it did not; <= 0 means
 * the verification itself failed (see the OpenSSL error queue). */
int pp_x509_verify_collecting(X509_STORE_CTX *ctx, pp_verify_log *log);

/* Whether the outer signatureAlgorithm of x and the one inside its tbsCertificate name the
 * same algorithm and differ only in an absent versus a NULL parameter. */
int pp_x509_sigalgs_differ_only_in_null(const X509 *x);

/* Whether x's signature verifies under key. With null_parameters_equivalent set, a
 * certificate whose two signatureAlgorithm fields differ only in an absent versus a NULL
 * parameter is verified with the algorithm of its tbsCertificate (X509_verify refuses
 * such a certificate outright). Returns 1 when it verifies, 0 otherwise. */
int pp_x509_signature_verifies(X509 *x, EVP_PKEY *key, int null_parameters_equivalent);

/* Makes store take an issuer the way the JDK's PKIX and Android's Conscrypt do: its subject
 * equals the certificate's issuer name and its key verifies the signature. OpenSSL's own
 * check also insists that the authorityKeyIdentifier names the issuer's key, which those
 * platforms never look at. */
void pp_x509_store_match_issuers_by_signature(X509_STORE *store, int null_parameters_equivalent);

#ifdef __cplusplus
}
#endif
#endif
