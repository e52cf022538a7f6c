#include "generated_bytes.h"
#include <string.h>

static inline uint64_t word(uint64_t seed, uint64_t index) {
    uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// The little-endian bytes of `value` from byte `from`, `count` of them.
static inline void put(unsigned char *out, uint64_t value, unsigned from, size_t count) {
    for (size_t i = 0; i < count; i++) out[i] = (unsigned char)(value >> (8 * (from + i)));
}

void haul_generated_fill(uint64_t seed, uint64_t offset, unsigned char *buffer, size_t count) {
    size_t written = 0;
    uint64_t index = offset >> 3;
    unsigned skip = (unsigned)(offset & 7);
    if (count == 0) return;
    if (skip != 0) {
        written = 8 - skip < count ? 8 - skip : count;
        put(buffer, word(seed, index), skip, written);
        index++;
    }
    for (; count - written >= 8; written += 8, index++) {
        uint64_t value = word(seed, index);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        memcpy(buffer + written, &value, 8);
#else
        put(buffer + written, value, 0, 8);
#endif
    }
    if (written < count) put(buffer + written, word(seed, index), 0, count - written);
}
