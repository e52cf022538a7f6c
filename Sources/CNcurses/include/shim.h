#ifndef HAUL_CNCURSES_SHIM_H
#define HAUL_CNCURSES_SHIM_H
// SwiftPM drops pkg-config -D flags, so ask for the wide-character API here.
#ifndef NCURSES_WIDECHAR
#define NCURSES_WIDECHAR 1
#endif
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE 1
#endif
#ifndef _XOPEN_SOURCE_EXTENDED
#define _XOPEN_SOURCE_EXTENDED 1
#endif
#include <locale.h>
#include <wchar.h>
#include <string.h>
#include <ncursesw/curses.h>

// Loads ncurses now: 0, or -1 with why not in `message` (at most `size` bytes, NUL-terminated; none when
// `message` is NULL). The screen asks this before its first curses call, and falls back to lines where it
// cannot be loaded; a curses function called without it loads it, or exits with a one-line message.
int haul_ncurses_load(char *message, size_t size);

// Curses macros are invisible to Swift; these typed wrappers stand in for them.
static inline int haul_getmaxy(WINDOW *w) { return getmaxy(w); }
static inline int haul_getmaxx(WINDOW *w) { return getmaxx(w); }
// ncurses is loaded when first used (ncurses.c): its variables are read through the loaded library.
WINDOW *haul_stdscr(void);
static inline int haul_color_pair(int n) { return (int)COLOR_PAIR(n); }
int haul_colors(void);
static inline int haul_key_resize(void) { return KEY_RESIZE; }
static inline attr_t haul_a_bold(void) { return A_BOLD; }
static inline attr_t haul_a_reverse(void) { return A_REVERSE; }
static inline attr_t haul_a_dim(void) { return A_DIM; }

// Used by HaulTUI's NcursesTerminal.
#include <langinfo.h>
#include <sys/ioctl.h>
/// The terminal's size from the kernel (TIOCGWINSZ); 0 on success.
static inline int haul_window_size(int fd, int *rows, int *columns) {
    struct winsize size;
    if (ioctl(fd, TIOCGWINSZ, &size) != 0 || size.ws_row == 0 || size.ws_col == 0) return -1;
    *rows = size.ws_row;
    *columns = size.ws_col;
    return 0;
}
/// Whether the current LC_CTYPE encodes text as UTF-8.
static inline int haul_locale_is_utf8(void) {
    const char *codeset = nl_langinfo(CODESET);
    return codeset != NULL && (strcmp(codeset, "UTF-8") == 0 || strcmp(codeset, "utf8") == 0);
}
/// Draws one cell: a spacing character plus up to four combining ones (`text`, NUL-terminated).
static inline int haul_put_cell(WINDOW *w, int y, int x, const wchar_t *text, attr_t attributes, int pair) {
    cchar_t cell;
    if (setcchar(&cell, text, attributes, (short)pair, NULL) != OK) return ERR;
    return mvwadd_wch(w, y, x, &cell);
}
static inline attr_t haul_a_normal(void) { return A_NORMAL; }
int haul_color_pairs(void);
static inline FILE *haul_stdin(void) { return stdin; }
static inline FILE *haul_stdout(void) { return stdout; }
/// The C library's column count for a character in the current locale (-1: not printable).
static inline int haul_wcwidth(int c) {
    extern int wcwidth(wchar_t);
    return wcwidth((wchar_t)c);
}
#endif
