#ifndef HAUL_CJPEG_SHIM_H
#define HAUL_CJPEG_SHIM_H
// JPEG pictures through libjpeg (jpeg.c). libjpeg reports fatal errors through `error_exit`, which by default
// calls exit(); Swift cannot longjmp, so the helpers do all libjpeg work in C behind a setjmp-based error
// manager: a fatal error returns a status code, and warnings (such as a truncated file) are counted silently
// instead of being printed on stderr. libjpeg is loaded when first used: where it cannot be, the helpers fail
// as for a picture they cannot read.
#include <stddef.h>

/// Loads libjpeg now: 0, or -1 with why not in `message` (at most `size` bytes, NUL-terminated; none when
/// `message` is NULL).
int haul_jpeg_load(char *message, size_t size);

/// Decodes a JPEG (baseline or progressive, complete or truncated) into packed 8-bit RGB.
///
/// A truncated file decodes as far as its data goes: a progressive JPEG cut anywhere after its first scan yields the
/// full width x height, blurred; a baseline one yields its top rows. Rows that were never reached stay mid-gray.
///
/// - Parameters:
///   - data, length: the JPEG bytes (any prefix of a file).
///   - out_width, out_height: the image size in pixels.
///   - out_rgb: on success, a malloc'd buffer of width * height * 3 bytes; release it with `haul_jpeg_free`.
///   - out_rows_decoded: how many rows libjpeg produced from the data (height unless decoding stopped early).
/// - Returns: 0 on success (possibly with missing data), 1 when the data had to be padded or was damaged (the image
///   is still usable), -1 when no image could be read (not a JPEG, header incomplete, or larger than 100 Mpixel).
///   On -1 nothing is allocated and `*out_rgb` is NULL.
int haul_jpeg_decode_rgb(const unsigned char *data, unsigned long length, int *out_width, int *out_height,
                         unsigned char **out_rgb, int *out_rows_decoded);

/// `haul_jpeg_decode_rgb`, decoded at 1/2, 1/4 or 1/8 of the size (libjpeg's DCT scaling: less work and memory)
/// while the picture has more than `max_pixels` (0: full size). The picture's own size goes to
/// `out_image_width` / `out_image_height`. Bounded whatever the data says: a picture over 100 Mpixel or 65500 on
/// a side is refused after its header, before libjpeg allocates for it, and libjpeg's own memory is capped at
/// 256 MiB (a progressive picture's coefficient buffers).
int haul_jpeg_decode_rgb_scaled(const unsigned char *data, unsigned long length, unsigned long max_pixels,
                                int *out_width, int *out_height, unsigned char **out_rgb, int *out_rows_decoded,
                                int *out_image_width, int *out_image_height);

/// Releases a buffer returned by `haul_jpeg_decode_rgb` or `haul_jpeg_encode_rgb`. NULL is ignored.
void haul_jpeg_free(void *buffer);

/// Encodes packed 8-bit RGB (width * height * 3 bytes) as a JPEG in memory.
///
/// - Parameters:
///   - quality: 1...100.
///   - progressive: non-zero for a progressive JPEG (`jpeg_simple_progression`), zero for baseline.
///   - out_data, out_length: on success, a malloc'd buffer holding the file; release it with `haul_jpeg_free`.
/// - Returns: 0 on success, -1 on failure (nothing is allocated then).
int haul_jpeg_encode_rgb(const unsigned char *rgb, int width, int height, int quality, int progressive,
                         unsigned char **out_data, unsigned long *out_length);
#endif
