#ifndef HAUL_CCHAFA_SHIM_H
#define HAUL_CCHAFA_SHIM_H
/* Pictures drawn by libchafa (chafa.c): RGB pixels in, the terminal's bytes or symbol cells out. Nothing of
   chafa's or GLib's types crosses to Swift. */
#include <stddef.h>

enum { HAUL_PIXELS_SYMBOLS = 0, HAUL_PIXELS_SIXEL = 1, HAUL_PIXELS_KITTY = 2, HAUL_PIXELS_ITERM = 3 };
enum { HAUL_COLORS_TRUE = 0, HAUL_COLORS_256 = 1, HAUL_COLORS_16 = 2, HAUL_COLORS_NONE = 3 };

/* Loads libchafa now: 0, or -1 with why not in `message` (at most `size` bytes, NUL-terminated; none when
   `message` is NULL). The helpers below ask this first, and draw nothing where it cannot be loaded. */
int haul_chafa_load(char *message, size_t size);

/* What the terminal described by `envp` (TERM, TERM_PROGRAM, KITTY_WINDOW_ID, ...) draws pictures with, as
   chafa's own tool decides it: the first of kitty, iTerm2 and sixel whose sequences its database knows for
   that terminal, else symbols. */
int haul_chafa_detect_pixels(char **envp);

/* The picture as the terminal's bytes for `pixels` (escape sequences, or symbols with colour sequences), in a
   malloc'd buffer of *out_length bytes (free it with free()); NULL when libchafa cannot be loaded. The
   sequences are those chafa's database has for the terminal of `envp`, supplemented with its defaults, so a
   mode asked for by name always has them. `cell_width` x `cell_height`: a cell's size in pixels, as the
   terminal reports it (0: unknown, then 10 x 20). */
char *haul_chafa_print(const unsigned char *rgb, int width, int height, int columns, int lines, int pixels,
                       int colors, int cell_width, int cell_height, char **envp, size_t *out_length,
                       int *out_columns, int *out_lines);

/* The picture as symbol cells, for a screen that draws its own cells: per cell, its character (a Unicode scalar)
   and its foreground and background (0xRRGGBB in true colour, a palette index otherwise, -1 for the terminal's
   own). The arrays hold *out_columns * *out_lines entries, row by row; free each with free(). -1 when libchafa
   cannot be loaded or memory runs out. */
int haul_chafa_cells(const unsigned char *rgb, int width, int height, int columns, int lines, int colors,
                     int cell_width, int cell_height, unsigned int **out_chars, int **out_fg, int **out_bg,
                     int *out_columns, int *out_lines);
#endif
