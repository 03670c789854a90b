/* yamlio: libyaml events -> a tree of located nodes, and the typed accessors,
 * --set overrides, merge and dump that every YAML loader of cpsim uses (see
 * yamlio.h; --set, merge and dump are yamlio_edit.c).  This is the only file that includes <yaml.h>; libyaml's
 * 1-on-success convention stops here.
 */
#include "base/yamlio_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

/* Largest YAML input accepted, bytes (our own sanity bound: presets and
 * workloads are a few KiB). */
#define YIO_MAX_INPUT (16L << 20)
/* Deepest nesting of maps and lists accepted (our own bound; cpsim's formats
 * nest at most 4 levels) so that hostile input cannot exhaust the stack. */
#define YIO_MAX_DEPTH 64
/* Scalars longer than this many characters are cut in messages. */
#define YIO_SHOW_CHARS 60


/* ---- allocation ---------------------------------------------------------
 * Out of memory is not an input error and cannot be reported sensibly from
 * deep inside a tree edit, so it ends the process (as git's xmalloc does). */

void *yio_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fputs("cpsim: out of memory\n", stderr);
        abort();
    }
    return q;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(yio_xrealloc(NULL, n), s, n);
}

/* The document's copy of `origin` (one copy per distinct string). */
const char *yio_doc_origin(ydoc *doc, const char *origin)
{
    if (!origin)
        return NULL;
    for (size_t i = 0; i < doc->norigins; i++)
        if (strcmp(doc->origins[i], origin) == 0)
            return doc->origins[i];
    doc->origins = yio_xrealloc(doc->origins, (doc->norigins + 1) * sizeof *doc->origins);
    doc->origins[doc->norigins] = xstrdup(origin);
    return doc->origins[doc->norigins++];
}

cp_loc yio_loc_in(ydoc *doc, cp_loc loc)
{
    loc.origin = yio_doc_origin(doc, loc.origin);
    return loc;
}

/* ---- nodes ------------------------------------------------------------- */

ynode *yio_node_new(yn_kind kind, cp_loc loc)
{
    ynode *n = yio_xrealloc(NULL, sizeof *n);
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->loc = loc;
    return n;
}

void yio_node_free(ynode *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++) {
        yio_node_free(n->kids[i]);
        if (n->keys)
            free(n->keys[i]);
    }
    free(n->str);
    free(n->kids);
    free(n->keys);
    free(n->key_locs);
    free(n->seen);
    free(n);
}

/* Make room for one more item of a list or map. */
static void node_grow(ynode *n)
{
    if (n->n < n->cap)
        return;
    n->cap = n->cap ? 2 * n->cap : 4;
    n->kids = yio_xrealloc(n->kids, n->cap * sizeof *n->kids);
    if (n->kind == YN_MAP) {
        n->keys = yio_xrealloc(n->keys, n->cap * sizeof *n->keys);
        n->key_locs = yio_xrealloc(n->key_locs, n->cap * sizeof *n->key_locs);
        n->seen = yio_xrealloc(n->seen, n->cap * sizeof *n->seen);
    }
}

void yio_seq_add(ynode *seq, ynode *val)
{
    node_grow(seq);
    seq->kids[seq->n++] = val;
}

/* Appends key (copied) -> val (taken) to a map. */
void yio_map_add(ynode *map, const char *key, cp_loc key_loc, ynode *val)
{
    node_grow(map);
    map->keys[map->n] = xstrdup(key);
    map->key_locs[map->n] = key_loc;
    map->seen[map->n] = 0;
    map->kids[map->n++] = val;
}

/* Index of key in map, or -1. */
long yio_map_find(const ynode *map, const char *key)
{
    for (size_t i = 0; i < map->n; i++)
        if (strcmp(map->keys[i], key) == 0)
            return (long)i;
    return -1;
}

