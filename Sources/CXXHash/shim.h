#ifndef HAUL_CXXHASH_SHIM_H
#define HAUL_CXXHASH_SHIM_H
/* libxxhash (Debian's libxxhash-dev): XXH3, the fast checksum of the blocks a download records. */
#include <xxhash.h>

#if defined(__x86_64__)
/* The library's runtime dispatch: the widest vector unit the CPU has (AVX-512, AVX2, else SSE2). The plain
   XXH3_64bits of a distribution's build is its SSE2 code, about three times the instructions a byte on a
   CPU with AVX2. Same algorithm, same values: XXH3's output does not depend on the vector width. */
#define XXH_DISPATCH_DISABLE_REPLACE
#include <xxh_x86dispatch.h>
static inline XXH64_hash_t haul_xxh3(const void *input, size_t length) {
    return XXH3_64bits_dispatch(input, length);
}
#else
static inline XXH64_hash_t haul_xxh3(const void *input, size_t length) { return XXH3_64bits(input, length); }
#endif

#endif
