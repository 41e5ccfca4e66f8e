#include <openssl/ssl.h>
#include "pp_crypto.h"

#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/pkcs12.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <string.h>
#include <time.h>

int pp_ERR_GET_LIB(unsigned long e) { return ERR_GET_LIB(e); }
int pp_ERR_GET_REASON(unsigned long e) { return ERR_GET_REASON(e); }
void pp_OPENSSL_free(void *p) { OPENSSL_free(p); }

long pp_BIO_get_mem_data(BIO *bio, const char **data) {
    char *p = NULL;
    long n = BIO_get_mem_data(bio, &p);
    *data = p;
    return n;
}

STACK_OF(X509) *pp_sk_X509_new_null(void) { return sk_X509_new_null(); }
int pp_sk_X509_num(const STACK_OF(X509) *sk) { return sk ? sk_X509_num(sk) : 0; }
X509 *pp_sk_X509_value(const STACK_OF(X509) *sk, int i) { return sk_X509_value(sk, i); }
int pp_sk_X509_push_ref(STACK_OF(X509) *sk, X509 *x) {
    if (!X509_up_ref(x)) return 0;
    if (sk_X509_push(sk, x) <= 0) { X509_free(x); return 0; }
    return 1;
}
void pp_sk_X509_pop_free(STACK_OF(X509) *sk) { sk_X509_pop_free(sk, X509_free); }

struct pp_general_names { GENERAL_NAMES *names; };

pp_general_names *pp_x509_get_sans(X509 *x) {
    GENERAL_NAMES *names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    if (!names) return NULL;
    pp_general_names *out = OPENSSL_malloc(sizeof(*out));
    if (!out) { GENERAL_NAMES_free(names); return NULL; }
    out->names = names;
    return out;
}
int pp_general_names_count(const pp_general_names *n) { return n ? sk_GENERAL_NAME_num(n->names) : 0; }
int pp_general_names_get(const pp_general_names *n, int i, int *type,
                         const unsigned char **data, int *len) {
    const GENERAL_NAME *g = sk_GENERAL_NAME_value(n->names, i);
    if (!g) return 0;
    *type = 0; *data = NULL; *len = 0;
    if (g->type == GEN_DNS) {
        *type = 1; *data = ASN1_STRING_get0_data(g->d.dNSName); *len = ASN1_STRING_length(g->d.dNSName);
    } else if (g->type == GEN_IPADD) {
        *type = 2; *data = ASN1_STRING_get0_data(g->d.iPAddress); *len = ASN1_STRING_length(g->d.iPAddress);
    } else if (g->type == GEN_URI) {
        *type = 3; *data = ASN1_STRING_get0_data(g->d.uniformResourceIdentifier); *len = ASN1_STRING_length(g->d.uniformResourceIdentifier);
    } else if (g->type == GEN_EMAIL) {
        *type = 4; *data = ASN1_STRING_get0_data(g->d.rfc822Name); *len = ASN1_STRING_length(g->d.rfc822Name);
    }
    return 1;
}
void pp_general_names_free(pp_general_names *n) {
    if (!n) return;
    GENERAL_NAMES_free(n->names);
    OPENSSL_free(n);
}

int pp_x509_add_san(X509 *x, const char *const *dns, int dns_count,
                    const unsigned char *const *ips, const int *ip_lens, int ip_count,
                    int critical) {
    GENERAL_NAMES *names = sk_GENERAL_NAME_new_null();
    if (!names) return 0;
    int ok = 0;
    for (int i = 0; i < dns_count; i++) {
        GENERAL_NAME *g = GENERAL_NAME_new();
        ASN1_IA5STRING *s = ASN1_IA5STRING_new();
        if (!g || !s || !ASN1_STRING_set(s, dns[i], (int)strlen(dns[i]))) {
            GENERAL_NAME_free(g); ASN1_IA5STRING_free(s); goto done;
        }
        GENERAL_NAME_set0_value(g, GEN_DNS, s);
        if (!sk_GENERAL_NAME_push(names, g)) { GENERAL_NAME_free(g); goto done; }
    }
    for (int i = 0; i < ip_count; i++) {
        GENERAL_NAME *g = GENERAL_NAME_new();
        ASN1_OCTET_STRING *s = ASN1_OCTET_STRING_new();
        if (!g || !s || !ASN1_OCTET_STRING_set(s, ips[i], ip_lens[i])) {
            GENERAL_NAME_free(g); ASN1_OCTET_STRING_free(s); goto done;
        }
        GENERAL_NAME_set0_value(g, GEN_IPADD, s);
        if (!sk_GENERAL_NAME_push(names, g)) { GENERAL_NAME_free(g); goto done; }
    }
    ok = X509_add1_ext_i2d(x, NID_subject_alt_name, names, critical, X509V3_ADD_REPLACE) == 1;
done:
    GENERAL_NAMES_free(names);
    return ok;
}

