#ifndef PINPROXY_PP_CRYPTO_H
#define PINPROXY_PP_CRYPTO_H
/*
 * Prefixed wrappers around OpenSSL macros and legacy fast paths that Swift
 * cannot import. Every name starts with pp_. Certificates and keys only;
 * TLS wrappers live in pp_ssl.h.
 */
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error queue. */
int pp_ERR_GET_LIB(unsigned long e);
int pp_ERR_GET_REASON(unsigned long e);
void pp_OPENSSL_free(void *p);

/* Memory BIO contents (BIO_get_mem_data is a macro). */
long pp_BIO_get_mem_data(BIO *bio, const char **data);

/* STACK_OF(X509) (all sk_* accessors are macros). */
STACK_OF(X509) *pp_sk_X509_new_null(void);
int pp_sk_X509_num(const STACK_OF(X509) *sk);
X509 *pp_sk_X509_value(const STACK_OF(X509) *sk, int i);
/* Pushes x after taking a reference; the stack owns that reference. */
int pp_sk_X509_push_ref(STACK_OF(X509) *sk, X509 *x);
void pp_sk_X509_pop_free(STACK_OF(X509) *sk);

/* Subject alternative names, read side. type: 1 = DNS, 2 = IP, 0 = other. */
typedef struct pp_general_names pp_general_names;
pp_general_names *pp_x509_get_sans(X509 *x);
int pp_general_names_count(const pp_general_names *names);
/* type: 1 DNS, 2 IP address, 3 URI, 4 email (rfc822Name), 0 another kind (data NULL). */
int pp_general_names_get(const pp_general_names *names, int i, int *type,
                         const unsigned char **data, int *len);
void pp_general_names_free(pp_general_names *names);

/* Subject alternative names, write side. ips holds packed 4- or 16-byte
 * addresses with their lengths in ip_lens. */
int pp_x509_add_san(X509 *x, const char *const *dns, int dns_count,
                    const unsigned char *const *ips, const int *ip_lens, int ip_count,
                    int critical);

/* Builds an extension from a constant configuration value such as
 * "critical,CA:FALSE". issuer and subject may be NULL where the extension does
 * not need them. Never pass untrusted text here. */
X509_EXTENSION *pp_x509_ext_from_conf(int nid, const char *value, X509 *issuer, X509 *subject);

/* Subject key identifier extension from raw key identifier bytes. */
X509_EXTENSION *pp_x509_ext_subject_key_id(const unsigned char *id, int len);
/* Authority key identifier extension (keyid only). */
X509_EXTENSION *pp_x509_ext_authority_key_id(const unsigned char *id, int len);

/* Name constraints built structurally (never from a config string). */
typedef struct pp_name_constraints pp_name_constraints;
pp_name_constraints *pp_name_constraints_new(void);
/* permitted: 1 = permitted subtree, 0 = excluded subtree. */
int pp_name_constraints_add_dns(pp_name_constraints *nc, int permitted, const char *name);
/* addr_and_mask: 8 bytes for IPv4, 32 bytes for IPv6. */
int pp_name_constraints_add_ip(pp_name_constraints *nc, int permitted,
                               const unsigned char *addr_and_mask, int len);
int pp_x509_add_name_constraints(X509 *x, pp_name_constraints *nc);
void pp_name_constraints_free(pp_name_constraints *nc);

/* Keys. A P-256 key backed by a legacy EC_KEY: OpenSSL 3 encodes provider
 * keys on every X509_set_pubkey, which dominated forging time. */
EVP_PKEY *pp_ec_p256_legacy_generate(void);
/* Returns a legacy-backed copy of an EC key, or NULL if pkey is not EC. */
EVP_PKEY *pp_ec_legacy_copy(EVP_PKEY *pkey);
/* A legacy-backed copy of an EC or RSA key (public or private), or NULL for
 * other key types: a certificate takes it without the provider encoder. */
