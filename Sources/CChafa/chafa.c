/* libchafa (Debian's libchafa-dev): pictures at the terminal's real resolution. These helpers keep GLib's
   types on this side: Swift hands over RGB pixels and gets bytes or cells back (include/shim.h). libchafa is
   loaded when first used (CLoadOnUse), so the helpers first ask whether it could be: a picture not drawn,
   rather than an exit, where it cannot. */
#include "shim.h"
#include "load_on_use.h"
#include <stdlib.h>
#include <string.h>
#include <chafa.h>

#define CHAFA_FUNCTIONS(X) \
    X(ChafaCanvasConfig *, chafa_canvas_config_new, (void), ()) \
    X(void, chafa_canvas_config_unref, (ChafaCanvasConfig *config), (config)) \
    X(void, chafa_canvas_config_set_geometry, (ChafaCanvasConfig *config, gint width, gint height), \
      (config, width, height)) \
    X(void, chafa_canvas_config_set_cell_geometry, (ChafaCanvasConfig *config, gint cell_width, gint cell_height), \
      (config, cell_width, cell_height)) \
    X(void, chafa_canvas_config_set_canvas_mode, (ChafaCanvasConfig *config, ChafaCanvasMode mode), (config, mode)) \
    X(void, chafa_canvas_config_set_symbol_map, (ChafaCanvasConfig *config, const ChafaSymbolMap *symbol_map), \
      (config, symbol_map)) \
    X(void, chafa_canvas_config_set_dither_mode, (ChafaCanvasConfig *config, ChafaDitherMode dither_mode), \
      (config, dither_mode)) \
    X(void, chafa_canvas_config_set_pixel_mode, (ChafaCanvasConfig *config, ChafaPixelMode pixel_mode), \
      (config, pixel_mode)) \
    X(ChafaCanvas *, chafa_canvas_new, (const ChafaCanvasConfig *config), (config)) \
    X(void, chafa_canvas_unref, (ChafaCanvas *canvas), (canvas)) \
    X(void, chafa_canvas_draw_all_pixels, (ChafaCanvas *canvas, ChafaPixelType src_pixel_type, \
      const guint8 *src_pixels, gint src_width, gint src_height, gint src_rowstride), \
      (canvas, src_pixel_type, src_pixels, src_width, src_height, src_rowstride)) \
    X(GString *, chafa_canvas_print, (ChafaCanvas *canvas, ChafaTermInfo *term_info), (canvas, term_info)) \
    X(gunichar, chafa_canvas_get_char_at, (ChafaCanvas *canvas, gint x, gint y), (canvas, x, y)) \
    X(void, chafa_canvas_get_colors_at, (ChafaCanvas *canvas, gint x, gint y, gint *fg_out, gint *bg_out), \
      (canvas, x, y, fg_out, bg_out)) \
    X(ChafaSymbolMap *, chafa_symbol_map_new, (void), ()) \
    X(void, chafa_symbol_map_unref, (ChafaSymbolMap *symbol_map), (symbol_map)) \
    X(void, chafa_symbol_map_add_by_tags, (ChafaSymbolMap *symbol_map, ChafaSymbolTags tags), (symbol_map, tags)) \
    X(void, chafa_symbol_map_remove_by_tags, (ChafaSymbolMap *symbol_map, ChafaSymbolTags tags), (symbol_map, tags)) \
    X(ChafaTermDb *, chafa_term_db_get_default, (void), ()) \
    X(ChafaTermInfo *, chafa_term_db_detect, (ChafaTermDb *term_db, gchar **envp), (term_db, envp)) \
    X(ChafaTermInfo *, chafa_term_db_get_fallback_info, (ChafaTermDb *term_db), (term_db)) \
    X(void, chafa_term_info_unref, (ChafaTermInfo *term_info), (term_info)) \
    X(gboolean, chafa_term_info_have_seq, (const ChafaTermInfo *term_info, ChafaTermSeq seq), (term_info, seq)) \
    X(void, chafa_term_info_supplement, (ChafaTermInfo *term_info, ChafaTermInfo *source), (term_info, source)) \
    X(void, chafa_calc_canvas_geometry, (gint src_width, gint src_height, gint *dest_width_inout, \
      gint *dest_height_inout, gfloat font_ratio, gboolean zoom, gboolean stretch), \
      (src_width, src_height, dest_width_inout, dest_height_inout, font_ratio, zoom, stretch)) \
    X(gchar *, g_string_free, (GString *string, gboolean free_segment), (string, free_segment))