ynode *yio_clone(ydoc *doc, const ynode *src)
{
    ynode *n = yio_node_new(src->kind, yio_loc_in(doc, src->loc));
    n->quoted = src->quoted;
    if (src->str)
        n->str = xstrdup(src->str);
    for (size_t i = 0; i < src->n; i++) {
        if (src->kind == YN_MAP)
            yio_map_add(n, src->keys[i], yio_loc_in(doc, src->key_locs[i]), yio_clone(doc, src->kids[i]));
        else
            yio_seq_add(n, yio_clone(doc, src->kids[i]));
    }
    return n;
}

static ydoc *doc_new(void)
{
    ydoc *doc = yio_xrealloc(NULL, sizeof *doc);
    memset(doc, 0, sizeof *doc);
    return doc;
}

void yio_free(ydoc *doc)
{
    if (!doc)
        return;
    yio_node_free(doc->root);
    for (size_t i = 0; i < doc->norigins; i++)
        free(doc->origins[i]);
    free(doc->origins);
    free(doc);
}

ynode *yio_root(ydoc *doc)
{
    return doc ? doc->root : NULL;
}

char *yio_path(char *buf, size_t len, const char *prefix, const char *key)
{
    if (prefix && *prefix)
        snprintf(buf, len, "%s.%s", prefix, key);
    else
        snprintf(buf, len, "%s", key);
    return buf;
}

/* ---- parsing ------------------------------------------------------------ */

typedef struct pstate {
    yaml_parser_t parser;
    const char *origin;   /* interned */
    const char *text;     /* the input, for hints about the failing character */
    size_t len;
    int set_mode;         /* a --set value: locations carry the origin only */
} pstate;

static cp_loc mark_loc(const pstate *ps, yaml_mark_t m)
{
    cp_loc loc = { ps->origin, 0, 0 };
    if (!ps->set_mode) {
        loc.line = (int)m.line + 1;
        loc.col = (int)m.column + 1;
    }
    return loc;
}

/* Turn libyaml's error state into a message with line and column. */
static int syntax_error(const pstate *ps, cp_err *err)
{
    const yaml_parser_t *p = &ps->parser;
    if (p->error == YAML_MEMORY_ERROR)
        return cp_fail(err, CP_EXIT_INTERNAL, "%s: out of memory while parsing YAML", ps->origin);
    cp_loc at = { ps->origin, 0, 0 };
    if (p->error == YAML_READER_ERROR) {
        /* libyaml gives the reader's byte offset: the line and column (in
         * characters, a column counting each byte of a bad sequence) */
        size_t off = p->problem_offset < ps->len ? p->problem_offset : ps->len;
        if (!ps->set_mode) {
            at.line = 1;
            at.col = 1;
            for (size_t i = 0; i < off; i++) {
                unsigned char c = (unsigned char)ps->text[i];
                if (c == '\n') {
                    at.line++;
                    at.col = 1;
                } else if ((c & 0xC0) != 0x80) {
                    at.col++;
                }
            }
        }
        unsigned byte = off < ps->len ? (unsigned char)ps->text[off] : 0;
        return cp_fail_at(err, at, "unreadable input (byte 0x%02x): %s; a workload is UTF-8 "
                          "text", byte, p->problem ? p->problem : "invalid character");
    }
    const char *hint = "";
    size_t idx = p->problem_mark.index;
    if (idx < ps->len && ps->text[idx] == '\t')
        hint = " (a tab: YAML indentation must use spaces)";
    char ctx[160] = "";
    if (p->context)
        snprintf(ctx, sizeof ctx, " (%s at line %d, column %d)", p->context,
                 (int)p->context_mark.line + 1, (int)p->context_mark.column + 1);
    if (ps->set_mode)
        return cp_fail_at(err, at, "the value is not valid YAML: %s at character %zu%s",
                          p->problem ? p->problem : "syntax error",
                          (idx < ps->len ? idx : ps->len) + 1, hint);
    at = mark_loc(ps, p->problem_mark);
    return cp_fail_at(err, at, "%s%s%s", p->problem ? p->problem : "YAML syntax error", hint, ctx);
}

