/* sweep_expr: parser and evaluator of `where` conditions (sweep_expr.h).
 * The tree lives in one array of nodes owned by the expression; strings
 * point into a private copy of the text with terminators written in. */
#include "sim/sweep/sweep_expr.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum { N_NUM, N_STR, N_WORD, N_NOT, N_NEG, N_BIN } node_kind;

/* Binary operators, lowest precedence first within each level. */
typedef enum {
    OP_OR, OP_AND, OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE,
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD
} bin_op;

static const char *const op_text[] = {"||", "&&", "==", "!=", "<",  "<=", ">",
                                      ">=", "+",  "-",  "*",  "/",  "%"};

typedef struct node {
    node_kind kind;
    bin_op op;
    double num;
    const char *str;   /* N_STR, N_WORD: into sweep_expr.buf */
    int a, b;          /* children (node indices), -1 when none */
    int col;           /* offset of the token in the text */
    int depth;         /* of the subtree: 1 for a leaf */
} node;

/* The deepest expression tree accepted (nested parentheses, operators,
 * chains of one operator): parsing recurses through seven functions per
 * parenthesis and evaluation once per level, so a bound keeps 100,000
 * leading "!" or "(" from overflowing the stack (1000 levels: well under
 * 1 MB of it).  Far above any condition a sweep needs. */
#define EXPR_MAX_DEPTH 1000

struct sweep_expr {
    char *text;        /* as written */
    char *buf;         /* copy holding the word and string tokens */
    cp_loc at;          /* origin owned */
    int one_line;
    node *nodes;
    int n, cap;
    int root;
};

typedef struct parser {
    sweep_expr *e;
    const char *s;     /* text */
    int pos;
    int nest;          /* open parentheses and unary operators */
    cp_err *err;
} parser;

static cp_loc loc_at(const sweep_expr *e, int col)
{
    cp_loc l = e->at;
    if (l.line > 0 && e->one_line)
        l.col += col;
    return l;
}

static int too_deep(parser *ps)
{
    return cp_fail_at(ps->err, loc_at(ps->e, ps->pos), "where: the condition nests more than "
                      "%d levels deep (parentheses, operators) in \"%.40s%s\"", EXPR_MAX_DEPTH,
                      ps->s, strlen(ps->s) > 40 ? "..." : "");
}

static int add_node(parser *ps, node nd)
{
    sweep_expr *e = ps->e;
    nd.depth = 1;
    if (nd.a >= 0 && e->nodes[nd.a].depth + 1 > nd.depth)
        nd.depth = e->nodes[nd.a].depth + 1;
    if (nd.b >= 0 && e->nodes[nd.b].depth + 1 > nd.depth)
        nd.depth = e->nodes[nd.b].depth + 1;
    if (nd.depth > EXPR_MAX_DEPTH)
        return too_deep(ps);
    if (e->n == e->cap) {
        e->cap = e->cap ? 2 * e->cap : 16;
        e->nodes = realloc(e->nodes, (size_t)e->cap * sizeof *e->nodes);
        if (!e->nodes)
            abort();
    }
    e->nodes[e->n] = nd;
    return e->n++;
}

static void skip_space(parser *ps)
{
    while (isspace((unsigned char)ps->s[ps->pos]))
        ps->pos++;
}

/* Consume `tok` when it comes next (after blanks). */
static int accept(parser *ps, const char *tok)
{
    skip_space(ps);
    size_t n = strlen(tok);
    if (strncmp(ps->s + ps->pos, tok, n) != 0)
        return 0;
    ps->pos += (int)n;
    return 1;
}

static int syntax(parser *ps, const char *what)
{
    skip_space(ps);
    const char *at = ps->s + ps->pos;
    if (!*at)
        return cp_fail_at(ps->err, loc_at(ps->e, ps->pos), "where: %s at the end of \"%s\"",
                          what, ps->s);
    return cp_fail_at(ps->err, loc_at(ps->e, ps->pos), "where: %s, found \"%.20s\" in \"%s\"",
                      what, at, ps->s);
}

static int parse_or(parser *ps);

static int is_word_start(char c)
{
    return isalpha((unsigned char)c) || c == '_';
}

