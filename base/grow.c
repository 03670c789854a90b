/* grow: see grow.h. */
#include "base/grow.h"

#include <stdlib.h>

void *cp_grow(void *v, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap && v)
        return v;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    v = realloc(v, c * size);
    if (!v)
        abort();
    *cap = c;
    return v;
}
