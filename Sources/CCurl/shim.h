#ifndef HAUL_CCURL_SHIM_H
#define HAUL_CCURL_SHIM_H
#include <curl/curl.h>

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

static inline CURLMcode haul_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }

// CURLAUTH_* are macros of unsigned long casts, which Swift does not import.
static inline long haul_curlauth_basic(void) { return (long)CURLAUTH_BASIC; }

// The write callback's "pause me" answer is a macro.
static inline size_t haul_writefunc_pause(void) { return CURL_WRITEFUNC_PAUSE; }

// CURLMsg holds its result in a union Swift imports awkwardly.
static inline CURLcode haul_msg_result(CURLMsg *m) { return m->data.result; }
#endif
