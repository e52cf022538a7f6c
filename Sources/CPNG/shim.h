#ifndef HAUL_CPNG_SHIM_H
#define HAUL_CPNG_SHIM_H
/* libpng (Debian's libpng-dev) through its progressive reader: a PNG's prefix decodes as far as it goes, and an
   interlaced (Adam7) one gives the whole picture, coarse, after its first passes. libpng reports fatal errors
   with longjmp, which Swift cannot take: the helpers keep every libpng call on the C side. */
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

struct haul_png_state {
    unsigned char *rgb;
    png_uint_32 width, height;
    int interlaced;
    /* Rows filled (non-interlaced), or passes begun (interlaced). */
    png_uint_32 rows;
    int passes;
    int too_large;
    int done;
};

static void haul_png_info(png_structp png, png_infop info) {
    struct haul_png_state *state = (struct haul_png_state *)png_get_progressive_ptr(png);
    png_uint_32 width = png_get_image_width(png, info), height = png_get_image_height(png, info);
    if (width == 0 || height == 0 || width > 65500 || height > 65500
        || (unsigned long long)width * height > 100000000ULL) {
        state->width = width;
        state->height = height;
        state->too_large = 1;
        png_error(png, "too large");
    }
    png_set_expand(png);
    png_set_strip_16(png);
    png_set_strip_alpha(png);
    png_set_gray_to_rgb(png);
    state->interlaced = png_set_interlace_handling(png) > 1;
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != (size_t)width * 3) png_error(png, "unexpected row layout");
    state->rgb = malloc((size_t)width * height * 3);
    if (state->rgb == NULL) png_error(png, "out of memory");
    memset(state->rgb, 128, (size_t)width * height * 3);
    state->width = width;
    state->height = height;
}

static void haul_png_row(png_structp png, png_bytep new_row, png_uint_32 row, int pass) {
    struct haul_png_state *state = (struct haul_png_state *)png_get_progressive_ptr(png);
    if (new_row == NULL || state->rgb == NULL || row >= state->height) return;
    size_t stride = (size_t)state->width * 3;
    if (!state->interlaced) {
        memcpy(state->rgb + row * stride, new_row, stride);
        if (row + 1 > state->rows) state->rows = row + 1;
        return;
    }
    if (pass + 1 > state->passes) state->passes = pass + 1;
    /* libpng combines the pass's pixels into the row "blocky": each stands for the block the later passes will
       refine, so the picture is whole, coarse, early. */
    png_progressive_combine_row(png, state->rgb + row * stride, new_row);
}

static void haul_png_end(png_structp png, png_infop info) {
    (void)info;
    struct haul_png_state *state = (struct haul_png_state *)png_get_progressive_ptr(png);
    state->done = 1;
}

/* libpng's default handlers print "libpng warning: ..." and "libpng error: ..." on stderr: in the full-screen
   interface that is the terminal, under the picture. Errors go to the caller's setjmp without a word (the caller
   says what it could decode), warnings nowhere. */
static void haul_png_error(png_structp png, png_const_charp message) {
    (void)message;
    png_longjmp(png, 1);
}

static void haul_png_warning(png_structp png, png_const_charp message) {
    (void)png;
    (void)message;
}

/* Decodes a PNG (any prefix) to packed 8-bit RGB. Returns 0 complete, 1 partial (what decoded; the rest mid-gray),
   -1 not readable (not a PNG, header incomplete or damaged), -2 too large (over 100 Mpixel or 65500 a side).
   On 0 and 1, *out_rgb is malloc'd (free with free()). *out_width/*out_height are set when the header was read. */
