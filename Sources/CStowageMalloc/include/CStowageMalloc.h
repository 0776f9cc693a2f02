#ifndef C_STOWAGE_MALLOC_H
#define C_STOWAGE_MALLOC_H

// glibc's malloc tuning, which Swift's Glibc module does not export (malloc.h). Apart from
// CStowageShims so a change here rebuilds only the command-line tool that uses it.
#include <stdlib.h>  // defines __GLIBC__ through features.h on glibc

#if defined(__GLIBC__)
#include <malloc.h>
/// Caps the number of glibc malloc arenas (`mallopt(M_ARENA_MAX, count)`); returns 1 on success.
static inline int stowage_limit_malloc_arenas(int count) {
    return mallopt(M_ARENA_MAX, count);
}
#endif

#endif
