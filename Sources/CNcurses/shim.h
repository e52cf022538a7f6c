#ifndef HAUL_CNCURSES_SHIM_H
#define HAUL_CNCURSES_SHIM_H
// SwiftPM drops pkg-config -D flags, so ask for the wide-character API here.
#ifndef NCURSES_WIDECHAR
#define NCURSES_WIDECHAR 1
#endif
#ifndef _XOPEN_SOURCE_EXTENDED
#define _XOPEN_SOURCE_EXTENDED 1
#endif
#include <locale.h>
#include <wchar.h>
#include <ncursesw/curses.h>

// Curses macros are invisible to Swift; these typed wrappers stand in for them.
static inline int haul_getmaxy(WINDOW *w) { return getmaxy(w); }
static inline int haul_getmaxx(WINDOW *w) { return getmaxx(w); }
static inline WINDOW *haul_stdscr(void) { return stdscr; }
static inline int haul_color_pair(int n) { return (int)COLOR_PAIR(n); }
static inline int haul_colors(void) { return COLORS; }
static inline int haul_key_resize(void) { return KEY_RESIZE; }
static inline attr_t haul_a_bold(void) { return A_BOLD; }
static inline attr_t haul_a_reverse(void) { return A_REVERSE; }
static inline attr_t haul_a_dim(void) { return A_DIM; }
#endif
