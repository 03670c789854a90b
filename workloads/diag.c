/* diag: error reports (see diag.h). */
#include "workloads/diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((format(printf, 4, 0)))
static int vfail(cp_err *err, int code, const char *prefix, const char *fmt, va_list ap)
{
    if (!err || err->code)
        return -1;
    err->code = code ? code : CP_EXIT_INTERNAL;
    size_t off = 0;
    if (prefix) {
        snprintf(err->msg, sizeof err->msg, "%s", prefix);
        off = strlen(err->msg);
    }
    vsnprintf(err->msg + off, sizeof err->msg - off, fmt, ap);
    return -1;
}

int cp_fail(cp_err *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(err, code, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

int cp_fail_at(cp_err *err, cp_loc loc, const char *fmt, ...)
{
    char prefix[512];
    if (loc.origin && loc.line > 0)
        snprintf(prefix, sizeof prefix, "%s:%d:%d: ", loc.origin, loc.line, loc.col);
    else if (loc.origin)
        snprintf(prefix, sizeof prefix, "%s: ", loc.origin);
    else
        prefix[0] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vfail(err, CP_EXIT_INPUT, prefix, fmt, ap);
    va_end(ap);
    return -1;
}

/* Optimal string alignment distance (Damerau-Levenshtein without repeated
 * edits of a substring), case-sensitive; words longer than 63 chars are
 * never close. */
static int osa_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 1 << 20;
    int d[64][64];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            int cost = a[i - 1] != b[j - 1];
            int best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < best)
                best = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb];
}

const char *cp_did_you_mean(const char *word, const char *const *cands)
{
    if (!word || !cands)
        return NULL;
    int limit = (int)strlen(word) / 3;
    if (limit < 2)
        limit = 2;
    const char *best = NULL;
    int best_d = limit + 1;
    for (const char *const *c = cands; *c; c++) {
        int dist = osa_distance(word, *c);
        if (dist < best_d) {
            best_d = dist;
            best = *c;
        }
    }
    return best;
}

char *cp_suggest(char *buf, size_t len, const char *word, const char *const *cands)
{
    const char *s = cp_did_you_mean(word, cands);
    if (s)
        snprintf(buf, len, " (did you mean \"%s\"?)", s);
    else if (len)
        buf[0] = '\0';
    return buf;
}

void *cp_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        abort();
    return p;
}