static int next_event(pstate *ps, yaml_event_t *ev, cp_err *err)
{
    if (!yaml_parser_parse(&ps->parser, ev))
        return syntax_error(ps, err);
    return 0;
}

/* Anchors and aliases would make nodes shared; cpsim's formats never need
 * them, so they are refused with a message at the place written. */
static int refuse_anchor(const pstate *ps, const yaml_event_t *ev, cp_err *err)
{
    const yaml_char_t *anchor = NULL;
    if (ev->type == YAML_SCALAR_EVENT)
        anchor = ev->data.scalar.anchor;
    else if (ev->type == YAML_SEQUENCE_START_EVENT)
        anchor = ev->data.sequence_start.anchor;
    else if (ev->type == YAML_MAPPING_START_EVENT)
        anchor = ev->data.mapping_start.anchor;
    if (anchor)
        return cp_fail_at(err, mark_loc(ps, ev->start_mark),
                          "anchors (&%s) are not supported; write the value out",
                          (const char *)anchor);
    if (ev->type == YAML_ALIAS_EVENT)
        return cp_fail_at(err, mark_loc(ps, ev->start_mark),
                          "aliases (*%s) are not supported; write the value out",
                          (const char *)ev->data.alias.anchor);
    return 0;
}

static ynode *parse_node(pstate *ps, const yaml_event_t *ev, const char *path, int depth,
                         cp_err *err);

static ynode *parse_scalar(const pstate *ps, const yaml_event_t *ev)
{
    const char *v = (const char *)ev->data.scalar.value;
    int plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    int is_null = plain && (!*v || !strcmp(v, "~") || !strcmp(v, "null") ||
                            !strcmp(v, "Null") || !strcmp(v, "NULL"));
    ynode *n = yio_node_new(is_null ? YN_NULL : YN_SCALAR, mark_loc(ps, ev->start_mark));
    n->str = xstrdup(v);
    n->quoted = !plain;
    return n;
}

/* Items of a sequence up to its end event. */
static int parse_seq_items(pstate *ps, ynode *seq, const char *path, int depth, cp_err *err)
{
    for (;;) {
        yaml_event_t ev;
        if (next_event(ps, &ev, err) < 0)
            return -1;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            return 0;
        }
        char sub[256];
        snprintf(sub, sizeof sub, "%s%s%zu", path, *path ? "." : "", seq->n);
        ynode *item = parse_node(ps, &ev, sub, depth + 1, err);
        yaml_event_delete(&ev);
        if (!item)
            return -1;
        yio_seq_add(seq, item);
    }
}

/* Key/value pairs of a mapping up to its end event.  Duplicate keys are an
 * error naming both places.  (Linear search: maps in cpsim's formats are
 * small.) */
static int parse_map_items(pstate *ps, ynode *map, const char *path, int depth, cp_err *err)
{
    for (;;) {
        yaml_event_t kev;
        if (next_event(ps, &kev, err) < 0)
            return -1;
        if (kev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&kev);
            return 0;
        }
        int rc = refuse_anchor(ps, &kev, err);
        if (rc == 0 && kev.type != YAML_SCALAR_EVENT)
            rc = cp_fail_at(err, mark_loc(ps, kev.start_mark),
                            "%s%smapping keys must be plain text, not lists or mappings",
                            path, *path ? ": " : "");
        if (rc < 0) {
            yaml_event_delete(&kev);
            return -1;
        }
        const char *key = (const char *)kev.data.scalar.value;
        cp_loc kloc = mark_loc(ps, kev.start_mark);
        long prev = yio_map_find(map, key);
        if (prev >= 0) {
            cp_loc first = map->key_locs[prev];
            char where[64] = "";
            if (first.line > 0)
                snprintf(where, sizeof where, " (first written at line %d, column %d)", first.line,
                         first.col);
            cp_fail_at(err, kloc, "duplicate key \"%s\" %s%s%s", key, *path ? "in " : "",
                       *path ? path : "at the top level", where);
            yaml_event_delete(&kev);
            return -1;
        }
        char sub[256];
        snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", key);
        yaml_event_t vev;
        if (next_event(ps, &vev, err) < 0) {
            yaml_event_delete(&kev);
            return -1;
        }
        ynode *val = parse_node(ps, &vev, sub, depth + 1, err);
        yaml_event_delete(&vev);
        if (val)
            yio_map_add(map, key, kloc, val);
        yaml_event_delete(&kev);
        if (!val)
            return -1;
    }
}

