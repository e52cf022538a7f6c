#ifndef HAUL_CCURL_SHIM_H
#define HAUL_CCURL_SHIM_H
#include <curl/curl.h>
#include <openssl/crypto.h>

// libcurl is loaded at run time (curl.c): `haul` is not linked against it, so the loader does not map
// libcurl and its thirty libraries (TLS, SSH, LDAP, Kerberos, IDN...) before `main`. The first call of a
// curl function, from the thread that starts the curl driver while the command line is parsed, loads it.
// The curl functions haul calls are defined in curl.c with libcurl's own names and prototypes, each a call
// through the loaded function (a libcurl that cannot be loaded ends the process with a one-line message);
// the ones below are haul's own.

// Loads libcurl now, as the first call of a curl function would (a libcurl that cannot be loaded ends the
// process with a one-line message), for a thread that loads it ahead of the first call.
void haul_curl_load(void);

// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call.
// These typed wrappers, one per argument type, stand in for them
// (the same approach as swift-corelibs-foundation's CFURLSessionInterface.h).

CURLcode haul_easy_setopt_long(CURL *h, CURLoption o, long v);
CURLcode haul_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v);
CURLcode haul_easy_setopt_ptr(CURL *h, CURLoption o, void *v);
CURLcode haul_easy_setopt_string(CURL *h, CURLoption o, const char *v);
CURLcode haul_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v);

typedef size_t (*haul_data_callback)(char *data, size_t size, size_t count, void *userdata);
CURLcode haul_easy_setopt_data_callback(CURL *h, CURLoption o, haul_data_callback f);

typedef int (*haul_xferinfo_callback)(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow);
CURLcode haul_easy_setopt_xferinfo(CURL *h, haul_xferinfo_callback f);

// The SSH host key callback (CURLOPT_SSH_KEYFUNCTION), typed.
CURLcode haul_easy_setopt_sshkey(CURL *h, curl_sshkeycallback f);

CURLcode haul_easy_getinfo_long(CURL *h, CURLINFO i, long *v);
CURLcode haul_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v);
CURLcode haul_easy_getinfo_string(CURL *h, CURLINFO i, char **v);
CURLcode haul_easy_getinfo_ptr(CURL *h, CURLINFO i, void **v);

CURLMcode haul_multi_setopt_long(CURLM *m, CURLMoption o, long v);
CURLSHcode haul_share_setopt_long(CURLSH *s, CURLSHoption o, long v);

// OpenSSL (libcurl's TLS) frees its global locks and tables in an atexit handler. The curl thread is not
// stopped before exit, so a handshake under way there (a CA file being read) would use them after they are
// freed: a crash on quit, seen under ThreadSanitizer. Asked for before OpenSSL's first use, the process
// exits with them in place. Returns 1 on success.
static inline int haul_openssl_keep_at_exit(void) { return OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL); }

// OpenSSL's configuration file (the system's TLS policy among it), loaded now, as curl's init would load it
// (with the keep-at-exit above): two thirds of curl_global_init's time, which a thread that is waiting for
// libcurl's load anyway can spend instead. Returns 1 on success.
static inline int haul_openssl_load_config(void) {
    return OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG | OPENSSL_INIT_NO_ATEXIT, NULL);
}

// CURLAUTH_* are macros of unsigned long casts, which Swift does not import.
static inline long haul_curlauth_basic(void) { return (long)CURLAUTH_BASIC; }

// CURLSSH_AUTH_* are macros too: every method libssh2 offers (public key, the agent, password,
// keyboard-interactive), tried in libcurl's order.
static inline long haul_curlssh_auth_any(void) { return (long)CURLSSH_AUTH_ANY; }

// The write callback's "pause me" answer is a macro.
static inline size_t haul_writefunc_pause(void) { return CURL_WRITEFUNC_PAUSE; }

// CURLMsg holds its result in a union Swift imports awkwardly.
static inline CURLcode haul_msg_result(CURLMsg *m) { return m->data.result; }
#endif
