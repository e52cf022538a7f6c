#ifndef HAUL_LOAD_ON_USE_H
#define HAUL_LOAD_ON_USE_H
// Libraries loaded when first used, not by the program loader before `main` (library.c): the picture
// libraries (CJPEG, CPNG, CChafa) and ncurses (CNcurses). Each of those targets defines the library functions
// its code calls with the libraries' own names and prototypes (the compiler holds them to the library's
// header), each a call through the loaded function: nothing in haul links against the library itself.
#include <pthread.h>
#include <stddef.h>

// One library loaded on first use: its soname, then, once loaded, every function named in `names` looked up
// into `functions` (in the same order), or `failure` set to why not.
struct haul_library {
    const char *soname;
    const char *const *names;
    void **functions;
    size_t count;
    pthread_once_t once;
    const char *failure;
    char failure_text[512];
};

// Loads `library` (once): 0, or -1 with its failure in `message` when `message` is not NULL.
int haul_library_load(struct haul_library *library, char *message, size_t size);

// Before a call through `library`'s functions: loaded, or a one-line message on stderr and exit 1 (a caller
// that can do without the library asks `haul_library_load` first).
void haul_library_need(struct haul_library *library);

// The X-macro plumbing shared by the libraries' files: `FUNCTIONS(X)` lists X(type, name, (parameters),
// (arguments)); these define the table of pointers, the names, the library and a forwarder per function.
// The loader fills the table as an array of `void *`, as `dlsym` returns them: POSIX makes a function's
// address convertible to and from `void *`, and a struct of pointers alone has no padding between them.
// A library whose variables are read too lists them as `VARIABLES(X)`, X(type, name): the table then
// holds each one's loaded address as `name_address` (after the functions).
#define HAUL_FIELD(type, name, parameters, arguments) type (*name) parameters;
#define HAUL_NAME(type, name, parameters, arguments) #name,
#define HAUL_VARIABLE_FIELD(type, name) type *name##_address;
#define HAUL_VARIABLE_NAME(type, name) #name,
#define HAUL_NO_VARIABLES(X)
#define HAUL_LIBRARY_WITH_VARIABLES(variable, soname_, FUNCTIONS, VARIABLES) \
    static struct { FUNCTIONS(HAUL_FIELD) VARIABLES(HAUL_VARIABLE_FIELD) } variable##_functions; \
    static const char *const variable##_names[] = { FUNCTIONS(HAUL_NAME) VARIABLES(HAUL_VARIABLE_NAME) }; \
    static struct haul_library variable = { \
        .soname = soname_, .names = variable##_names, .functions = (void **)&variable##_functions, \
        .count = sizeof variable##_names / sizeof variable##_names[0], .once = PTHREAD_ONCE_INIT };
#define HAUL_LIBRARY(variable, soname_, FUNCTIONS) \
    HAUL_LIBRARY_WITH_VARIABLES(variable, soname_, FUNCTIONS, HAUL_NO_VARIABLES)
#define HAUL_FORWARD(variable, type, name, parameters, arguments) \
    type name parameters { haul_library_need(&variable); return variable##_functions.name arguments; }
#endif
