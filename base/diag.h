/* diag: error reports carried from any stage back to the command line.
 *
 * Every fallible function of the library takes a `cp_err *` last and returns
 * a negative value (or NULL) on failure after filling it.  The message is a
 * complete, user-facing sentence that already names where the problem is:
 * "file:line:col: what was expected", or the offending key / option.
 * The code says how the program must exit (see enum cp_exit).
 */
#ifndef CP_DIAG_H
#define CP_DIAG_H

#include <stddef.h>

/* Process exit codes of `cpsim` (issue #2): 0 ran, 1 internal, 2 bad input. */
enum cp_exit { CP_EXIT_OK = 0, CP_EXIT_INTERNAL = 1, CP_EXIT_INPUT = 2 };

typedef struct cp_err {
    int code;        /* CP_EXIT_INPUT or CP_EXIT_INTERNAL once set, 0 when clear */
    char msg[1024];  /* NUL-terminated, no trailing newline */
} cp_err;

/* A place in an input: origin is a file path or a pseudo-origin such as
 * "--set parallel.tp=3"; line/col are 1-based, 0 when not meaningful. */
typedef struct cp_loc {
    const char *origin;
    int line, col;
} cp_loc;

/* Fill err (if not already set) and return -1.  The first error wins so that
 * callers can add context without losing the root cause. */
int cp_fail(cp_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Same, prefixed with "origin:line:col: " (or "origin: " when line == 0). */
int cp_fail_at(cp_err *err, cp_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Append text to err's message, cut to fit: a hint after the reason. */
void cp_err_append(cp_err *err, const char *text);

/* Suggest the closest candidate to `word` (Damerau-Levenshtein distance at
 * most max(2, strlen(word)/3)); NULL when none is close.  `cands` ends with
 * NULL. */
const char *cp_did_you_mean(const char *word, const char *const *cands);

/* Writes " (did you mean \"x\"?)" into buf when a close candidate exists,
 * else an empty string. Returns buf. */
char *cp_suggest(char *buf, size_t len, const char *word, const char *const *cands);

/* calloc of n (at least 1) elements of size bytes, zeroed; aborts when the
 * host is out of memory (nothing sensible is left to report). */
void *cp_xcalloc(size_t n, size_t size);

#endif
