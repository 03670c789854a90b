/* sortd: see sortd.h. */
#include "base/sortd.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"

/* Doubles and 64-bit unsigned integers in the same order: a negative
 * value's bits all flipped (larger magnitudes come first), a positive
 * value's sign bit set (above every negative one). */
static uint64_t key_of(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u >> 63 ? ~u : u | (1ULL << 63);
}

static double value_of(uint64_t k)
{
    uint64_t u = k >> 63 ? k & ~(1ULL << 63) : ~k;
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static int cmp_key(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Below this many values one qsort is cheaper than the passes' counts
 * (65,536 buckets each): our choice, not measured finely. */
#define SORTD_RADIX_MIN 4096

void cp_sort_doubles(double *v, size_t n)
{
    if (n < 2)
        return;
    size_t cap = 0, bcap = 0;
    uint64_t *a = cp_grow(NULL, &cap, n, sizeof *a);
    for (size_t i = 0; i < n; i++)
        a[i] = key_of(v[i]);
    if (n < SORTD_RADIX_MIN) {
        qsort(a, n, sizeof *a, cmp_key);
    } else {
        uint64_t *b = cp_grow(NULL, &bcap, n, sizeof *b);
        size_t *count = calloc(65536, sizeof *count);
        if (!count)
            abort();
        for (int shift = 0; shift < 64; shift += 16) {
            memset(count, 0, 65536 * sizeof *count);
            for (size_t i = 0; i < n; i++)
                count[a[i] >> shift & 0xffff]++;
            if (count[a[0] >> shift & 0xffff] == n)
                continue; /* every value has this digit: the order stands */
            size_t sum = 0;
            for (size_t d = 0; d < 65536; d++) {
                size_t c = count[d];
                count[d] = sum;
                sum += c;
            }
            for (size_t i = 0; i < n; i++)
                b[count[a[i] >> shift & 0xffff]++] = a[i];
            uint64_t *t = a;
            a = b;
            b = t;
        }
        free(count);
        free(b);
    }
    for (size_t i = 0; i < n; i++)
        v[i] = value_of(a[i]);
    free(a);
}