EVP_PKEY *pp_pkey_legacy_copy(EVP_PKEY *pkey);
/* Raw ECDSA P-256 signature over a SHA-256 digest, for the benchmark baseline. */
int pp_ecdsa_sign_digest(EVP_PKEY *pkey, const unsigned char *digest, int digest_len,
                         unsigned char *sig, unsigned int *sig_len);

/* Serial number from big-endian bytes. */
int pp_x509_set_serial(X509 *x, const unsigned char *bytes, int len);
/* Validity as seconds since the epoch. */
int pp_x509_set_validity(X509 *x, int64_t not_before, int64_t not_after);
/* ASN1_TIME to seconds since the epoch; returns 0 on failure. */
int pp_asn1_time_to_unix(const ASN1_TIME *t, int64_t *out);

/* PKCS#12 holding only the certificate, no key, empty password. */
PKCS12 *pp_pkcs12_cert_only(X509 *cert, const char *friendly_name);

/* X509_V_OK when `leaf` satisfies the name constraints of `ca` (or `ca` has
 * none), else the X509_V_ERR_* code. */
int pp_x509_check_name_constraints(X509 *ca, X509 *leaf);
/* NAME_CONSTRAINTS_check of x against ca's constraints, and NAME_CONSTRAINTS_check_CN for a
   leaf, as X509_verify_cert checks every certificate below a constrained CA. */
int pp_x509_check_name_constraints_of_chain(X509 *ca, X509 *x, int is_leaf);
/* The JDK's reading: NAME_CONSTRAINTS_check with the subject's emailAddress left out when x
   has a subjectAltName extension, and no CN check. */
int pp_x509_check_name_constraints_jdk(X509 *ca, X509 *x);
/* Bit `bit` of x's Netscape certificate type (1: SSL server): 1 set, 0 clear, -1 no extension. */
int pp_x509_netscape_cert_type(X509 *x, int bit);
/* The security level a new client SSL_CTX gets from this libssl (its build and openssl.cnf). */
int pp_ssl_default_security_level(void);
/* x's certificatePolicies OIDs, dotted, one per line, into buf: the count, -1 without the extension. */
int pp_x509_policy_oids(X509 *x, char *buf, int len);
/* policyConstraints requireExplicitPolicy, or -1. */
long pp_x509_require_explicit_policy(X509 *x);
/* inhibitAnyPolicy SkipCerts, or -1. */
long pp_x509_inhibit_any_policy(X509 *x);
/* Prints extension `nid` of `x` the way `openssl x509 -text` does; 0 if absent. */
int pp_x509_print_ext(BIO *bio, X509 *x, int nid);
/* subjectPublicKey BIT STRING contents of the certificate's key. */
int pp_x509_public_key_bits(X509 *x, const unsigned char **data, int *len);
/* EVP_RSA_gen is a variadic macro. */
EVP_PKEY *pp_rsa_generate(unsigned int bits);
/* Prints a name in RFC 2253 form without escaping UTF-8. */
int pp_x509_name_print_rfc2253(BIO *bio, const X509_NAME *name);
/* Name constraints of a CA certificate, read side; NULL when it has none. */
pp_name_constraints *pp_x509_get_name_constraints(X509 *x);
/* Number of permitted (permitted = 1) or excluded (0) subtrees. */
int pp_name_constraints_count(const pp_name_constraints *nc, int permitted);
/* Subtree i: type 1 = DNS, 2 = IP (address then mask), 0 = other. */
int pp_name_constraints_get(const pp_name_constraints *nc, int permitted, int i,
                            int *type, const unsigned char **data, int *len);
/* Reads a PEM private key without ever prompting: pass NULL for no password. */
EVP_PKEY *pp_pem_read_private_key(BIO *bio, const char *password);
/* Reads the next PEM certificate without ever prompting (an encrypted block fails). */
X509 *pp_pem_read_x509(BIO *bio);
/* Reads a PEM public key without ever prompting (an encrypted block fails). */
EVP_PKEY *pp_pem_read_public_key(BIO *bio);

#ifdef __cplusplus
}
#endif
#endif
