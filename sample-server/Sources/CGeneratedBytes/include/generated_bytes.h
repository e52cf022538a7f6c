// The sample server's generated content (GeneratedFile): word i of a file is a splitmix64 mix of its seed and
// i, stored little-endian. In C so that a debug build (and the thread sanitizer's, which instruments every
// store of our Swift code) serves and checks tens of megabytes at the speed of an optimised loop.
#ifndef GENERATED_BYTES_H
#define GENERATED_BYTES_H
#include <stddef.h>
#include <stdint.h>

/// Fills `count` bytes at `buffer` with the stream of `seed` from byte `offset` on.
void haul_generated_fill(uint64_t seed, uint64_t offset, unsigned char *buffer, size_t count);

#endif