/* Build the node that starts with event ev (owned by the caller). */
static ynode *parse_node(pstate *ps, const yaml_event_t *ev, const char *path, int depth,
                         cp_err *err)
{
    if (refuse_anchor(ps, ev, err) < 0)
        return NULL;
    if (ev->type == YAML_SCALAR_EVENT)
        return parse_scalar(ps, ev);
    if (ev->type != YAML_SEQUENCE_START_EVENT && ev->type != YAML_MAPPING_START_EVENT) {
        cp_fail(err, CP_EXIT_INTERNAL, "%s: unexpected YAML event %d", ps->origin, (int)ev->type);
        return NULL;
    }
    if (depth >= YIO_MAX_DEPTH) {
        cp_fail_at(err, mark_loc(ps, ev->start_mark), "nesting deeper than %d levels",
                   YIO_MAX_DEPTH);
        return NULL;
    }
    int is_seq = ev->type == YAML_SEQUENCE_START_EVENT;
    ynode *n = yio_node_new(is_seq ? YN_SEQ : YN_MAP, mark_loc(ps, ev->start_mark));
    int rc = is_seq ? parse_seq_items(ps, n, path, depth, err)
                    : parse_map_items(ps, n, path, depth, err);
    if (rc < 0) {
        yio_node_free(n);
        return NULL;
    }
    return n;
}

/* The single node of a one-document stream; NULL root (empty stream) when
 * there is no document. */
static int parse_stream(pstate *ps, ynode **root, cp_err *err)
{
    yaml_event_t ev;
    *root = NULL;
    for (;;) {
        if (next_event(ps, &ev, err) < 0)
            return -1;
        yaml_event_type_t type = ev.type;
        if (type == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            return 0;
        }
        if (type == YAML_DOCUMENT_START_EVENT && *root) {
            cp_fail_at(err, mark_loc(ps, ev.start_mark),
                       "a second YAML document; only one is read per input");
            yaml_event_delete(&ev);
            return -1;
        }
        if (type != YAML_STREAM_START_EVENT && type != YAML_DOCUMENT_START_EVENT &&
            type != YAML_DOCUMENT_END_EVENT) {
            *root = parse_node(ps, &ev, "", 0, err);
            if (!*root) {
                yaml_event_delete(&ev);
                return -1;
            }
        }
        yaml_event_delete(&ev);
    }
}

/* Parse text into a new tree; origin must be interned in the document that
 * will own the tree. */
ynode *yio_parse_text(const char *text, size_t len, const char *origin, int set_mode,
                         cp_err *err)
{
    pstate ps = { .origin = origin, .text = text, .len = len, .set_mode = set_mode };
    if (!yaml_parser_initialize(&ps.parser)) {
        cp_fail(err, CP_EXIT_INTERNAL, "%s: cannot initialise the YAML parser", origin);
        return NULL;
    }
    yaml_parser_set_input_string(&ps.parser, (const unsigned char *)text, len);
    ynode *root;
    int rc = parse_stream(&ps, &root, err);
    yaml_parser_delete(&ps.parser);
    if (rc < 0) {
        yio_node_free(root);
        return NULL;
    }
    if (!root) {
        root = yio_node_new(YN_NULL, (cp_loc){ origin, set_mode ? 0 : 1, set_mode ? 0 : 1 });
        root->str = xstrdup("");
    }
    return root;
}

