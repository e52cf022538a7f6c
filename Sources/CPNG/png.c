/* libpng (Debian's libpng-dev) through its progressive reader (include/shim.h). libpng reports fatal errors with
   longjmp, which Swift cannot take: the helpers keep every libpng call on this side. libpng is loaded when first
   used (CLoadOnUse): where it cannot be, the helpers fail as for a picture they cannot read. */
#include "shim.h"
#include "load_on_use.h"
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#define PNG_FUNCTIONS(X) \
    X(int, png_sig_cmp, (png_const_bytep sig, size_t start, size_t num_to_check), (sig, start, num_to_check)) \
    X(png_structp, png_create_read_struct, (png_const_charp user_png_ver, png_voidp error_ptr, png_error_ptr error_fn, \
      png_error_ptr warn_fn), (user_png_ver, error_ptr, error_fn, warn_fn)) \
    X(png_structp, png_create_write_struct, (png_const_charp user_png_ver, png_voidp error_ptr, \
      png_error_ptr error_fn, png_error_ptr warn_fn), (user_png_ver, error_ptr, error_fn, warn_fn)) \
    X(png_infop, png_create_info_struct, (png_const_structrp png_ptr), (png_ptr)) \
    X(void, png_destroy_read_struct, (png_structpp png_ptr_ptr, png_infopp info_ptr_ptr, png_infopp end_info_ptr_ptr), \
      (png_ptr_ptr, info_ptr_ptr, end_info_ptr_ptr)) \
    X(void, png_destroy_write_struct, (png_structpp png_ptr_ptr, png_infopp info_ptr_ptr), (png_ptr_ptr, info_ptr_ptr)) \
    X(jmp_buf *, png_set_longjmp_fn, (png_structrp png_ptr, png_longjmp_ptr longjmp_fn, size_t jmp_buf_size), \
      (png_ptr, longjmp_fn, jmp_buf_size)) \
    X(png_uint_32, png_get_image_width, (png_const_structrp png_ptr, png_const_inforp info_ptr), (png_ptr, info_ptr)) \
    X(png_uint_32, png_get_image_height, (png_const_structrp png_ptr, png_const_inforp info_ptr), (png_ptr, info_ptr)) \
    X(png_voidp, png_get_io_ptr, (png_const_structrp png_ptr), (png_ptr)) \
    X(png_voidp, png_get_progressive_ptr, (png_const_structrp png_ptr), (png_ptr)) \
    X(size_t, png_get_rowbytes, (png_const_structrp png_ptr, png_const_inforp info_ptr), (png_ptr, info_ptr)) \
    X(void, png_process_data, (png_structrp png_ptr, png_inforp info_ptr, png_bytep buffer, size_t buffer_size), \
      (png_ptr, info_ptr, buffer, buffer_size)) \
    X(void, png_progressive_combine_row, (png_const_structrp png_ptr, png_bytep old_row, png_const_bytep new_row), \
      (png_ptr, old_row, new_row)) \
    X(void, png_read_update_info, (png_structrp png_ptr, png_inforp info_ptr), (png_ptr, info_ptr)) \
    X(void, png_set_IHDR, (png_const_structrp png_ptr, png_inforp info_ptr, png_uint_32 width, png_uint_32 height, \
      int bit_depth, int color_type, int interlace_method, int compression_method, int filter_method), \
      (png_ptr, info_ptr, width, height, bit_depth, color_type, interlace_method, compression_method, filter_method)) \
    X(void, png_set_chunk_malloc_max, (png_structrp png_ptr, png_alloc_size_t user_chunk_cache_max), \
      (png_ptr, user_chunk_cache_max)) \
    X(void, png_set_expand, (png_structrp png_ptr), (png_ptr)) \
    X(void, png_set_gray_to_rgb, (png_structrp png_ptr), (png_ptr)) \
    X(int, png_set_interlace_handling, (png_structrp png_ptr), (png_ptr)) \
    X(void, png_set_progressive_read_fn, (png_structrp png_ptr, png_voidp progressive_ptr, \
      png_progressive_info_ptr info_fn, png_progressive_row_ptr row_fn, png_progressive_end_ptr end_fn), \
      (png_ptr, progressive_ptr, info_fn, row_fn, end_fn)) \
    X(void, png_set_rows, (png_const_structrp png_ptr, png_inforp info_ptr, png_bytepp row_pointers), \
      (png_ptr, info_ptr, row_pointers)) \
    X(void, png_set_strip_16, (png_structrp png_ptr), (png_ptr)) \
    X(void, png_set_strip_alpha, (png_structrp png_ptr), (png_ptr)) \
    X(void, png_set_user_limits, (png_structrp png_ptr, png_uint_32 user_width_max, png_uint_32 user_height_max), \
      (png_ptr, user_width_max, user_height_max)) \
    X(void, png_set_write_fn, (png_structrp png_ptr, png_voidp io_ptr, png_rw_ptr write_data_fn, \
      png_flush_ptr output_flush_fn), (png_ptr, io_ptr, write_data_fn, output_flush_fn)) \
    X(void, png_write_png, (png_structrp png_ptr, png_inforp info_ptr, int transforms, png_voidp params), \
      (png_ptr, info_ptr, transforms, params))
// The two that never return: the library's call takes the thread elsewhere (longjmp) or ends the process.
#define PNG_NORETURN_FUNCTIONS(X) \
    X(void, png_error, (png_const_structrp png_ptr, png_const_charp error_message), (png_ptr, error_message)) \
    X(void, png_longjmp, (png_const_structrp png_ptr, int val), (png_ptr, val))
#define PNG_ALL_FUNCTIONS(X) PNG_FUNCTIONS(X) PNG_NORETURN_FUNCTIONS(X)

HAUL_LIBRARY(png, "libpng16.so.16", PNG_ALL_FUNCTIONS)
#define FORWARD(type, name, parameters, arguments) HAUL_FORWARD(png, type, name, parameters, arguments)
PNG_FUNCTIONS(FORWARD)
#undef FORWARD
#define FORWARD_NORETURN(type, name, parameters, arguments) \
    type name parameters { haul_library_need(&png); png_functions.name arguments; abort(); }
PNG_NORETURN_FUNCTIONS(FORWARD_NORETURN)
#undef FORWARD_NORETURN

int haul_png_load(char *message, size_t size) { return haul_library_load(&png, message, size); }

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

int haul_png_decode_rgb(const unsigned char *data, unsigned long length, int *out_width, int *out_height,
                        unsigned char **out_rgb, int *out_passes, int *out_rows) {
    *out_rgb = NULL;
    *out_width = *out_height = *out_passes = *out_rows = 0;
    if (data == NULL || length < 8 || haul_png_load(NULL, 0) != 0) return -1;
    if (png_sig_cmp((png_const_bytep)data, 0, 8) != 0) return -1;
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

int haul_png_encode_rgb(const unsigned char *rgb, int width, int height, int interlaced, unsigned char **out_data,
                        unsigned long *out_length) {
    *out_data = NULL;
    *out_length = 0;
    if (haul_png_load(NULL, 0) != 0) return -1;
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
