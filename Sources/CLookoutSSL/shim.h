#ifndef CLOOKOUT_SSL_SHIM_H
#define CLOOKOUT_SSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/x509_vfy.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/rand.h>
#include <openssl/tls1.h>
#include <openssl/opensslv.h>
#include <openssl/crypto.h>
#include <openssl/ocsp.h>

/*
 * Swift cannot import OpenSSL's function-like macros, its variadic functions or the
 * SSL_OP_* constants (they are `SSL_OP_BIT(n)` expressions). Each wrapper below is the
 * macro it is named after, spelled as a function; nothing here adds behaviour.
 */

/* ---- SSL_CTX / SSL controls (macros over SSL_CTX_ctrl / SSL_ctrl) ---- */

static inline int lookout_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}

static inline int lookout_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}

static inline long lookout_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}

static inline long lookout_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}

static inline int lookout_SSL_CTX_add1_chain_cert(SSL_CTX *ctx, X509 *x509) {
    return (int)SSL_CTX_add1_chain_cert(ctx, x509);
}

static inline int lookout_SSL_add1_chain_cert(SSL *ssl, X509 *x509) {
    return (int)SSL_add1_chain_cert(ssl, x509);
}

static inline int lookout_SSL_clear_chain_certs(SSL *ssl) {
    return (int)SSL_clear_chain_certs(ssl);
}

static inline int lookout_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

typedef int (*lookout_servername_cb)(SSL *ssl, int *alert, void *arg);

static inline int lookout_SSL_CTX_set_tlsext_servername_callback(SSL_CTX *ctx, lookout_servername_cb cb) {
    return (int)SSL_CTX_set_tlsext_servername_callback(ctx, cb);
}

static inline int lookout_SSL_get_ex_new_index(void) {
    return SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

/* Ask the server to staple an OCSP response (RFC 6066 §8 status_request). */
static inline int lookout_SSL_request_ocsp_status(SSL *ssl) {
    return (int)SSL_set_tlsext_status_type(ssl, TLSEXT_STATUSTYPE_ocsp);
}

/* The stapled OCSP response the server sent; its length, or -1 when there is none. */
static inline long lookout_SSL_get_ocsp_response(SSL *ssl, const unsigned char **response) {
    unsigned char *data = NULL;
    long length = SSL_get_tlsext_status_ocsp_resp(ssl, &data);
    *response = data;
    return data == NULL ? -1 : length;
}

/* ---- SSL_OP_* option bits ---- */

static inline uint64_t lookout_SSL_OP_NO_COMPRESSION(void) { return SSL_OP_NO_COMPRESSION; }
static inline uint64_t lookout_SSL_OP_NO_RENEGOTIATION(void) { return SSL_OP_NO_RENEGOTIATION; }
static inline uint64_t lookout_SSL_OP_CIPHER_SERVER_PREFERENCE(void) { return SSL_OP_CIPHER_SERVER_PREFERENCE; }

/* ---- memory BIOs ---- */

static inline long lookout_BIO_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}

static inline int lookout_BIO_set_mem_eof_return(BIO *bio, int value) {
    return (int)BIO_set_mem_eof_return(bio, value);
}

/* ---- typed stacks (sk_TYPE_* are macros in OpenSSL 3.0) ---- */

static inline int lookout_sk_X509_num(const STACK_OF(X509) *stack) { return sk_X509_num(stack); }
static inline X509 *lookout_sk_X509_value(const STACK_OF(X509) *stack, int index) { return sk_X509_value(stack, index); }
static inline STACK_OF(X509) *lookout_sk_X509_new_null(void) { return sk_X509_new_null(); }
static inline int lookout_sk_X509_push(STACK_OF(X509) *stack, X509 *x509) { return sk_X509_push(stack, x509); }
/* Frees the stack only; the certificates in it are not released. */
static inline void lookout_sk_X509_free(STACK_OF(X509) *stack) { sk_X509_free(stack); }

static inline int lookout_sk_GENERAL_NAME_num(const GENERAL_NAMES *names) { return sk_GENERAL_NAME_num(names); }
static inline GENERAL_NAME *lookout_sk_GENERAL_NAME_value(const GENERAL_NAMES *names, int index) {
    return sk_GENERAL_NAME_value(names, index);
}
static inline GENERAL_NAMES *lookout_sk_GENERAL_NAME_new_null(void) { return sk_GENERAL_NAME_new_null(); }
static inline int lookout_sk_GENERAL_NAME_push(GENERAL_NAMES *names, GENERAL_NAME *name) {
    return sk_GENERAL_NAME_push(names, name);
}

/* ---- GENERAL_NAME fields (a union Swift can read, but this keeps it in one place) ---- */

static inline int lookout_GENERAL_NAME_type(const GENERAL_NAME *name) { return name->type; }
/* The IA5String of a GEN_DNS name or the OCTET STRING of a GEN_IPADD name; NULL otherwise. */
static inline const ASN1_STRING *lookout_GENERAL_NAME_string(const GENERAL_NAME *name) {
    switch (name->type) {
    case GEN_DNS: return name->d.dNSName;
    case GEN_IPADD: return name->d.iPAddress;
    default: return NULL;
    }
}

/* ---- names ---- */

/* "CN=example.com, O=Example" in certificate order, RFC 2253 escaping, UTF-8. */
static inline int lookout_X509_NAME_print_oneline(BIO *bio, const X509_NAME *name) {
    return X509_NAME_print_ex(bio, name, 0,
        (ASN1_STRFLGS_RFC2253 & ~ASN1_STRFLGS_ESC_MSB) | XN_FLAG_SEP_CPLUS_SPC | XN_FLAG_FN_SN);
}

/// RFC 2253 form ("CN=billing,O=corp": most specific first, commas), as policies name subjects.
static inline int lookout_X509_NAME_print_rfc2253(BIO *bio, const X509_NAME *name) {
    return X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
}

static inline int lookout_MBSTRING_UTF8(void) { return MBSTRING_UTF8; }

/* ---- memory ---- */

static inline void lookout_OPENSSL_free(void *pointer) { OPENSSL_free(pointer); }

#endif
