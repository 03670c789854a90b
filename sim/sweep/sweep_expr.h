/* sweep_expr: the `where` conditions of a sweep file (sweep.h).
 *
 * A small, safe expression language over the parameters of a sweep point:
 *
 *   or      := and ( "||" and )*
 *   and     := cmp ( "&&" cmp )*
 *   cmp     := sum ( ("==" | "!=" | "<" | "<=" | ">" | ">=") sum )?
 *   sum     := prod ( ("+" | "-") prod )*
 *   prod    := unary ( ("*" | "/" | "%") unary )*
 *   unary   := ("!" | "-") unary | atom
 *   atom    := NUMBER | STRING | WORD | "(" or ")"
 *
 * NUMBER is a decimal or floating form (8, 65536, 1e6, 0.5).  STRING is
 * quoted with ' or ".  WORD is [A-Za-z_][A-Za-z0-9_]* followed by any number
 * of "." [A-Za-z0-9_]+ parts (parallel.tp, requests.0.prompt_tokens); the
 * caller's lookup gives its value.  A WORD without a dot that the lookup does
 * not know is a string (`parallel.exchange == ring`); a dotted WORD it does
 * not know is an error.
 *
 * Values are numbers (double) or strings.  Arithmetic and ordering take
 * numbers; == and != compare two numbers or two strings; && || ! take
 * numbers (non-zero is true); a comparison gives 1 or 0.  Every error names
 * file:line:col of the offending token.
 */
#ifndef CP_SWEEP_EXPR_H
#define CP_SWEEP_EXPR_H

#include "base/diag.h"

typedef struct sweep_expr sweep_expr;

typedef struct sweep_val {
    int is_str;
    double num;          /* !is_str */
    const char *str;     /* is_str: owned by whoever produced it */
} sweep_val;

/* The value of a WORD: 1 and *out set when known (strings stay valid until
 * sweep_expr_eval returns), 0 when unknown, -1 with err on failure. */
typedef int (*sweep_expr_lookup)(void *ctx, const char *key, sweep_val *out, cp_err *err);

/* Parse `text`, which starts at `at` in its file (at.col is the column of
 * text[0]; the origin is copied).  With one_line, messages point at the
 * offending token's column; else (a condition folded over several lines)
 * at the condition's start.  NULL with err (CP_EXIT_INPUT) on a syntax
 * error. */
sweep_expr *sweep_expr_parse(const char *text, cp_loc at, int one_line, cp_err *err);

/* Evaluate; *holds is 1 when the condition is true.  -1 with err on a type
 * error, a division by zero or an unknown dotted key. */
int sweep_expr_eval(const sweep_expr *e, sweep_expr_lookup fn, void *ctx, int *holds, cp_err *err);

/* Visit every dotted WORD of e in text order, at its location, with the
 * string it is compared to by == or != (a STRING or an undotted WORD on the
 * other side), else NULL; fn returns -1 with err to refuse the condition.
 * For the sweep's checks at load time, before any point is evaluated. */
typedef int (*sweep_expr_visit)(void *ctx, const char *key, const char *literal, cp_loc at,
                                cp_err *err);
int sweep_expr_keys(const sweep_expr *e, sweep_expr_visit fn, void *ctx, cp_err *err);

void sweep_expr_free(sweep_expr *e);

/* The text of a scalar parameter as an expression value: a number when the
 * whole text is one (strtod), else the string itself. */
sweep_val sweep_expr_value_of(const char *text);

#endif