/* The document owns a copy of origin; every node's location points at it. */
ydoc *yio_parse_string(const char *text, size_t len, const char *origin, cp_err *err)
{
    ydoc *doc = doc_new();
    const char *o = yio_doc_origin(doc, origin ? origin : "<string>");
    doc->root = yio_parse_text(text, len, o, 0, err);
    if (!doc->root) {
        yio_free(doc);
        return NULL;
    }
    if (doc->root->kind == YN_NULL) {
        /* an empty document is an empty mapping */
        cp_loc loc = doc->root->loc;
        yio_node_free(doc->root);
        doc->root = yio_node_new(YN_MAP, loc);
    }
    return doc;
}

/* The whole input is read first so that libyaml parses from memory and a
 * syntax error can look at the character it points to (tabs). */
ydoc *yio_parse_stream(FILE *f, const char *origin, cp_err *err)
{
    cp_loc at = { origin, 0, 0 };
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : 4096;
            text = yio_xrealloc(text, cap);
        }
        size_t got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0 || len > (size_t)YIO_MAX_INPUT)
            break;
    }
    int bad = ferror(f);
    int saved = errno;
    ydoc *doc = NULL;
    if (bad)
        cp_fail_at(err, at, "cannot read: %s", strerror(saved));
    else if (len > (size_t)YIO_MAX_INPUT)
        cp_fail_at(err, at, "larger than %ld bytes; not a cpsim YAML file", YIO_MAX_INPUT);
    else
        doc = yio_parse_string(text, len, origin, err);
    free(text);
    return doc;
}

ydoc *yio_parse_file(const char *path, cp_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        cp_fail_at(err, (cp_loc){ path, 0, 0 }, "cannot open: %s", strerror(errno));
        return NULL;
    }
    ydoc *doc = yio_parse_stream(f, path, err);
    fclose(f);
    return doc;
}

/* ---- accessors ---------------------------------------------------------- */

/* Marks through map->seen, which a const map still allows: reading a key is
 * what makes it known to yio_no_unknown. */
const ynode *yio_key(const ynode *map, const char *key)
{
    if (!map || map->kind != YN_MAP)
        return NULL;
    long i = yio_map_find(map, key);
    if (i < 0)
        return NULL;
    map->seen[i] = 1;
    return map->kids[i];
}

/* "what n is" for messages: "\"x\"", "a mapping", ... */
static const char *describe(const ynode *n, char *buf, size_t len)
{
    if (!n)
        return "nothing";
    switch (n->kind) {
    case YN_MAP:
        return "a mapping";
    case YN_SEQ:
        return "a list";
    case YN_NULL:
        return n->str && *n->str ? "null" : "an empty value";
    case YN_SCALAR:
        break;
    }
    int cut = strlen(n->str) > YIO_SHOW_CHARS;
    snprintf(buf, len, "%s\"%.*s%s\"", n->quoted ? "the quoted string " : "", YIO_SHOW_CHARS,
             n->str, cut ? "..." : "");
    return buf;
}

/* "<loc>: <what>: expected <expected>, got <n>". */
static int expected(const ynode *n, const char *what, const char *expect, const char *extra,
                    cp_err *err)
{
    char buf[128];
    const char *got = describe(n, buf, sizeof buf);
    const char *sep = what && *what ? ": " : "";
    if (!n)
        return cp_fail(err, CP_EXIT_INPUT, "%s%sexpected %s, got nothing", what, sep, expect);
    return cp_fail_at(err, n->loc, "%s%sexpected %s, got %s%s", what, sep, expect, got,
                      extra ? extra : "");
}

int yio_want_map(const ynode *n, const char *what, cp_err *err)
{
    return n && n->kind == YN_MAP ? 0 : expected(n, what, "a mapping", NULL, err);
}