X509_EXTENSION *pp_x509_ext_from_conf(int nid, const char *value, X509 *issuer, X509 *subject) {
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer, subject, NULL, NULL, 0);
    return X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
}

X509_EXTENSION *pp_x509_ext_subject_key_id(const unsigned char *id, int len) {
    ASN1_OCTET_STRING *os = ASN1_OCTET_STRING_new();
    if (!os || !ASN1_OCTET_STRING_set(os, id, len)) { ASN1_OCTET_STRING_free(os); return NULL; }
    X509_EXTENSION *ext = X509V3_EXT_i2d(NID_subject_key_identifier, 0, os);
    ASN1_OCTET_STRING_free(os);
    return ext;
}

X509_EXTENSION *pp_x509_ext_authority_key_id(const unsigned char *id, int len) {
    AUTHORITY_KEYID *akid = AUTHORITY_KEYID_new();
    if (!akid) return NULL;
    akid->keyid = ASN1_OCTET_STRING_new();
    if (!akid->keyid || !ASN1_OCTET_STRING_set(akid->keyid, id, len)) {
        AUTHORITY_KEYID_free(akid); return NULL;
    }
    X509_EXTENSION *ext = X509V3_EXT_i2d(NID_authority_key_identifier, 0, akid);
    AUTHORITY_KEYID_free(akid);
    return ext;
}

struct pp_name_constraints { NAME_CONSTRAINTS *nc; };

pp_name_constraints *pp_name_constraints_new(void) {
    pp_name_constraints *out = OPENSSL_zalloc(sizeof(*out));
    if (!out) return NULL;
    out->nc = NAME_CONSTRAINTS_new();
    if (!out->nc) { OPENSSL_free(out); return NULL; }
    return out;
}

static int pp_nc_push(pp_name_constraints *nc, int permitted, GENERAL_NAME *g) {
    GENERAL_SUBTREE *st = GENERAL_SUBTREE_new();
    if (!st) { GENERAL_NAME_free(g); return 0; }
    GENERAL_NAME_free(st->base);
    st->base = g;
    STACK_OF(GENERAL_SUBTREE) **list = permitted ? &nc->nc->permittedSubtrees : &nc->nc->excludedSubtrees;
    if (!*list) *list = sk_GENERAL_SUBTREE_new_null();
    if (!*list || !sk_GENERAL_SUBTREE_push(*list, st)) { GENERAL_SUBTREE_free(st); return 0; }
    return 1;
}

int pp_name_constraints_add_dns(pp_name_constraints *nc, int permitted, const char *name) {
    GENERAL_NAME *g = GENERAL_NAME_new();
    ASN1_IA5STRING *s = ASN1_IA5STRING_new();
    if (!g || !s || !ASN1_STRING_set(s, name, (int)strlen(name))) {
        GENERAL_NAME_free(g); ASN1_IA5STRING_free(s); return 0;
    }
    GENERAL_NAME_set0_value(g, GEN_DNS, s);
    return pp_nc_push(nc, permitted, g);
}

int pp_name_constraints_add_ip(pp_name_constraints *nc, int permitted,
                               const unsigned char *addr_and_mask, int len) {
    GENERAL_NAME *g = GENERAL_NAME_new();
    ASN1_OCTET_STRING *s = ASN1_OCTET_STRING_new();
    if (!g || !s || !ASN1_OCTET_STRING_set(s, addr_and_mask, len)) {
        GENERAL_NAME_free(g); ASN1_OCTET_STRING_free(s); return 0;
    }
    GENERAL_NAME_set0_value(g, GEN_IPADD, s);
    return pp_nc_push(nc, permitted, g);
}

int pp_x509_add_name_constraints(X509 *x, pp_name_constraints *nc) {
    return X509_add1_ext_i2d(x, NID_name_constraints, nc->nc, 1, X509V3_ADD_REPLACE) == 1;
}