// libchafa, and through it GLib's g_string_free, loaded when a picture is first drawn.
HAUL_LIBRARY(chafa, "libchafa.so.0", CHAFA_FUNCTIONS)
#define FORWARD(type, name, parameters, arguments) HAUL_FORWARD(chafa, type, name, parameters, arguments)
CHAFA_FUNCTIONS(FORWARD)
#undef FORWARD

int haul_chafa_load(char *message, size_t size) { return haul_library_load(&chafa, message, size); }

int haul_chafa_detect_pixels(char **envp) {
    if (haul_chafa_load(NULL, 0) != 0) return HAUL_PIXELS_SYMBOLS;
    ChafaTermInfo *info = chafa_term_db_detect(chafa_term_db_get_default(), envp);
    int mode = HAUL_PIXELS_SYMBOLS;
    if (chafa_term_info_have_seq(info, CHAFA_TERM_SEQ_BEGIN_KITTY_IMMEDIATE_IMAGE_V1)) mode = HAUL_PIXELS_KITTY;
    else if (chafa_term_info_have_seq(info, CHAFA_TERM_SEQ_BEGIN_ITERM2_IMAGE)) mode = HAUL_PIXELS_ITERM;
    else if (chafa_term_info_have_seq(info, CHAFA_TERM_SEQ_BEGIN_SIXELS)) mode = HAUL_PIXELS_SIXEL;
    chafa_term_info_unref(info);
    return mode;
}

/* `cell_width` x `cell_height`: a cell's size in pixels, as the terminal reports it (0: unknown, then 10 x 20,
   a cell about twice as tall as wide). It sets the aspect of the fit, and the resolution of pixel modes. */
static ChafaCanvas *haul_chafa_canvas(const unsigned char *rgb, int width, int height, int columns, int lines,
                                      int pixels, int colors, int cell_width, int cell_height, int *out_columns,
                                      int *out_lines) {
    gint w = columns > 0 ? columns : 1, h = lines > 0 ? lines : 1;
    if (cell_width <= 0 || cell_height <= 0) { cell_width = 10; cell_height = 20; }
    chafa_calc_canvas_geometry(width, height, &w, &h, (gfloat)cell_width / (gfloat)cell_height, FALSE, FALSE);
    if (w < 1) w = 1;
    if (h < 1) h = 1;
    ChafaSymbolMap *map = chafa_symbol_map_new();
    if (colors == HAUL_COLORS_NONE) {
        chafa_symbol_map_add_by_tags(map, CHAFA_SYMBOL_TAG_ASCII);
    } else {
        chafa_symbol_map_add_by_tags(map, CHAFA_SYMBOL_TAG_BLOCK | CHAFA_SYMBOL_TAG_BORDER | CHAFA_SYMBOL_TAG_SPACE
                                              | CHAFA_SYMBOL_TAG_QUAD | CHAFA_SYMBOL_TAG_HALF);
        chafa_symbol_map_remove_by_tags(map, CHAFA_SYMBOL_TAG_WIDE | CHAFA_SYMBOL_TAG_AMBIGUOUS);
    }
    ChafaCanvasConfig *config = chafa_canvas_config_new();
    chafa_canvas_config_set_geometry(config, w, h);
    chafa_canvas_config_set_cell_geometry(config, cell_width, cell_height);
    ChafaCanvasMode mode = CHAFA_CANVAS_MODE_TRUECOLOR;
    if (colors == HAUL_COLORS_256) mode = CHAFA_CANVAS_MODE_INDEXED_240;
    else if (colors == HAUL_COLORS_16) mode = CHAFA_CANVAS_MODE_INDEXED_16;
    else if (colors == HAUL_COLORS_NONE) mode = CHAFA_CANVAS_MODE_FGBG;
    chafa_canvas_config_set_canvas_mode(config, mode);
    ChafaPixelMode pixel = CHAFA_PIXEL_MODE_SYMBOLS;
    if (pixels == HAUL_PIXELS_SIXEL) pixel = CHAFA_PIXEL_MODE_SIXELS;
    else if (pixels == HAUL_PIXELS_KITTY) pixel = CHAFA_PIXEL_MODE_KITTY;
    else if (pixels == HAUL_PIXELS_ITERM) pixel = CHAFA_PIXEL_MODE_ITERM2;
    chafa_canvas_config_set_pixel_mode(config, pixel);
    chafa_canvas_config_set_dither_mode(config, (colors == HAUL_COLORS_256 || colors == HAUL_COLORS_16)
                                                    ? CHAFA_DITHER_MODE_ORDERED : CHAFA_DITHER_MODE_NONE);
    chafa_canvas_config_set_symbol_map(config, map);
    ChafaCanvas *canvas = chafa_canvas_new(config);
    chafa_canvas_config_unref(config);
    chafa_symbol_map_unref(map);
    chafa_canvas_draw_all_pixels(canvas, CHAFA_PIXEL_RGB8, rgb, width, height, width * 3);
    *out_columns = w;
    *out_lines = h;
    return canvas;
}

