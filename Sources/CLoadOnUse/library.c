// Libraries loaded on first use (see include/load_on_use.h). The program loader would map each of them, and
// the libraries they need, before `main`, and look up every symbol they import: for libchafa alone that is
// GLib and PCRE2 too. A download never draws a picture or a screen, so it never waits for them.
#include "load_on_use.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// pthread_once's routine takes no argument: the library being loaded is handed over in this thread's slot.
static __thread struct haul_library *loading;

static void load(void) {
    struct haul_library *library = loading;
    // Lazily bound, local: the library's own calls into the libraries it needs are resolved when first made,
    // and its symbols are not added to the global scope (nothing else looks them up by name).
    void *handle = dlopen(library->soname, RTLD_LAZY | RTLD_LOCAL);
    if (handle == NULL) {
        snprintf(library->failure_text, sizeof library->failure_text, "%s", dlerror());
        library->failure = library->failure_text;
        return;
    }
    for (size_t i = 0; i < library->count; i++) {
        void *function = dlsym(handle, library->names[i]);
        if (function == NULL) {
            snprintf(library->failure_text, sizeof library->failure_text, "%s: no function %s", library->soname,
                     library->names[i]);
            library->failure = library->failure_text;
            return;
        }
        library->functions[i] = function;
    }
}

int haul_library_load(struct haul_library *library, char *message, size_t size) {
    loading = library;
    pthread_once(&library->once, load);
    if (library->failure == NULL) return 0;
    if (message != NULL && size > 0) snprintf(message, size, "cannot load %s", library->failure);
    return -1;
}

void haul_library_need(struct haul_library *library) {
    char message[600];
    if (haul_library_load(library, message, sizeof message) == 0) return;
    fprintf(stderr, "haul: %s\n", message);
    fflush(stderr);
    _exit(1);
}