static inline int haul_png_decode_rgb(const unsigned char *data, unsigned long length, int *out_width, int *out_height,
                                      unsigned char **out_rgb, int *out_passes, int *out_rows) {
    *out_rgb = NULL;
    *out_width = *out_height = *out_passes = *out_rows = 0;
    if (data == NULL || length < 8 || png_sig_cmp((png_const_bytep)data, 0, 8) != 0) return -1;
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, haul_png_error, haul_png_warning);
    if (png == NULL) return -1;
    png_infop info = png_create_info_struct(png);
    if (info == NULL) {
        png_destroy_read_struct(&png, NULL, NULL);
        return -1;
    }
    struct haul_png_state *state = calloc(1, sizeof(struct haul_png_state));
    if (state == NULL) {
        png_destroy_read_struct(&png, &info, NULL);
        return -1;
    }
    png_set_user_limits(png, 65500, 65500);
    png_set_chunk_malloc_max(png, 16 << 20);
    if (setjmp(png_jmpbuf(png))) {
        /* A damaged chunk or a bad CRC after some rows: keep what decoded. */
        png_destroy_read_struct(&png, &info, NULL);
        *out_width = (int)state->width;
        *out_height = (int)state->height;
        int too_large = state->too_large;
        unsigned char *rgb = state->rgb;
        *out_passes = state->passes;
        *out_rows = (int)state->rows;
        free(state);
        if (too_large) return -2;
        if (rgb == NULL) return -1;
        *out_rgb = rgb;
        return 1;
    }
    png_set_progressive_read_fn(png, state, haul_png_info, haul_png_row, haul_png_end);
    png_process_data(png, info, (png_bytep)data, length);
    png_destroy_read_struct(&png, &info, NULL);
    *out_width = (int)state->width;
    *out_height = (int)state->height;
    *out_passes = state->passes;
    *out_rows = (int)state->rows;
    int done = state->done;
    unsigned char *rgb = state->rgb;
    free(state);
    if (rgb == NULL) return -1;
    *out_rgb = rgb;
    return done ? 0 : 1;
}

struct haul_png_buffer {
    unsigned char *data;
    size_t length, capacity;
};

static void haul_png_write_data(png_structp png, png_bytep data, png_size_t length) {
    struct haul_png_buffer *buffer = (struct haul_png_buffer *)png_get_io_ptr(png);
    if (buffer->length + length > buffer->capacity) {
        size_t capacity = (buffer->capacity + length) * 2;
        unsigned char *grown = realloc(buffer->data, capacity);
        if (grown == NULL) png_error(png, "out of memory");
        buffer->data = grown;
        buffer->capacity = capacity;
    }
    memcpy(buffer->data + buffer->length, data, length);
    buffer->length += length;
}

static void haul_png_flush(png_structp png) { (void)png; }

/* Encodes packed RGB as a PNG (Adam7-interlaced when `interlaced`), for tests and the sample server. 0 on
   success with *out_data malloc'd (free with free()). */
static inline int haul_png_encode_rgb(const unsigned char *rgb, int width, int height, int interlaced,
                                      unsigned char **out_data, unsigned long *out_length) {
    *out_data = NULL;
    *out_length = 0;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, haul_png_error, haul_png_warning);
    if (png == NULL) return -1;
    png_infop info = png_create_info_struct(png);
    struct haul_png_buffer buffer = {NULL, 0, 0};
    if (info == NULL || setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(buffer.data);
        return -1;
    }
    png_set_write_fn(png, &buffer, haul_png_write_data, haul_png_flush);
    png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8, PNG_COLOR_TYPE_RGB,
                 interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_bytep *rows = malloc(sizeof(png_bytep) * (size_t)height);
    if (rows == NULL) png_error(png, "out of memory");
    for (int y = 0; y < height; y++) rows[y] = (png_bytep)(rgb + (size_t)y * (size_t)width * 3);
    png_set_rows(png, info, rows);
    png_write_png(png, info, PNG_TRANSFORM_IDENTITY, NULL);
    free(rows);
    png_destroy_write_struct(&png, &info);
    *out_data = buffer.data;
    *out_length = buffer.length;
    return 0;
}
#endif
