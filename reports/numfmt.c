/* numfmt: fixed-point numbers written as printf's "%.*f" writes them,
 * without printf's multi-precision path (see report.h rep_fixed). */
#include "reports/report.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

/* Powers of ten, exact in a double up to 1e22. */
static const double POW10[10] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};

/* The digits of u (> 0 or 0) into the end of buf, backwards; returns the
 * first digit's position. */
static char *digits_back(char *end, uint64_t u, int min_digits)
{
    char *p = end;
    int n = 0;
    do {
        *--p = (char)('0' + (int)(u % 10));
        u /= 10;
        n++;
    } while (u > 0 || n < min_digits);
    return p;
}

int rep_fixed(char *buf, size_t len, double v, int decimals)
{
    if (decimals < 0 || decimals > 9 || len < 48 || !isfinite(v))
        return snprintf(buf, len, "%.*f", decimals, v);
    double scaled = fabs(v) * POW10[decimals];
    /* an integer below 2^53 is exact; past it, or near a rounding tie
     * (within the product's rounding error, 2^-52 of it, plus a margin),
     * printf's exact decimal expansion decides */
    if (scaled >= 9007199254740992.0)
        return snprintf(buf, len, "%.*f", decimals, v);
    double fl = floor(scaled), frac = scaled - fl;
    if (fabs(frac - 0.5) <= scaled * 0x1p-50 + 1e-12)
        return snprintf(buf, len, "%.*f", decimals, v);
    uint64_t u = (uint64_t)fl + (frac > 0.5);
    if (u == 0 && signbit(v))
        return snprintf(buf, len, "%.*f", decimals, v); /* printf's "-0.00..." */
    char tmp[48], *end = tmp + sizeof tmp;
    char *p = digits_back(end, u, decimals + 1);
    int n = (int)(end - p);
    size_t o = 0;
    if (signbit(v))
        buf[o++] = '-';
    for (int i = 0; i < n - decimals; i++)
        buf[o++] = p[i];
    if (decimals > 0) {
        buf[o++] = '.';
        for (int i = n - decimals; i < n; i++)
            buf[o++] = p[i];
    }
    buf[o] = '\0';
    return (int)o;
}

void rep_put_fixed(FILE *f, double v, int decimals)
{
    char buf[400];
    int n = rep_fixed(buf, sizeof buf, v, decimals);
    fwrite(buf, 1, (size_t)(n < (int)sizeof buf ? n : (int)sizeof buf - 1), f);
}