static int is_word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* WORD: a first part, then "." parts. */
static int parse_word(parser *ps)
{
    int start = ps->pos;
    while (is_word_char(ps->s[ps->pos]))
        ps->pos++;
    while (ps->s[ps->pos] == '.' && is_word_char(ps->s[ps->pos + 1])) {
        ps->pos++;
        while (is_word_char(ps->s[ps->pos]))
            ps->pos++;
    }
    char *w = ps->e->buf + start;
    size_t len = (size_t)(ps->pos - start);
    memmove(w, ps->s + start, len);
    w[len] = '\0';
    return add_node(ps, (node){.kind = N_WORD, .str = w, .a = -1, .b = -1, .col = start});
}

static int parse_string(parser *ps)
{
    int start = ps->pos;
    char q = ps->s[ps->pos++];
    const char *end = strchr(ps->s + ps->pos, q);
    if (!end) {
        ps->pos = start;
        return syntax(ps, "unterminated string");
    }
    size_t len = (size_t)(end - (ps->s + ps->pos));
    char *w = ps->e->buf + start;
    memmove(w, ps->s + ps->pos, len);
    w[len] = '\0';
    ps->pos += (int)len + 1;
    return add_node(ps, (node){.kind = N_STR, .str = w, .a = -1, .b = -1, .col = start});
}

static int parse_atom(parser *ps)
{
    skip_space(ps);
    char c = ps->s[ps->pos];
    int col = ps->pos;
    if (c == '(') {
        ps->pos++;
        if (++ps->nest > EXPR_MAX_DEPTH)
            return too_deep(ps);
        int in = parse_or(ps);
        ps->nest--;
        if (in < 0)
            return -1;
        if (!accept(ps, ")"))
            return syntax(ps, "expected \")\"");
        return in;
    }
    if (c == '\'' || c == '"')
        return parse_string(ps);
    if (is_word_start(c))
        return parse_word(ps);
    if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)ps->s[ps->pos + 1]))) {
        char *end;
        double v = strtod(ps->s + ps->pos, &end);
        ps->pos = (int)(end - ps->s);
        if (is_word_char(*end) || *end == '.') {
            ps->pos = col;
            return syntax(ps, "malformed number");
        }
        return add_node(ps, (node){.kind = N_NUM, .num = v, .a = -1, .b = -1, .col = col});
    }
    return syntax(ps, "expected a number, a key, a string or \"(\"");
}

static int parse_unary(parser *ps)
{
    skip_space(ps);
    int col = ps->pos;
    node_kind k;
    if (ps->s[ps->pos] == '!' && ps->s[ps->pos + 1] != '=')
        k = N_NOT;
    else if (ps->s[ps->pos] == '-')
        k = N_NEG;
    else
        return parse_atom(ps);
    ps->pos++;
    if (++ps->nest > EXPR_MAX_DEPTH)
        return too_deep(ps);
    int in = parse_unary(ps);
    ps->nest--;
    if (in < 0)
        return -1;
    return add_node(ps, (node){.kind = k, .a = in, .b = -1, .col = col});
}

/* One precedence level: left-associative chain of the operators lo..hi
 * (ops of more than one character tried first), operands from `next`. */
static int parse_level(parser *ps, bin_op lo, bin_op hi, int (*next)(parser *), int chain)
{
    int left = next(ps);
    if (left < 0)
        return -1;
    for (;;) {
        skip_space(ps);
        int col = ps->pos, found = -1;
        for (int pass = 0; pass < 2 && found < 0; pass++)
            for (int op = (int)lo; op <= (int)hi && found < 0; op++)
                if ((strlen(op_text[op]) == 2) == (pass == 0) && accept(ps, op_text[op]))
                    found = op;
        if (found < 0)
            return left;
        int right = next(ps);
        if (right < 0)
            return -1;
        left = add_node(ps, (node){.kind = N_BIN, .op = (bin_op)found, .a = left, .b = right,
                                   .col = col});
        if (left < 0)
            return -1;
        if (!chain) {
            skip_space(ps);
            for (int op = OP_EQ; op <= OP_GE; op++)
                if (strncmp(ps->s + ps->pos, op_text[op], 1) == 0)
                    return syntax(ps, "comparisons do not chain; use && between them");
            return left;
        }
    }
}