void pp_name_constraints_free(pp_name_constraints *nc) {
    if (!nc) return;
    NAME_CONSTRAINTS_free(nc->nc);
    OPENSSL_free(nc);
}

EVP_PKEY *pp_ec_p256_legacy_generate(void) {
    EC_KEY *ec = EC_KEY_new_by_curve_name(NID_X9_62_prime256v1);
    if (!ec) return NULL;
    EVP_PKEY *pkey = NULL;
    if (EC_KEY_generate_key(ec) == 1 && (pkey = EVP_PKEY_new()) != NULL) {
        if (EVP_PKEY_set1_EC_KEY(pkey, ec) != 1) { EVP_PKEY_free(pkey); pkey = NULL; }
    }
    EC_KEY_free(ec);
    return pkey;
}

EVP_PKEY *pp_ec_legacy_copy(EVP_PKEY *pkey) {
    if (EVP_PKEY_get_base_id(pkey) != EVP_PKEY_EC) return NULL;
    /* EVP_PKEY_get1_EC_KEY exports the provider key into a legacy EC_KEY. */
    EC_KEY *ec = EVP_PKEY_get1_EC_KEY(pkey);
    if (!ec) return NULL;
    EVP_PKEY *out = EVP_PKEY_new();
    if (out && EVP_PKEY_set1_EC_KEY(out, ec) != 1) { EVP_PKEY_free(out); out = NULL; }
    EC_KEY_free(ec);
    return out;
}

EVP_PKEY *pp_pkey_legacy_copy(EVP_PKEY *pkey) {
    if (EVP_PKEY_get_base_id(pkey) == EVP_PKEY_EC) return pp_ec_legacy_copy(pkey);
    if (EVP_PKEY_get_base_id(pkey) != EVP_PKEY_RSA) return NULL;
    /* As for EC: the export runs once; setting a legacy key skips the encoder. */
    RSA *rsa = EVP_PKEY_get1_RSA(pkey);
    if (!rsa) return NULL;
    EVP_PKEY *out = EVP_PKEY_new();
    if (out && EVP_PKEY_set1_RSA(out, rsa) != 1) { EVP_PKEY_free(out); out = NULL; }
    RSA_free(rsa);
    return out;
}

int pp_ecdsa_sign_digest(EVP_PKEY *pkey, const unsigned char *digest, int digest_len,
                         unsigned char *sig, unsigned int *sig_len) {
    const EC_KEY *ec = EVP_PKEY_get0_EC_KEY(pkey);
    if (!ec) return 0;
    return ECDSA_sign(0, digest, digest_len, sig, sig_len, (EC_KEY *)ec);
}

int pp_x509_set_serial(X509 *x, const unsigned char *bytes, int len) {
    BIGNUM *bn = BN_bin2bn(bytes, len, NULL);
    if (!bn) return 0;
    ASN1_INTEGER *ai = BN_to_ASN1_INTEGER(bn, NULL);
    BN_free(bn);
    if (!ai) return 0;
    int ok = X509_set_serialNumber(x, ai);
    ASN1_INTEGER_free(ai);
    return ok;
}

int pp_x509_set_validity(X509 *x, int64_t not_before, int64_t not_after) {
    ASN1_TIME *nb = ASN1_TIME_set(NULL, (time_t)not_before);
    ASN1_TIME *na = ASN1_TIME_set(NULL, (time_t)not_after);
    int ok = nb && na && X509_set1_notBefore(x, nb) && X509_set1_notAfter(x, na);
    ASN1_TIME_free(nb);
    ASN1_TIME_free(na);
    return ok;
}

int pp_asn1_time_to_unix(const ASN1_TIME *t, int64_t *out) {
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    if (!ASN1_TIME_to_tm(t, &tm)) return 0;
    *out = (int64_t)timegm(&tm);
    return 1;
}

PKCS12 *pp_pkcs12_cert_only(X509 *cert, const char *friendly_name) {
    STACK_OF(X509) *ca = sk_X509_new_null();
    if (!ca) return NULL;
    if (!pp_sk_X509_push_ref(ca, cert)) { sk_X509_free(ca); return NULL; }
    /* -1 for the certificate PBE leaves the certificate bag unencrypted,
     * which every trust-store importer accepts with an empty password. */
    PKCS12 *p12 = PKCS12_create("", friendly_name, NULL, NULL, ca, 0, -1, 0, 0, 0);
    sk_X509_pop_free(ca, X509_free);
    return p12;
}