int yio_want_seq(const ynode *n, const char *what, cp_err *err)
{
    return n && n->kind == YN_SEQ ? 0 : expected(n, what, "a list", NULL, err);
}

/* Copy s without '_' digit separators into buf, checking that every '_'
 * sits between two digits.  Returns -1 on a misplaced '_' or overflow. */
static int strip_separators(const char *s, char *buf, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; s[i]; i++) {
        if (s[i] == '_') {
            if (i == 0 || !isdigit((unsigned char)s[i - 1]) || !isdigit((unsigned char)s[i + 1]))
                return -1;
            continue;
        }
        if (o + 1 >= len)
            return -1;
        buf[o++] = s[i];
    }
    buf[o] = '\0';
    return 0;
}

/* Skip decimal digits; returns how many. */
static size_t digits(const char **p)
{
    size_t n = 0;
    while (isdigit((unsigned char)**p)) {
        (*p)++;
        n++;
    }
    return n;
}

/* A decimal number: [+-] digits [. digits] [e [+-] digits] (digits may be
 * empty on one side of the point).  No hex, inf or nan. */
static int parse_number(const char *s, double *out)
{
    char buf[128];
    if (strip_separators(s, buf, sizeof buf) < 0)
        return -1;
    const char *p = buf;
    if (*p == '+' || *p == '-')
        p++;
    size_t mant = digits(&p);
    if (*p == '.') {
        p++;
        mant += digits(&p);
    }
    if (mant == 0)
        return -1;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (digits(&p) == 0)
            return -1;
    }
    if (*p)
        return -1;
    double v = strtod(buf, NULL);
    if (!isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* Decimal integer with '_' separators, or a number form that is an exact
 * integer (1e6, 65536.0). */
static int parse_integer(const char *s, long long *out)
{
    char buf[128];
    if (strip_separators(s, buf, sizeof buf) < 0)
        return -1;
    const char *p = buf + (buf[0] == '+' || buf[0] == '-');
    if (digits(&p) > 0 && *p == '\0') {
        errno = 0;
        long long v = strtoll(buf, NULL, 10);
        if (errno == ERANGE)
            return -1;
        *out = v;
        return 0;
    }
    double d;
    /* 9.2e18 is just below 2^63 (derived: LLONG_MAX = 2^63 - 1). */
    if (parse_number(s, &d) < 0 || d != floor(d) || fabs(d) > 9.2e18)
        return -1;
    *out = (long long)d;
    return 0;
}

int yio_int(const ynode *n, const char *what, long long lo, long long hi, long long *out,
            cp_err *err)
{
    long long v;
    if (n && n->kind == YN_SCALAR && !n->quoted && parse_integer(n->str, &v) == 0 && v >= lo &&
        v <= hi) {
        *out = v;
        return 0;
    }
    char expect[96];
    if (lo == LLONG_MIN && hi == LLONG_MAX)
        snprintf(expect, sizeof expect, "an integer");
    else if (hi == LLONG_MAX)
        snprintf(expect, sizeof expect, "an integer >= %lld", lo);
    else
        snprintf(expect, sizeof expect, "an integer in [%lld, %lld]", lo, hi);
    return expected(n, what, expect, NULL, err);
}

int yio_double(const ynode *n, const char *what, double lo, double hi, double *out,
               cp_err *err)
{
    double v;
    if (n && n->kind == YN_SCALAR && !n->quoted && parse_number(n->str, &v) == 0 && v >= lo &&
        v <= hi) {
        *out = v;
        return 0;
    }
    char expect[96];
    snprintf(expect, sizeof expect, "a number in [%g, %g]", lo, hi);
    return expected(n, what, expect, NULL, err);
}

int yio_bool(const ynode *n, const char *what, int *out, cp_err *err)
{
    static const char *const yes[] = { "true", "yes", "on" };
    static const char *const no[] = { "false", "no", "off" };
    if (n && n->kind == YN_SCALAR && !n->quoted) {
        for (size_t i = 0; i < 3; i++) {
            if (strcasecmp(n->str, yes[i]) == 0 || strcasecmp(n->str, no[i]) == 0) {
                *out = strcasecmp(n->str, yes[i]) == 0;
                return 0;
            }
        }
    }
    return expected(n, what, "true or false", NULL, err);
}

const char *yio_str(const ynode *n, const char *what, cp_err *err)
{
    if (n && n->kind == YN_SCALAR)
        return n->str;
    expected(n, what, "a string", NULL, err);
    return NULL;
}

int yio_enum(const ynode *n, const char *what, const char *const *names, int *out, cp_err *err)
{
    if (n && n->kind == YN_SCALAR) {
        for (int i = 0; names[i]; i++) {
            if (strcmp(n->str, names[i]) == 0) {
                *out = i;
                return 0;
            }
        }
    }
    char list[512] = "one of ";
    for (int i = 0; names[i]; i++) {
        size_t o = strlen(list);
        snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", names[i]);
    }
    char hint[160] = "";
    if (n && n->kind == YN_SCALAR)
        cp_suggest(hint, sizeof hint, n->str, names);
    return expected(n, what, list, hint, err);
}

int yio_opt_int(const ynode *map, const char *prefix, const char *key, long long lo,
                long long hi, long long *out, cp_err *err)
{
    const ynode *n = yio_key(map, key);
    char what[256];
    return n ? yio_int(n, yio_path(what, sizeof what, prefix, key), lo, hi, out, err) : 0;
}

int yio_opt_double(const ynode *map, const char *prefix, const char *key, double lo, double hi,
                   double *out, cp_err *err)
{
    const ynode *n = yio_key(map, key);
    char what[256];
    return n ? yio_double(n, yio_path(what, sizeof what, prefix, key), lo, hi, out, err) : 0;
}

int yio_opt_bool(const ynode *map, const char *prefix, const char *key, int *out, cp_err *err)
{
    const ynode *n = yio_key(map, key);
    char what[256];
    return n ? yio_bool(n, yio_path(what, sizeof what, prefix, key), out, err) : 0;
}

int yio_opt_enum(const ynode *map, const char *prefix, const char *key,
                 const char *const *names, int *out, cp_err *err)
{
    const ynode *n = yio_key(map, key);
    char what[256];
    return n ? yio_enum(n, yio_path(what, sizeof what, prefix, key), names, out, err) : 0;
}

int yio_opt_str(const ynode *map, const char *prefix, const char *key, const char **out,
                cp_err *err)
{
    const ynode *n = yio_key(map, key);
    if (!n)
        return 0;
    char what[256];
    const char *s = yio_str(n, yio_path(what, sizeof what, prefix, key), err);
    if (!s)
        return -1;
    *out = s;
    return 0;
}

/* Reports the first unseen key in document order; without a close match
 * the message lists the known keys instead of a suggestion. */
int yio_no_unknown(const ynode *map, const char *prefix, const char *const *known, cp_err *err)
{
    if (!map || map->kind != YN_MAP)
        return 0;
    for (size_t i = 0; i < map->n; i++) {
        if (map->seen[i])
            continue;
        char where[300];
        if (prefix && *prefix)
            snprintf(where, sizeof where, " in %s", prefix);
        else
            snprintf(where, sizeof where, " at the top level");
        char hint[512];
        cp_suggest(hint, sizeof hint, map->keys[i], known);
        if (!hint[0]) {
            size_t o = (size_t)snprintf(hint, sizeof hint, " (known keys:");
            for (size_t k = 0; known[k] && o < sizeof hint; k++)
                o += (size_t)snprintf(hint + o, sizeof hint - o, "%s %s", k ? "," : "", known[k]);
            if (o < sizeof hint)
                snprintf(hint + o, sizeof hint - o, ")");
        }
        return cp_fail_at(err, map->key_locs[i], "unknown key \"%s\"%s%s", map->keys[i], where,
                          hint);
    }
    return 0;
}