static int parse_prod(parser *ps)
{
    return parse_level(ps, OP_MUL, OP_MOD, parse_unary, 1);
}

static int parse_sum(parser *ps)
{
    return parse_level(ps, OP_ADD, OP_SUB, parse_prod, 1);
}

static int parse_cmp(parser *ps)
{
    return parse_level(ps, OP_EQ, OP_GE, parse_sum, 0);
}

static int parse_and(parser *ps)
{
    return parse_level(ps, OP_AND, OP_AND, parse_cmp, 1);
}

static int parse_or(parser *ps)
{
    return parse_level(ps, OP_OR, OP_OR, parse_and, 1);
}

sweep_expr *sweep_expr_parse(const char *text, cp_loc at, int one_line, cp_err *err)
{
    sweep_expr *e = calloc(1, sizeof *e);
    if (!e || !(e->text = strdup(text)) || !(e->buf = strdup(text)) ||
        !(e->at.origin = strdup(at.origin ? at.origin : "where")))
        abort();
    e->at.line = at.line;
    e->at.col = at.col;
    e->one_line = one_line;
    parser ps = {e, e->text, 0, 0, err};
    e->root = parse_or(&ps);
    if (e->root >= 0) {
        skip_space(&ps);
        if (ps.s[ps.pos])
            e->root = syntax(&ps, "expected an operator or the end of the condition");
    }
    if (e->root < 0) {
        sweep_expr_free(e);
        return NULL;
    }
    return e;
}

static int is_key(const node *nd)
{
    return nd->kind == N_WORD && strchr(nd->str, '.') != NULL;
}

int sweep_expr_keys(const sweep_expr *e, sweep_expr_visit fn, void *ctx, cp_err *err)
{
    for (int i = 0; i < e->n; i++) {
        if (!is_key(&e->nodes[i]))
            continue;
        const char *lit = NULL;
        for (int j = 0; j < e->n && !lit; j++) {
            const node *b = &e->nodes[j];
            if (b->kind != N_BIN || (b->op != OP_EQ && b->op != OP_NE) || (b->a != i && b->b != i))
                continue;
            const node *o = &e->nodes[b->a == i ? b->b : b->a];
            if (o->kind == N_STR || (o->kind == N_WORD && !is_key(o)))
                lit = o->str;
        }
        if (fn(ctx, e->nodes[i].str, lit, loc_at(e, e->nodes[i].col), err) < 0)
            return -1;
    }
    return 0;
}

void sweep_expr_free(sweep_expr *e)
{
    if (!e)
        return;
    free(e->text);
    free(e->buf);
    free((char *)e->at.origin);
    free(e->nodes);
    free(e);
}

sweep_val sweep_expr_value_of(const char *text)
{
    char *end;
    double v = strtod(text, &end);
    if (end != text && *end == '\0' && !isspace((unsigned char)text[0]))
        return (sweep_val){.num = v};
    return (sweep_val){.is_str = 1, .str = text};
}

/* ---- evaluation ----------------------------------------------------------- */

typedef struct evaluator {
    const sweep_expr *e;
    sweep_expr_lookup fn;
    void *ctx;
    cp_err *err;
} evaluator;

static int eval(const evaluator *ev, int i, sweep_val *out);

static int want_num(const evaluator *ev, const node *nd, const sweep_val *v, const char *what)
{
    if (!v->is_str)
        return 0;
    return cp_fail_at(ev->err, loc_at(ev->e, nd->col), "where: %s needs a number, got the "
                      "string \"%s\" in \"%s\"", what, v->str, ev->e->text);
}

static int eval_word(const evaluator *ev, const node *nd, sweep_val *out)
{
    int rc = ev->fn(ev->ctx, nd->str, out, ev->err);
    if (rc < 0)
        return -1;
    if (rc > 0)
        return 0;
    if (!strchr(nd->str, '.')) {
        *out = (sweep_val){.is_str = 1, .str = nd->str};
        return 0;
    }
    return cp_fail_at(ev->err, loc_at(ev->e, nd->col), "where: unknown key %s (not a grid key "
                      "nor a key of the workload or of its resolved values)", nd->str);
}

