// libjpeg, loaded when a JPEG is first decoded or encoded (CLoadOnUse): the helpers below (include/shim.h) first
// ask whether it could be, and fail as for a damaged picture where it cannot.
#include "shim.h"
#include "load_on_use.h"
// libjpeg's header needs stdio (FILE) and size_t declared first.
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <jpeglib.h>
#include <jerror.h>

#define JPEG_FUNCTIONS(X) \
    X(struct jpeg_error_mgr *, jpeg_std_error, (struct jpeg_error_mgr *err), (err)) \
    X(void, jpeg_CreateCompress, (j_compress_ptr cinfo, int version, size_t structsize), (cinfo, version, structsize)) \
    X(void, jpeg_CreateDecompress, (j_decompress_ptr cinfo, int version, size_t structsize), \
      (cinfo, version, structsize)) \
    X(void, jpeg_destroy_compress, (j_compress_ptr cinfo), (cinfo)) \
    X(void, jpeg_destroy_decompress, (j_decompress_ptr cinfo), (cinfo)) \
    X(void, jpeg_mem_dest, (j_compress_ptr cinfo, unsigned char **outbuffer, unsigned long *outsize), \
      (cinfo, outbuffer, outsize)) \
    X(void, jpeg_mem_src, (j_decompress_ptr cinfo, const unsigned char *inbuffer, unsigned long insize), \
      (cinfo, inbuffer, insize)) \
    X(void, jpeg_set_defaults, (j_compress_ptr cinfo), (cinfo)) \
    X(void, jpeg_set_quality, (j_compress_ptr cinfo, int quality, boolean force_baseline), \
      (cinfo, quality, force_baseline)) \
    X(void, jpeg_simple_progression, (j_compress_ptr cinfo), (cinfo)) \
    X(void, jpeg_start_compress, (j_compress_ptr cinfo, boolean write_all_tables), (cinfo, write_all_tables)) \
    X(JDIMENSION, jpeg_write_scanlines, (j_compress_ptr cinfo, JSAMPARRAY scanlines, JDIMENSION num_lines), \
      (cinfo, scanlines, num_lines)) \
    X(void, jpeg_finish_compress, (j_compress_ptr cinfo), (cinfo)) \
    X(int, jpeg_read_header, (j_decompress_ptr cinfo, boolean require_image), (cinfo, require_image)) \
    X(boolean, jpeg_start_decompress, (j_decompress_ptr cinfo), (cinfo)) \
    X(JDIMENSION, jpeg_read_scanlines, (j_decompress_ptr cinfo, JSAMPARRAY scanlines, JDIMENSION max_lines), \
      (cinfo, scanlines, max_lines)) \
    X(boolean, jpeg_finish_decompress, (j_decompress_ptr cinfo), (cinfo))

HAUL_LIBRARY(jpeg, "libjpeg.so.62", JPEG_FUNCTIONS)
#define FORWARD(type, name, parameters, arguments) HAUL_FORWARD(jpeg, type, name, parameters, arguments)
JPEG_FUNCTIONS(FORWARD)
#undef FORWARD

int haul_jpeg_load(char *message, size_t size) { return haul_library_load(&jpeg, message, size); }

// libjpeg reports fatal errors through `error_exit`, which by default calls exit(). Swift cannot longjmp, so the
// helpers below do all libjpeg work in C behind a setjmp-based error manager: a fatal error returns a status code,
// and warnings (such as a truncated file) are counted silently instead of being printed on stderr.

/// Error manager that turns fatal libjpeg errors into a longjmp back to the helper that installed it.
struct haul_jpeg_error_manager {
    struct jpeg_error_mgr base;
    jmp_buf jump;
    // Kept here rather than in locals so their values survive a longjmp.
    unsigned char *buffer;
    unsigned long buffer_length;
};

static void haul_jpeg_error_exit(j_common_ptr cinfo) {
    struct haul_jpeg_error_manager *manager = (struct haul_jpeg_error_manager *)cinfo->err;
    longjmp(manager->jump, 1);
}

static void haul_jpeg_emit_message(j_common_ptr cinfo, int msg_level) {
    if (msg_level < 0) {
        cinfo->err->num_warnings++;
    }
}

static struct jpeg_error_mgr *haul_jpeg_install_errors(struct haul_jpeg_error_manager *manager) {
    memset(manager, 0, sizeof(*manager));
    jpeg_std_error(&manager->base);
    manager->base.error_exit = haul_jpeg_error_exit;
    manager->base.emit_message = haul_jpeg_emit_message;
    return &manager->base;
}


int haul_jpeg_decode_rgb(const unsigned char *data, unsigned long length, int *out_width, int *out_height,
                         unsigned char **out_rgb, int *out_rows_decoded) {
    int image_width, image_height;
    return haul_jpeg_decode_rgb_scaled(data, length, 0, out_width, out_height, out_rgb, out_rows_decoded,
                                       &image_width, &image_height);
}

