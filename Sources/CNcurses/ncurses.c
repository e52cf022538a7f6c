// ncurses (libncursesw, and through it libtinfo), loaded when the screen starts (CLoadOnUse): a download
// with line output never maps it. The functions haul calls, here and from Swift, are defined with ncurses'
// own names and prototypes (the compiler holds them to curses.h), each a call through the loaded library;
// its variables are read through their loaded addresses.
#include "shim.h"
#include "load_on_use.h"

#define NCURSES_FUNCTIONS(X) \
    X(int, cbreak, (void), ()) \
    X(int, curs_set, (int visibility), (visibility)) \
    X(void, delscreen, (SCREEN *screen), (screen)) \
    X(int, doupdate, (void), ()) \
    X(int, endwin, (void), ()) \
    X(bool, has_colors, (void), ()) \
    X(int, init_pair, (NCURSES_PAIRS_T pair, NCURSES_COLOR_T foreground, NCURSES_COLOR_T background), \
      (pair, foreground, background)) \
    X(int, intrflush, (WINDOW *window, bool flag), (window, flag)) \
    X(int, keypad, (WINDOW *window, bool flag), (window, flag)) \
    X(int, leaveok, (WINDOW *window, bool flag), (window, flag)) \
    X(SCREEN *, newterm, (const char *type, FILE *output, FILE *input), (type, output, input)) \
    X(int, nodelay, (WINDOW *window, bool flag), (window, flag)) \
    X(int, noecho, (void), ()) \
    X(int, nonl, (void), ()) \
    X(int, resizeterm, (int lines, int columns), (lines, columns)) \
    X(int, set_escdelay, (int milliseconds), (milliseconds)) \
    X(SCREEN *, set_term, (SCREEN *screen), (screen)) \
    X(int, start_color, (void), ()) \
    X(int, use_default_colors, (void), ()) \
    X(int, wclear, (WINDOW *window), (window)) \
    X(int, werase, (WINDOW *window), (window)) \
    X(int, wget_wch, (WINDOW *window, wint_t *character), (window, character)) \
    X(int, wnoutrefresh, (WINDOW *window), (window)) \
    X(int, setcchar, (cchar_t *cell, const wchar_t *text, const attr_t attributes, NCURSES_PAIRS_T pair, \
      const void *options), (cell, text, attributes, pair, options)) \
    X(int, wmove, (WINDOW *window, int y, int x), (window, y, x)) \
    X(int, wadd_wch, (WINDOW *window, const cchar_t *cell), (window, cell))

// The variables haul reads, through their loaded addresses.
#define NCURSES_VARIABLES(X) \
    X(WINDOW *, stdscr) \
    X(int, COLORS) \
    X(int, COLOR_PAIRS)

HAUL_LIBRARY_WITH_VARIABLES(ncurses, "libncursesw.so.6", NCURSES_FUNCTIONS, NCURSES_VARIABLES)
#define FORWARD(type, name, parameters, arguments) HAUL_FORWARD(ncurses, type, name, parameters, arguments)
NCURSES_FUNCTIONS(FORWARD)
#undef FORWARD

int haul_ncurses_load(char *message, size_t size) { return haul_library_load(&ncurses, message, size); }

WINDOW *haul_stdscr(void) {
    haul_library_need(&ncurses);
    return *ncurses_functions.stdscr_address;
}

int haul_colors(void) {
    haul_library_need(&ncurses);
    return *ncurses_functions.COLORS_address;
}

int haul_color_pairs(void) {
    haul_library_need(&ncurses);
    return *ncurses_functions.COLOR_PAIRS_address;
}