int pp_x509_check_name_constraints(X509 *ca, X509 *leaf) {
    int crit = 0;
    NAME_CONSTRAINTS *nc = X509_get_ext_d2i(ca, NID_name_constraints, &crit, NULL);
    if (!nc) return X509_V_OK;
    int rc = NAME_CONSTRAINTS_check(leaf, nc);
    NAME_CONSTRAINTS_free(nc);
    return rc;
}

int pp_x509_check_name_constraints_of_chain(X509 *ca, X509 *x, int is_leaf) {
    NAME_CONSTRAINTS *nc = X509_get_ext_d2i(ca, NID_name_constraints, NULL, NULL);
    if (!nc) return X509_V_OK;
    int rc = NAME_CONSTRAINTS_check(x, nc);
    /* As X509_verify_cert's check_name_constraints: the leaf's CN too, when it has no DNS SAN. */
    if (rc == X509_V_OK && is_leaf) {
        int has_dns = 0;
        GENERAL_NAMES *names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
        for (int i = 0; names && i < sk_GENERAL_NAME_num(names); i++)
            if (sk_GENERAL_NAME_value(names, i)->type == GEN_DNS) has_dns = 1;
        GENERAL_NAMES_free(names);
        if (!has_dns) rc = NAME_CONSTRAINTS_check_CN(x, nc);
    }
    NAME_CONSTRAINTS_free(nc);
    return rc;
}

int pp_x509_check_name_constraints_jdk(X509 *ca, X509 *x) {
    NAME_CONSTRAINTS *nc = X509_get_ext_d2i(ca, NID_name_constraints, NULL, NULL);
    if (!nc) return X509_V_OK;
    /* The JDK reads the subject's emailAddress as an rfc822 name only when the certificate
       has no subjectAltName extension: a copy without them is checked otherwise. The CN is
       the caller's (its rule is the JDK's own, not OpenSSL's NAME_CONSTRAINTS_check_CN). */
    X509 *copy = NULL;
    X509 *checked = x;
    if (X509_get_ext_by_NID(x, NID_subject_alt_name, -1) >= 0
        && X509_NAME_get_index_by_NID(X509_get_subject_name(x), NID_pkcs9_emailAddress, -1) >= 0) {
        copy = X509_dup(x);
        if (!copy) {
            NAME_CONSTRAINTS_free(nc);
            return X509_V_ERR_OUT_OF_MEM;
        }
        X509_NAME *name = X509_get_subject_name(copy);
        int index;
        while ((index = X509_NAME_get_index_by_NID(name, NID_pkcs9_emailAddress, -1)) >= 0)
            X509_NAME_ENTRY_free(X509_NAME_delete_entry(name, index));
        checked = copy;
    }
    int rc = NAME_CONSTRAINTS_check(checked, nc);
    X509_free(copy);
    NAME_CONSTRAINTS_free(nc);
    return rc;
}

int pp_x509_netscape_cert_type(X509 *x, int bit) {
    ASN1_BIT_STRING *types = X509_get_ext_d2i(x, NID_netscape_cert_type, NULL, NULL);
    if (!types) return -1;
    int set = ASN1_BIT_STRING_get_bit(types, bit);
    ASN1_BIT_STRING_free(types);
    return set;
}

int pp_x509_policy_oids(X509 *x, char *buf, int len) {
    CERTIFICATEPOLICIES *policies = X509_get_ext_d2i(x, NID_certificate_policies, NULL, NULL);
    if (!policies) return -1;
    int count = sk_POLICYINFO_num(policies), used = 0;
    if (len <= 0) { CERTIFICATEPOLICIES_free(policies); return count; }
    buf[0] = 0;
    for (int i = 0; i < count; i++) {
        char oid[128];
        OBJ_obj2txt(oid, sizeof(oid), sk_POLICYINFO_value(policies, i)->policyid, 1);
        int n = snprintf(buf + used, (size_t)(len - used), "%s\n", oid);
        /* A list longer than buf keeps its first policies only. */
        if (n < 0 || n >= len - used) { buf[used] = 0; break; }
        used += n;
    }
    CERTIFICATEPOLICIES_free(policies);
    return count;
}

static long pp_asn1_integer_or(const ASN1_INTEGER *value, long absent) {
    return value ? ASN1_INTEGER_get(value) : absent;
}

