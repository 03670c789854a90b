/* grow: the one growing-array helper. */
#ifndef CP_GROW_H
#define CP_GROW_H

#include <stddef.h>

/* The array v of *cap elements of `size` bytes, grown (doubling, at least
 * 64 elements) to hold at least `need`; *cap updated.  Aborts when the
 * host is out of memory: nothing sensible to report. */
void *cp_grow(void *v, size_t *cap, size_t need, size_t size);

#endif
