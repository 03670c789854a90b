/* numdiff: whether two text files are the same but for numbers that agree
 * to a tolerance (tests/replay.sh: a replayed run against the unrolled one).
 *
 *   numdiff A B REL ABS
 *
 * Walks both files side by side: a number (as strtod reads it) in one must
 * meet a number in the other with |a - b| <= REL * max(|a|, |b|) + ABS;
 * every other byte must be equal.  Exit 0 when they agree, 1 with the
 * first difference (line and both values) on stderr, 2 on bad usage. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap + 1);
    size_t got;
    while (b && (got = fread(b + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            cap *= 2;
            b = realloc(b, cap + 1);
        }
    }
    fclose(f);
    if (b)
        b[n] = '\0';
    *len = n;
    return b;
}

/* A number starts here: a digit, or a sign or point before one, not in
 * the middle of a word. */
static int num_at(const char *s, const char *start)
{
    if (s > start && (isalnum((unsigned char)s[-1]) || s[-1] == '_' || s[-1] == '.'))
        return 0;
    if (*s == '-' || *s == '+')
        s++;
    if (*s == '.')
        s++;
    return isdigit((unsigned char)*s);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: numdiff A B REL ABS\n");
        return 2;
    }
    size_t na, nb;
    char *a = slurp(argv[1], &na), *b = slurp(argv[2], &nb);
    if (!a || !b) {
        fprintf(stderr, "numdiff: cannot read %s\n", !a ? argv[1] : argv[2]);
        return 2;
    }
    double rel = atof(argv[3]), abs_tol = atof(argv[4]);
    const char *p = a, *q = b;
    long line = 1, numbers = 0;
    while (*p && *q) {
        if (num_at(p, a) && num_at(q, b)) {
            char *ep, *eq;
            double x = strtod(p, &ep), y = strtod(q, &eq);
            double m = fabs(x) > fabs(y) ? fabs(x) : fabs(y);
            if (!(fabs(x - y) <= rel * m + abs_tol)) {
                fprintf(stderr, "numdiff: %s:%ld: %.*s vs %.*s\n", argv[1], line,
                        (int)(ep - p), p, (int)(eq - q), q);
                return 1;
            }
            numbers++;
            p = ep;
            q = eq;
            continue;
        }
        if (*p != *q) {
            fprintf(stderr, "numdiff: %s:%ld: text differs\n", argv[1], line);
            return 1;
        }
        if (*p == '\n')
            line++;
        p++;
        q++;
    }
    if (*p || *q) {
        fprintf(stderr, "numdiff: %s:%ld: one file is longer\n", argv[1], line);
        return 1;
    }
    free(a);
    free(b);
    return 0;
}
