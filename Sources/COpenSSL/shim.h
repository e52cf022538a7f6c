#ifndef HAUL_COPENSSL_SHIM_H
#define HAUL_COPENSSL_SHIM_H
/* OpenSSL's libcrypto (Debian's libssl-dev): the digests of `--checksum` and `haul verify`. It is the library
   libcurl's TLS loads anyway, so a checksum adds no code to the binary and nothing to its start. */
#include <stddef.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
/* HMAC-SHA256: the sample server signs its links that expire. */
#include <openssl/hmac.h>

/* The algorithms, as FileDigest.Algorithm numbers them. */
enum { HAUL_DIGEST_SHA512 = 0, HAUL_DIGEST_SHA256 = 1, HAUL_DIGEST_SHA1 = 2, HAUL_DIGEST_MD5 = 3 };

/* A running digest, or NULL when the algorithm is unknown or this OpenSSL refuses it (a FIPS-only
   configuration refuses MD5). OpenSSL keeps its tables to the end of the process (no atexit clean-up that a
   thread still hashing could race). */
static inline EVP_MD_CTX *haul_digest_new(int algorithm) {
    OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
    const EVP_MD *md;
    switch (algorithm) {
    case HAUL_DIGEST_SHA512: md = EVP_sha512(); break;
    case HAUL_DIGEST_SHA256: md = EVP_sha256(); break;
    case HAUL_DIGEST_SHA1: md = EVP_sha1(); break;
    case HAUL_DIGEST_MD5: md = EVP_md5(); break;
    default: return NULL;
    }
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    if (context != NULL && EVP_DigestInit_ex(context, md, NULL) != 1) {
        EVP_MD_CTX_free(context);
        context = NULL;
    }
    return context;
}

/* Returns 1 on success. */
static inline int haul_digest_update(EVP_MD_CTX *context, const void *bytes, size_t count) {
    return EVP_DigestUpdate(context, bytes, count);
}

/* Writes the digest of everything fed so far into `out` (at least 64 bytes) and returns its length, or 0 on
   failure. The context goes on: it is finalised on a copy. */
static inline int haul_digest_peek(const EVP_MD_CTX *context, unsigned char *out) {
    EVP_MD_CTX *copy = EVP_MD_CTX_new();
    unsigned int length = 0;
    int ok = copy != NULL && EVP_MD_CTX_copy_ex(copy, context) == 1 && EVP_DigestFinal_ex(copy, out, &length) == 1;
    EVP_MD_CTX_free(copy);
    return ok ? (int)length : 0;
}

static inline void haul_digest_free(EVP_MD_CTX *context) { EVP_MD_CTX_free(context); }

#endif