static int compare(const evaluator *ev, const node *nd, const sweep_val *x, const sweep_val *y,
                   double *out)
{
    if (x->is_str != y->is_str)
        return cp_fail_at(ev->err, loc_at(ev->e, nd->col), "where: %s compares a string with "
                          "a number in \"%s\"", op_text[nd->op], ev->e->text);
    if (x->is_str && nd->op != OP_EQ && nd->op != OP_NE)
        return cp_fail_at(ev->err, loc_at(ev->e, nd->col), "where: %s orders numbers only; "
                          "strings take == and != (in \"%s\")", op_text[nd->op], ev->e->text);
    int c = x->is_str ? strcmp(x->str, y->str) : (x->num > y->num) - (x->num < y->num);
    switch (nd->op) {
    case OP_EQ: *out = c == 0; break;
    case OP_NE: *out = c != 0; break;
    case OP_LT: *out = c < 0; break;
    case OP_LE: *out = c <= 0; break;
    case OP_GT: *out = c > 0; break;
    default: *out = c >= 0; break;
    }
    return 0;
}

static int arith(const evaluator *ev, const node *nd, double x, double y, double *out)
{
    if ((nd->op == OP_DIV || nd->op == OP_MOD) && y == 0)
        return cp_fail_at(ev->err, loc_at(ev->e, nd->col), "where: division by zero in \"%s\"",
                          ev->e->text);
    switch (nd->op) {
    case OP_ADD: *out = x + y; break;
    case OP_SUB: *out = x - y; break;
    case OP_MUL: *out = x * y; break;
    case OP_DIV: *out = x / y; break;
    default: *out = fmod(x, y); break;
    }
    return 0;
}

static int eval_bin(const evaluator *ev, const node *nd, sweep_val *out)
{
    sweep_val x, y;
    if (eval(ev, nd->a, &x) < 0)
        return -1;
    if (nd->op == OP_AND || nd->op == OP_OR) {
        if (want_num(ev, nd, &x, op_text[nd->op]) < 0)
            return -1;
        /* short circuit: the right side is not looked at */
        if ((nd->op == OP_AND) == (x.num == 0)) {
            *out = (sweep_val){.num = x.num != 0};
            return 0;
        }
        if (eval(ev, nd->b, &y) < 0 || want_num(ev, nd, &y, op_text[nd->op]) < 0)
            return -1;
        *out = (sweep_val){.num = y.num != 0};
        return 0;
    }
    if (eval(ev, nd->b, &y) < 0)
        return -1;
    *out = (sweep_val){0};
    if (nd->op >= OP_EQ && nd->op <= OP_GE)
        return compare(ev, nd, &x, &y, &out->num);
    if (want_num(ev, nd, &x, op_text[nd->op]) < 0 || want_num(ev, nd, &y, op_text[nd->op]) < 0)
        return -1;
    return arith(ev, nd, x.num, y.num, &out->num);
}

static int eval(const evaluator *ev, int i, sweep_val *out)
{
    const node *nd = &ev->e->nodes[i];
    switch (nd->kind) {
    case N_NUM:
        *out = (sweep_val){.num = nd->num};
        return 0;
    case N_STR:
        *out = (sweep_val){.is_str = 1, .str = nd->str};
        return 0;
    case N_WORD:
        return eval_word(ev, nd, out);
    case N_NOT:
    case N_NEG:
        if (eval(ev, nd->a, out) < 0 || want_num(ev, nd, out, nd->kind == N_NOT ? "!" : "-") < 0)
            return -1;
        out->num = nd->kind == N_NOT ? out->num == 0 : -out->num;
        return 0;
    default:
        return eval_bin(ev, nd, out);
    }
}

int sweep_expr_eval(const sweep_expr *e, sweep_expr_lookup fn, void *ctx, int *holds, cp_err *err)
{
    evaluator ev = {e, fn, ctx, err};
    sweep_val v;
    if (eval(&ev, e->root, &v) < 0)
        return -1;
    if (v.is_str)
        return cp_fail_at(err, loc_at(e, 0), "where: \"%s\" is a string, not a condition",
                          e->text);
    *holds = v.num != 0;
    return 0;
}
