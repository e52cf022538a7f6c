#ifndef HAUL_CPNG_SHIM_H
#define HAUL_CPNG_SHIM_H
/* PNG pictures through libpng's progressive reader (png.c): a PNG's prefix decodes as far as it goes, and an
   interlaced (Adam7) one gives the whole picture, coarse, after its first passes. libpng is loaded when first
   used: where it cannot be, the helpers fail as for a picture they cannot read (-1). */
#include <stddef.h>

/* Loads libpng now: 0, or -1 with why not in `message` (at most `size` bytes, NUL-terminated; none when
   `message` is NULL). */
int haul_png_load(char *message, size_t size);

/* Decodes a PNG (any prefix) to packed 8-bit RGB. Returns 0 complete, 1 partial (what decoded; the rest mid-gray),
   -1 not readable (not a PNG, header incomplete or damaged), -2 too large (over 100 Mpixel or 65500 a side).
   On 0 and 1, *out_rgb is malloc'd (free with free()). *out_width and *out_height are set when the header was read. */
int haul_png_decode_rgb(const unsigned char *data, unsigned long length, int *out_width, int *out_height,
                        unsigned char **out_rgb, int *out_passes, int *out_rows);

/* Encodes packed RGB as a PNG (Adam7-interlaced when `interlaced`), for tests and the sample server. 0 on
   success with *out_data malloc'd (free with free()). */
int haul_png_encode_rgb(const unsigned char *rgb, int width, int height, int interlaced, unsigned char **out_data,
                        unsigned long *out_length);
#endif