char *haul_chafa_print(const unsigned char *rgb, int width, int height, int columns, int lines, int pixels,
                       int colors, int cell_width, int cell_height, char **envp, size_t *out_length,
                       int *out_columns, int *out_lines) {
    if (haul_chafa_load(NULL, 0) != 0) return NULL;
    ChafaCanvas *canvas = haul_chafa_canvas(rgb, width, height, columns, lines, pixels, colors, cell_width,
                                            cell_height, out_columns, out_lines);
    ChafaTermDb *db = chafa_term_db_get_default();
    ChafaTermInfo *info = chafa_term_db_detect(db, envp);
    ChafaTermInfo *fallback = chafa_term_db_get_fallback_info(db);
    chafa_term_info_supplement(info, fallback);
    chafa_term_info_unref(fallback);
    GString *printed = chafa_canvas_print(canvas, info);
    chafa_term_info_unref(info);
    chafa_canvas_unref(canvas);
    char *bytes = malloc(printed->len + 1);
    if (bytes) {
        memcpy(bytes, printed->str, printed->len);
        bytes[printed->len] = 0;
        *out_length = printed->len;
    } else {
        *out_length = 0;
    }
    g_string_free(printed, TRUE);
    return bytes;
}

int haul_chafa_cells(const unsigned char *rgb, int width, int height, int columns, int lines, int colors,
                     int cell_width, int cell_height, unsigned int **out_chars, int **out_fg, int **out_bg,
                     int *out_columns, int *out_lines) {
    if (haul_chafa_load(NULL, 0) != 0) return -1;
    ChafaCanvas *canvas = haul_chafa_canvas(rgb, width, height, columns, lines, HAUL_PIXELS_SYMBOLS, colors, cell_width,
                                            cell_height, out_columns, out_lines);
    size_t count = (size_t)*out_columns * (size_t)*out_lines;
    unsigned int *chars = malloc(count * sizeof(unsigned int));
    int *fg = malloc(count * sizeof(int));
    int *bg = malloc(count * sizeof(int));
    if (!chars || !fg || !bg) {
        free(chars); free(fg); free(bg);
        chafa_canvas_unref(canvas);
        return -1;
    }
    for (int y = 0; y < *out_lines; y++) {
        for (int x = 0; x < *out_columns; x++) {
            size_t i = (size_t)y * (size_t)*out_columns + (size_t)x;
            chars[i] = chafa_canvas_get_char_at(canvas, x, y);
            chafa_canvas_get_colors_at(canvas, x, y, &fg[i], &bg[i]);
        }
    }
    chafa_canvas_unref(canvas);
    *out_chars = chars;
    *out_fg = fg;
    *out_bg = bg;
    return 0;
}
