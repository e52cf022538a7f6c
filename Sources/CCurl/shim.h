#ifndef HAUL_CCURL_SHIM_H
#define HAUL_CCURL_SHIM_H
#include <curl/curl.h>
#include <openssl/crypto.h>

// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call.
// These typed wrappers, one per argument type, stand in for them
// (the same approach as swift-corelibs-foundation's CFURLSessionInterface.h).

static inline CURLcode haul_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode haul_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode haul_easy_setopt_ptr(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode haul_easy_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode haul_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }

typedef size_t (*haul_data_callback)(char *data, size_t size, size_t count, void *userdata);
static inline CURLcode haul_easy_setopt_data_callback(CURL *h, CURLoption o, haul_data_callback f) { return curl_easy_setopt(h, o, f); }

typedef int (*haul_xferinfo_callback)(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow);
static inline CURLcode haul_easy_setopt_xferinfo(CURL *h, haul_xferinfo_callback f) { return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, f); }

static inline CURLcode haul_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode haul_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode haul_easy_getinfo_string(CURL *h, CURLINFO i, char **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode haul_easy_getinfo_ptr(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }

// OpenSSL (libcurl's TLS) frees its global locks and tables in an atexit handler. The curl thread is not
// stopped before exit, so a handshake under way there (a CA file being read) would use them after they are
// freed: a crash on quit, seen under ThreadSanitizer. Asked for before OpenSSL's first use, the process
// exits with them in place. Returns 1 on success.
static inline int haul_openssl_keep_at_exit(void) { return OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL); }

static inline CURLMcode haul_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }

// CURLAUTH_* are macros of unsigned long casts, which Swift does not import.
static inline long haul_curlauth_basic(void) { return (long)CURLAUTH_BASIC; }

// The write callback's "pause me" answer is a macro.
static inline size_t haul_writefunc_pause(void) { return CURL_WRITEFUNC_PAUSE; }

// CURLMsg holds its result in a union Swift imports awkwardly.
static inline CURLcode haul_msg_result(CURLMsg *m) { return m->data.result; }
#endif
