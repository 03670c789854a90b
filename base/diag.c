/* diag: error reports (see diag.h). */
#include "base/diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The length of the valid UTF-8 sequence at s (1 to 4), 0 when it is not
 * one (a stray continuation, an overlong form, a surrogate, beyond
 * U+10FFFF, a truncated tail). */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
             : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || (n == 2 && c < 0xC2) || (n == 4 && c > 0xF4))
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if (n == 3 && ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0)))
        return 0;
    if (n == 4 && ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90)))
        return 0;
    return n;
}

/* in as printable text into out (cap bytes): invalid UTF-8 and control
 * bytes (a message is one line) as \xNN, so that a message never echoes
 * raw bytes of a bad input to a terminal. */
static void printable(const char *in, char *out, size_t cap)
{
    const unsigned char *p = (const unsigned char *)in;
    size_t o = 0;
    while (*p && o + 5 < cap) {
        size_t n = utf8_len(p);
        if (n == 0 || (n == 1 && (*p < 0x20 || *p == 0x7f))) {
            snprintf(out + o, cap - o, "\\x%02x", *p);
            o += 4;
            p++;
            continue;
        }
        memcpy(out + o, p, n);
        o += n;
        p += n;
    }
    out[o] = '\0';
}

/* Shorten s to fit cap bytes by cutting the middle out of its longest
 * words (a path of thousands of bytes) rather than its end, which holds
 * the reason. */
static void fit(char *s, size_t cap)
{
    size_t len = strlen(s);
    while (len + 1 > cap) {
        size_t best = 0, at = 0;
        for (size_t i = 0; i < len;) {
            size_t w = strcspn(s + i, " ");
            if (w > best) {
                best = w;
                at = i;
            }
            i += w ? w : 1;
        }
        /* as much as the excess, keeping 24 bytes at each end of the word */
        size_t cut = len + 1 - cap + 3;       /* room for "..." */
        if (best < 64) {                      /* no long word left: cut the end */
            s[cap - 1] = '\0';
            return;
        }
        if (cut > best - 48)
            cut = best - 48;
        size_t from = at + (best - cut) / 2;
        memmove(s + from + 3, s + from + cut, len - from - cut + 1);
        memcpy(s + from, "...", 3);
        len = strlen(s);
    }
}

__attribute__((format(printf, 4, 0)))
static int vfail(cp_err *err, int code, const char *prefix, const char *fmt, va_list ap)
{
    if (!err || err->code)
        return -1;
    err->code = code ? code : CP_EXIT_INTERNAL;
    /* formatted whole (an --out path may be 4 KB), made printable, fitted */
    enum { BIG = 16384 };
    char *raw = malloc(BIG), *safe = malloc(4 * BIG);
    if (!raw || !safe) {
        free(raw);
        free(safe);
        snprintf(err->msg, sizeof err->msg, "out of memory formatting a message");
        return -1;
    }
    int off = snprintf(raw, BIG, "%s", prefix ? prefix : "");
    vsnprintf(raw + off, BIG - (size_t)off, fmt, ap);
    printable(raw, safe, 4 * BIG);
    fit(safe, sizeof err->msg);
    snprintf(err->msg, sizeof err->msg, "%s", safe);
    free(raw);
    free(safe);
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

void cp_err_append(cp_err *err, const char *text)
{
    size_t o = strnlen(err->msg, sizeof err->msg - 1);
    snprintf(err->msg + o, sizeof err->msg - o, "%s", text);
}

int cp_fail_at(cp_err *err, cp_loc loc, const char *fmt, ...)
{
    char prefix[4608]; /* an origin may be a long --set or path */
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