int haul_jpeg_decode_rgb_scaled(const unsigned char *data, unsigned long length, unsigned long max_pixels,
                                int *out_width, int *out_height, unsigned char **out_rgb, int *out_rows_decoded,
                                int *out_image_width, int *out_image_height) {
    struct jpeg_decompress_struct cinfo;
    struct haul_jpeg_error_manager errors;
    *out_width = 0;
    *out_height = 0;
    *out_rgb = NULL;
    *out_rows_decoded = 0;
    *out_image_width = 0;
    *out_image_height = 0;
    if (data == NULL || length < 4 || haul_jpeg_load(NULL, 0) != 0) {
        return -1;
    }
    cinfo.err = haul_jpeg_install_errors(&errors);
    if (setjmp(errors.jump)) {
        // A fatal error after the image buffer exists still returns what was decoded.
        int rows = (int)cinfo.output_scanline;
        int code = errors.base.msg_code;
        *out_image_width = (int)cinfo.image_width;
        *out_image_height = (int)cinfo.image_height;
        jpeg_destroy_decompress(&cinfo);
        if (errors.buffer == NULL) {
            // Too large for libjpeg's limits or for its memory cap: told apart from damage.
            return (code == JERR_IMAGE_TOO_BIG || code == JERR_OUT_OF_MEMORY || code == JERR_NO_BACKING_STORE
                    || code == JERR_WIDTH_OVERFLOW) ? -2 : -1;
        }
        *out_rgb = errors.buffer;
        *out_rows_decoded = rows;
        return 1;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, (unsigned char *)data, length);
    jpeg_read_header(&cinfo, TRUE);
    *out_image_width = (int)cinfo.image_width;
    *out_image_height = (int)cinfo.image_height;
    if (cinfo.image_width == 0 || cinfo.image_height == 0) {
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    if (cinfo.image_width > 65500 || cinfo.image_height > 65500
        || (unsigned long)cinfo.image_width * cinfo.image_height > 100000000UL) {
        jpeg_destroy_decompress(&cinfo);
        return -2;
    }
    cinfo.mem->max_memory_to_use = 256L << 20;
    cinfo.out_color_space = JCS_RGB;
    cinfo.scale_num = 1;
    cinfo.scale_denom = 1;
    while (max_pixels > 0 && cinfo.scale_denom < 8
           && ((unsigned long)cinfo.image_width / cinfo.scale_denom) * (cinfo.image_height / cinfo.scale_denom)
                  > max_pixels) {
        cinfo.scale_denom *= 2;
    }
    jpeg_start_decompress(&cinfo);
    unsigned long width = cinfo.output_width;
    unsigned long height = cinfo.output_height;
    if (width == 0 || height == 0 || width * height > 100000000UL || cinfo.output_components != 3) {
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    *out_width = (int)width;
    *out_height = (int)height;
    size_t stride = (size_t)width * 3;
    errors.buffer = (unsigned char *)malloc(stride * height);
    if (errors.buffer == NULL) {
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    memset(errors.buffer, 128, stride * height);
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = errors.buffer + (size_t)cinfo.output_scanline * stride;
        if (jpeg_read_scanlines(&cinfo, &row, 1) != 1) {
            break;
        }
    }
    *out_rows_decoded = (int)cinfo.output_scanline;
    if (cinfo.output_scanline == cinfo.output_height) {
        jpeg_finish_decompress(&cinfo);
    }
    int status = errors.base.num_warnings > 0 ? 1 : 0;
    jpeg_destroy_decompress(&cinfo);
    *out_rgb = errors.buffer;
    return status;
}

void haul_jpeg_free(void *buffer) {
    free(buffer);
}

int haul_jpeg_encode_rgb(const unsigned char *rgb, int width, int height, int quality, int progressive,
                         unsigned char **out_data, unsigned long *out_length) {
    struct jpeg_compress_struct cinfo;
    struct haul_jpeg_error_manager errors;
    *out_data = NULL;
    *out_length = 0;
    if (rgb == NULL || width <= 0 || height <= 0 || haul_jpeg_load(NULL, 0) != 0) {
        return -1;
    }
    cinfo.err = haul_jpeg_install_errors(&errors);
    if (setjmp(errors.jump)) {
        jpeg_destroy_compress(&cinfo);
        free(errors.buffer);
        return -1;
    }
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, &errors.buffer, &errors.buffer_length);
    cinfo.image_width = (JDIMENSION)width;
    cinfo.image_height = (JDIMENSION)height;
    cinfo.input_components = 3;
    cinfo.in_color_space = JCS_RGB;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, quality, TRUE);
    if (progressive) {
        jpeg_simple_progression(&cinfo);
    }
    jpeg_start_compress(&cinfo, TRUE);
    size_t stride = (size_t)width * 3;
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = (JSAMPROW)(rgb + (size_t)cinfo.next_scanline * stride);
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    *out_data = errors.buffer;
    *out_length = errors.buffer_length;
    return 0;
}