long pp_x509_require_explicit_policy(X509 *x) {
    POLICY_CONSTRAINTS *constraints = X509_get_ext_d2i(x, NID_policy_constraints, NULL, NULL);
    if (!constraints) return -1;
    long value = pp_asn1_integer_or(constraints->requireExplicitPolicy, -1);
    POLICY_CONSTRAINTS_free(constraints);
    return value;
}

long pp_x509_inhibit_any_policy(X509 *x) {
    ASN1_INTEGER *value = X509_get_ext_d2i(x, NID_inhibit_any_policy, NULL, NULL);
    if (!value) return -1;
    long skip = ASN1_INTEGER_get(value);
    ASN1_INTEGER_free(value);
    return skip;
}

int pp_ssl_default_security_level(void) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) return -1;
    int level = SSL_CTX_get_security_level(ctx);
    SSL_CTX_free(ctx);
    return level;
}

int pp_x509_print_ext(BIO *bio, X509 *x, int nid) {
    int idx = X509_get_ext_by_NID(x, nid, -1);
    if (idx < 0) return 0;
    X509_EXTENSION *ext = X509_get_ext(x, idx);
    if (!X509V3_EXT_print(bio, ext, 0, 0)) return 0;
    return 1;
}

int pp_x509_public_key_bits(X509 *x, const unsigned char **data, int *len) {
    X509_PUBKEY *pub = X509_get_X509_PUBKEY(x);
    if (!pub) return 0;
    return X509_PUBKEY_get0_param(NULL, data, len, NULL, pub);
}

EVP_PKEY *pp_rsa_generate(unsigned int bits) { return EVP_RSA_gen(bits); }

int pp_x509_name_print_rfc2253(BIO *bio, const X509_NAME *name) {
    return X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
}

pp_name_constraints *pp_x509_get_name_constraints(X509 *x) {
    NAME_CONSTRAINTS *nc = X509_get_ext_d2i(x, NID_name_constraints, NULL, NULL);
    if (!nc) return NULL;
    pp_name_constraints *out = OPENSSL_zalloc(sizeof(*out));
    if (!out) { NAME_CONSTRAINTS_free(nc); return NULL; }
    out->nc = nc;
    return out;
}

int pp_name_constraints_count(const pp_name_constraints *nc, int permitted) {
    STACK_OF(GENERAL_SUBTREE) *list = permitted ? nc->nc->permittedSubtrees : nc->nc->excludedSubtrees;
    return list ? sk_GENERAL_SUBTREE_num(list) : 0;
}

int pp_name_constraints_get(const pp_name_constraints *nc, int permitted, int i,
                            int *type, const unsigned char **data, int *len) {
    STACK_OF(GENERAL_SUBTREE) *list = permitted ? nc->nc->permittedSubtrees : nc->nc->excludedSubtrees;
    GENERAL_SUBTREE *st = list ? sk_GENERAL_SUBTREE_value(list, i) : NULL;
    *type = 0; *data = NULL; *len = 0;
    if (!st || !st->base) return 0;
    if (st->base->type == GEN_DNS) {
        *type = 1; *data = ASN1_STRING_get0_data(st->base->d.dNSName); *len = ASN1_STRING_length(st->base->d.dNSName);
    } else if (st->base->type == GEN_IPADD) {
        *type = 2; *data = ASN1_STRING_get0_data(st->base->d.iPAddress); *len = ASN1_STRING_length(st->base->d.iPAddress);
    }
    return 1;
}

static int pp_password_callback(char *buf, int size, int rwflag, void *userdata) {
    (void)rwflag;
    const char *password = userdata;
    if (!password) return 0; /* no prompt: an encrypted key without a password fails */
    int n = (int)strlen(password);
    if (n > size) n = size;
    memcpy(buf, password, (size_t)n);
    return n;
}

EVP_PKEY *pp_pem_read_private_key(BIO *bio, const char *password) {
    return PEM_read_bio_PrivateKey(bio, NULL, pp_password_callback, (void *)password);
}

/* Certificates and public keys are never encrypted, but a PEM block may still
 * carry a "Proc-Type: 4,ENCRYPTED" header; with no callback OpenSSL would ask
 * for its pass phrase on the terminal. */
X509 *pp_pem_read_x509(BIO *bio) {
    return PEM_read_bio_X509(bio, NULL, pp_password_callback, NULL);
}

EVP_PKEY *pp_pem_read_public_key(BIO *bio) {
    return PEM_read_bio_PUBKEY(bio, NULL, pp_password_callback, NULL);
}
