#ifndef HAUL_CXXHASH_SHIM_H
#define HAUL_CXXHASH_SHIM_H
/* libxxhash (Debian's libxxhash-dev): XXH3, the fast checksum of the blocks a download records. */
#include <xxhash.h>
#endif
