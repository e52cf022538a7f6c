// libcurl, loaded when first used rather than by the program loader. See shim.h.
// curl.h would make curl_easy_setopt a type-checking macro under some compilers: the calls below go through
// the loaded function pointers, with the types the wrappers name.
#define CURL_DISABLE_TYPECHECK
#include "shim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

// Every libcurl function haul calls: X(return type, name, (parameters), (arguments)).
#define HAUL_CURL_FUNCTIONS(X) \
    X(CURLcode, curl_global_init, (long flags), (flags)) \
    X(CURL *, curl_easy_init, (void), ()) \
    X(void, curl_easy_cleanup, (CURL *h), (h)) \
    X(void, curl_easy_reset, (CURL *h), (h)) \
    X(CURLcode, curl_easy_pause, (CURL *h, int bitmask), (h, bitmask)) \
    X(const char *, curl_easy_strerror, (CURLcode code), (code)) \
    X(struct curl_slist *, curl_slist_append, (struct curl_slist *list, const char *text), (list, text)) \
    X(void, curl_slist_free_all, (struct curl_slist *list), (list)) \
    X(time_t, curl_getdate, (const char *text, const time_t *unused), (text, unused)) \
    X(CURLM *, curl_multi_init, (void), ()) \
    X(CURLMcode, curl_multi_cleanup, (CURLM *m), (m)) \
    X(CURLMcode, curl_multi_add_handle, (CURLM *m, CURL *h), (m, h)) \
    X(CURLMcode, curl_multi_remove_handle, (CURLM *m, CURL *h), (m, h)) \
    X(CURLMcode, curl_multi_perform, (CURLM *m, int *running), (m, running)) \
    X(CURLMcode, curl_multi_poll, (CURLM *m, struct curl_waitfd extra[], unsigned count, int timeout, int *ready), \
      (m, extra, count, timeout, ready)) \
    X(CURLMcode, curl_multi_wakeup, (CURLM *m), (m)) \
    X(CURLMsg *, curl_multi_info_read, (CURLM *m, int *left), (m, left)) \
    X(const char *, curl_multi_strerror, (CURLMcode code), (code)) \
    X(CURLSH *, curl_share_init, (void), ()) \
    X(CURLSHcode, curl_share_cleanup, (CURLSH *s), (s))

// The variadic ones, called through the typed wrappers of shim.h.
#define HAUL_CURL_VARIADIC(X) \
    X(CURLcode, curl_easy_setopt, (CURL *h, CURLoption o, ...)) \
    X(CURLcode, curl_easy_getinfo, (CURL *h, CURLINFO i, ...)) \
    X(CURLMcode, curl_multi_setopt, (CURLM *m, CURLMoption o, ...)) \
    X(CURLSHcode, curl_share_setopt, (CURLSH *s, CURLSHoption o, ...))

static struct {
#define FIELD(type, name, parameters, arguments) type (*name) parameters;
    HAUL_CURL_FUNCTIONS(FIELD)
#undef FIELD
#define VARIADIC_FIELD(type, name, parameters) type (*name) parameters;
    HAUL_CURL_VARIADIC(VARIADIC_FIELD)
#undef VARIADIC_FIELD
} curl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *failure; // set by `load` when libcurl or one of its functions is missing
static char failureText[512];

static void load(void) {
    // The soname of libcurl 7.16 onwards (every libcurl4 package): the one the headers describe. Asked to
    // bind lazily, though Debian links libcurl and most of the libraries it needs to bind at once
    // (DF_BIND_NOW), which the loader obeys whatever is asked: a libcurl built otherwise has its calls
    // into those libraries resolved when first made, not all at the load a download's first request
    // waits for. Every function haul calls is looked up below, so a libcurl without one is still refused
    // here.
    void *library = dlopen("libcurl.so.4", RTLD_LAZY | RTLD_LOCAL);
    if (library == NULL) {
        snprintf(failureText, sizeof failureText, "%s", dlerror());
        failure = failureText;
        return;
    }
#define LOOKUP(name) \
    if ((*(void **)&curl.name = dlsym(library, #name)) == NULL) { \
        snprintf(failureText, sizeof failureText, "libcurl.so.4 has no %s", #name); \
        failure = failureText; \
        return; \
    }
#define LOOKUP_FUNCTION(type, name, parameters, arguments) LOOKUP(name)
#define LOOKUP_VARIADIC(type, name, parameters) LOOKUP(name)
    HAUL_CURL_FUNCTIONS(LOOKUP_FUNCTION)
    HAUL_CURL_VARIADIC(LOOKUP_VARIADIC)
#undef LOOKUP_FUNCTION
#undef LOOKUP_VARIADIC
#undef LOOKUP
}

// Before any call: libcurl loaded, or a one-line message and exit 1 (haul cannot download without it).
static void need(void) {
    pthread_once(&once, load);
    if (failure != NULL) {
        fprintf(stderr, "haul: cannot load libcurl: %s\n", failure);
        fflush(stderr);
        _exit(1);
    }
}

void haul_curl_load(void) { need(); }

#define DEFINE(type, name, parameters, arguments) \
    type name parameters { need(); return curl.name arguments; }
HAUL_CURL_FUNCTIONS(DEFINE)
#undef DEFINE

CURLcode haul_easy_setopt_long(CURL *h, CURLoption o, long v) { need(); return curl.curl_easy_setopt(h, o, v); }
CURLcode haul_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { need(); return curl.curl_easy_setopt(h, o, v); }
CURLcode haul_easy_setopt_ptr(CURL *h, CURLoption o, void *v) { need(); return curl.curl_easy_setopt(h, o, v); }
CURLcode haul_easy_setopt_string(CURL *h, CURLoption o, const char *v) { need(); return curl.curl_easy_setopt(h, o, v); }
CURLcode haul_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { need(); return curl.curl_easy_setopt(h, o, v); }
CURLcode haul_easy_setopt_data_callback(CURL *h, CURLoption o, haul_data_callback f) {
    need();
    return curl.curl_easy_setopt(h, o, f);
}
CURLcode haul_easy_setopt_xferinfo(CURL *h, haul_xferinfo_callback f) {
    need();
    return curl.curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, f);
}

CURLcode haul_easy_setopt_sshkey(CURL *h, curl_sshkeycallback f) {
    need();
    return curl.curl_easy_setopt(h, CURLOPT_SSH_KEYFUNCTION, f);
}

CURLcode haul_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { need(); return curl.curl_easy_getinfo(h, i, v); }
CURLcode haul_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { need(); return curl.curl_easy_getinfo(h, i, v); }
CURLcode haul_easy_getinfo_string(CURL *h, CURLINFO i, char **v) { need(); return curl.curl_easy_getinfo(h, i, v); }
CURLcode haul_easy_getinfo_ptr(CURL *h, CURLINFO i, void **v) { need(); return curl.curl_easy_getinfo(h, i, v); }

CURLMcode haul_multi_setopt_long(CURLM *m, CURLMoption o, long v) { need(); return curl.curl_multi_setopt(m, o, v); }
CURLSHcode haul_share_setopt_long(CURLSH *s, CURLSHoption o, long v) { need(); return curl.curl_share_setopt(s, o, v); }
