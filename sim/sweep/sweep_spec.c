/* sweep: the sweep file, its expansion into points, point identities and
 * shards (see sweep.h; the hashes of files and scenarios: sweep_hash.c). */
#include "sim/sweep/sweep.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "base/datadir.h"
#include "base/grow.h"
#include "base/yamlio.h"
#include "reports/report.h"

/* Upper bound on grid size before `where`: our own sanity limit, far beyond
 * the thousands of points a sweep of this simulator runs (issue 5 asks for
 * 1,000 in a minute), so that a typo such as a 1e6-value axis is refused
 * rather than expanded. */
#define SWEEP_MAX_CANDIDATES 10000000LL


static char *xstrdup(const char *s)
{
    char *d = strdup(s);
    if (!d)
        abort();
    return d;
}

uint64_t sweep_fnv1a64(uint64_t h, const void *data, size_t len)
{
    /* FNV-1a 64: offset basis 0xcbf29ce484222325, prime 0x100000001b3
     * (Fowler, Noll, Vo; IETF draft-eastlake-fnv) */
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

void sweep_hex(uint64_t h, char out[17])
{
    snprintf(out, 17, "%016" PRIx64, h);
}

/* ---- YAML values as --set text ---------------------------------------------- */

/* Characters a plain scalar may hold and still read back alike inside a
 * flow collection. */
static int plain_safe(const char *s)
{
    if (!*s)
        return 0;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("_.+-/", *p))
            return 0;
    return 1;
}

static void put_flow(const ynode *n, FILE *out)
{
    if (n->kind == YN_NULL) {
        fputs("null", out);
    } else if (n->kind == YN_SCALAR) {
        if (!n->quoted && plain_safe(n->str)) {
            fputs(n->str, out);
            return;
        }
        fputc('"', out);
        for (const char *p = n->str; *p; p++) {
            if (*p == '"' || *p == '\\')
                fputc('\\', out);
            fputc(*p, out);
        }
        fputc('"', out);
    } else {
        fputc(n->kind == YN_SEQ ? '[' : '{', out);
        for (size_t i = 0; i < n->n; i++) {
            if (i)
                fputs(", ", out);
            if (n->kind == YN_MAP) {
                ynode key = {.kind = YN_SCALAR, .str = n->keys[i]};
                put_flow(&key, out);
                fputs(": ", out);
            }
            put_flow(n->kids[i], out);
        }
        fputc(n->kind == YN_SEQ ? ']' : '}', out);
    }
}

static char *flow_text(const ynode *n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        abort();
    put_flow(n, m);
    fclose(m);
    return buf;
}

/* A --set value as YAML types it. */
static json_t *typed_value(const ynode *n)
{
    if (n->kind == YN_NULL)
        return json_null();
    if (n->kind == YN_SEQ || n->kind == YN_MAP) {
        json_t *c = n->kind == YN_SEQ ? json_array() : json_object();
        for (size_t i = 0; i < n->n; i++) {
            if (n->kind == YN_SEQ)
                json_array_append_new(c, typed_value(n->kids[i]));
            else
                json_object_set_new(c, n->keys[i], typed_value(n->kids[i]));
        }
        return c;
    }
    const char *s = n->str;
    if (n->quoted)
        return json_string(s);
    if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0)
        return json_boolean(s[0] == 't');
    if (strcmp(s, "null") == 0 || strcmp(s, "~") == 0)
        return json_null();
    char *end;
    errno = 0;
    long long i = strtoll(s, &end, 10);
    if (*s && *end == '\0' && errno == 0)
        return json_integer(i);
    double d = strtod(s, &end);
    if (*s && *end == '\0' && !isalpha((unsigned char)s[0]) &&
        !isalpha((unsigned char)s[s[0] == '-' || s[0] == '+']))
        return json_real(d);
    return json_string(s);
}

/* ---- the sweep file --------------------------------------------------------- */

static const char *const top_keys[] = {"name", "base", "set", "grid", "where", "options",
                                       "objective", "pareto", NULL};
static const char *const option_keys[] = {"jobs", "timeout_s", "plots", NULL};

/* A value of a key with enumerated values (wl_enum_names) is one of them;
 * others (numbers, lists, ...) the workload loader checks per point. */
static int check_enum(const char *what, const char *key, const ynode *v, cp_err *err)
{
    const char *const *names = wl_enum_names(key);
    if (!names || v->kind != YN_SCALAR)
        return 0;
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], v->str) == 0)
            return 0;
    char list[512], hint[96];
    size_t off = 0;
    for (int i = 0; names[i] && off < sizeof list; i++)
        off += (size_t)snprintf(list + off, sizeof list - off, "%s%s", i ? ", " : "", names[i]);
    return cp_fail_at(err, v->loc, "%s: expected one of %s, got \"%s\"%s", what, list, v->str,
                      cp_suggest(hint, sizeof hint, v->str, names));
}

static int read_sets(const ynode *map, sweep_spec *sp, cp_err *err)
{
    if (!map)
        return 0;
    if (yio_want_map(map, "set", err) < 0)
        return -1;
    sp->sets = cp_xcalloc(map->n, sizeof *sp->sets);
    for (size_t i = 0; i < map->n; i++) {
        char what[300];
        snprintf(what, sizeof what, "set.%s", map->keys[i]);
        if (check_enum(what, map->keys[i], map->kids[i], err) < 0)
            return -1;
        char *v = flow_text(map->kids[i]);
        size_t len = strlen(map->keys[i]) + strlen(v) + 2;
        sp->sets[i] = malloc(len);
        if (!sp->sets[i])
            abort();
        snprintf(sp->sets[i], len, "%s=%s", map->keys[i], v);
        free(v);
        sp->nsets++;
    }
    return 0;
}

static int read_grid(const ynode *map, sweep_spec *sp, cp_err *err)
{
    if (!map)
        return cp_fail_at(err, (cp_loc){sp->path, 0, 0}, "missing key \"grid\" (the workload "
                          "keys to vary and their values)");
    if (yio_want_map(map, "grid", err) < 0)
        return -1;
    if (map->n == 0)
        return cp_fail_at(err, map->loc, "grid: no keys to vary");
    sp->axes = cp_xcalloc(map->n, sizeof *sp->axes);
    long long size = 1;
    for (size_t i = 0; i < map->n; i++) {
        const ynode *vals = map->kids[i];
        char what[300];
        snprintf(what, sizeof what, "grid.%s", map->keys[i]);
        if (yio_want_seq(vals, what, err) < 0)
            return -1;
        if (vals->n == 0)
            return cp_fail_at(err, vals->loc, "%s: no values", what);
        for (int k = 0; k < sp->nsets; k++) {
            /* "parallel.tp" against "parallel.tp", "parallel" or "parallel.tp.x" */
            size_t a = strcspn(sp->sets[k], "="), b = strlen(map->keys[i]);
            size_t m = a < b ? a : b;
            if (strncmp(sp->sets[k], map->keys[i], m) == 0 &&
                (a == b || (a < b ? map->keys[i][a] : sp->sets[k][b]) == '.'))
                return cp_fail_at(err, vals->loc, "%s: set: gives %.*s too; one of the two "
                                  "would override the other (keep the key in one place)",
                                  what, (int)a, sp->sets[k]);
        }
        sweep_axis *ax = &sp->axes[sp->naxes++];
        ax->key = xstrdup(map->keys[i]);
        ax->vals = cp_xcalloc(vals->n, sizeof *ax->vals);
        for (size_t k = 0; k < vals->n; k++) {
            if (check_enum(what, map->keys[i], vals->kids[k], err) < 0)
                return -1;
            char *v = flow_text(vals->kids[k]);
            for (int q = 0; q < ax->nvals; q++)
                if (strcmp(ax->vals[q], v) == 0) {
                    cp_loc at = vals->kids[k]->loc;
                    free(v);
                    return cp_fail_at(err, at, "%s: the value %s is listed twice (two points "
                                      "with one id)", what, ax->vals[q]);
                }
            ax->vals[ax->nvals++] = v;
        }
        size *= (long long)vals->n;
        if (size > SWEEP_MAX_CANDIDATES)
            return cp_fail_at(err, map->loc, "grid: more than %lld combinations",
                              SWEEP_MAX_CANDIDATES);
    }
    return 0;
}

/* Whether `text` is written whole on line `at.line` from column `at.col`
 * of the file (not folded over several lines). */
static int written_on_one_line(const char *path, cp_loc at, const char *text)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[4096];
    int ln = 0, found = 0;
    while (!found && fgets(line, sizeof line, f))
        if (++ln == at.line)
            found = at.col >= 1 && (size_t)at.col <= strlen(line) &&
                    strncmp(line + at.col - 1, text, strlen(text)) == 0;
    fclose(f);
    return found;
}

static int add_where(sweep_spec *sp, const ynode *n, cp_err *err)
{
    const char *text = yio_str(n, "where", err);
    if (!text)
        return -1;
    cp_loc at = n->loc;
    at.col += n->quoted;     /* the text starts after the quote */
    sweep_expr *e = sweep_expr_parse(text, at, written_on_one_line(sp->path, at, text), err);
    if (!e)
        return -1;
    sp->where[sp->nwhere++] = e;
    return 0;
}

static int read_where(const ynode *n, sweep_spec *sp, cp_err *err)
{
    if (!n)
        return 0;
    if (n->kind == YN_SCALAR) {
        sp->where = cp_xcalloc(1, sizeof *sp->where);
        return add_where(sp, n, err);
    }
    if (yio_want_seq(n, "where", err) < 0)
        return -1;
    sp->where = cp_xcalloc(n->n, sizeof *sp->where);
    for (size_t i = 0; i < n->n; i++)
        if (add_where(sp, n->kids[i], err) < 0)
            return -1;
    return 0;
}

static int read_options(const ynode *n, sweep_spec *sp, cp_err *err)
{
    if (!n)
        return 0;
    if (yio_want_map(n, "options", err) < 0)
        return -1;
    long long jobs = 0;
    /* 4096: the largest parallel degree of a workload (workload.c
     * WL_MAX_DEGREE); no machine runs more simulations at once */
    if (yio_opt_int(n, "options", "jobs", 1, 4096, &jobs, err) < 0 ||
        yio_opt_double(n, "options", "timeout_s", 0, 1e6, &sp->timeout_s, err) < 0 ||
        yio_opt_bool(n, "options", "plots", &sp->plots, err) < 0 ||
        yio_no_unknown(n, "options", option_keys, err) < 0)
        return -1;
    sp->jobs = (int)jobs;
    return 0;
}

/* One metric, PATH or {metric: PATH, goal: min|max}, as {metric, goal}
 * (the goal by default the metric's natural one, rep_metric_goal). */
static json_t *read_metric(const ynode *n, const char *what, cp_err *err)
{
    static const char *const keys[] = {"metric", "goal", NULL};
    static const char *const goals[] = {"min", "max", NULL};
    const ynode *m = n;
    int goal = -1;
    char mw[96];
    snprintf(mw, sizeof mw, "%s", what);
    if (n->kind == YN_MAP) {
        m = yio_key(n, "metric");
        snprintf(mw, sizeof mw, "%s.metric", what);
        if (!m) {
            cp_fail_at(err, n->loc, "%s: give metric: (a summary path such as "
                       "serving.goodput_per_s)", what);
            return NULL;
        }
        if (yio_opt_enum(n, what, "goal", goals, &goal, err) < 0 ||
            yio_no_unknown(n, what, keys, err) < 0)
            return NULL;
    }
    const char *path = yio_str(m, mw, err);
    if (!path)
        return NULL;
    char why[900];
    if (strlen(path) >= 200 || rep_metric_check(path, why, sizeof why) < 0) {
        cp_fail_at(err, m->loc, "%s: %s", mw, strlen(path) >= 200 ? "a path of 200 or more "
                   "characters" : why);
        return NULL;
    }
    if (goal < 0)
        goal = rep_metric_goal(path);
    return json_pack("{s:s, s:s}", "metric", path, "goal", goal == REP_GOAL_MAX ? "max" : "min");
}

/* objective: and pareto: into sp->objective, each part only when given
 * (the rest comes from the default by the points' kind, at ranking). */
static int read_objective(const ynode *obj, const ynode *par, sweep_spec *sp, cp_err *err)
{
    if (!obj && !par)
        return 0;
    json_t *o = obj ? read_metric(obj, "objective", err) : json_object();
    if (o && par) {
        json_t *list = json_array();
        json_object_set_new(o, "pareto", list);
        if (yio_want_seq(par, "pareto", err) < 0 ||
            (par->n != 2 && cp_fail_at(err, par->loc, "pareto: give two metrics, got %zu",
                                       par->n) < 0)) {
            json_decref(o);
            return -1;
        }
        for (size_t i = 0; i < par->n; i++) {
            char what[32];
            snprintf(what, sizeof what, "pareto.%zu", i);
            json_t *m = read_metric(par->kids[i], what, err);
            if (!m) {
                json_decref(o);
                return -1;
            }
            json_array_append_new(list, m);
        }
    }
    sp->objective = o;
    return o ? 0 : -1;
}

/* The file's stem: "sweeps/thinker-h100.yaml" -> "thinker-h100". */
static void stem(const char *path, char *buf, size_t len)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    snprintf(buf, len, "%.*s", (int)len - 1, b);
    char *dot = strrchr(buf, '.');
    if (dot && dot != buf)
        *dot = '\0';
}

static int read_spec(ydoc *doc, sweep_spec *sp, cp_err *err)
{
    const ynode *root = yio_root(doc);
    if (yio_want_map(root, "the sweep file", err) < 0)
        return -1;
    /* unknown keys first: a typo is named before what it hides */
    for (int k = 0; top_keys[k]; k++)
        yio_key(root, top_keys[k]);
    if (yio_no_unknown(root, "", top_keys, err) < 0) {
        /* a workload given where a sweep goes (its top-level model key) */
        if (yio_key(root, "model"))
            cp_err_append(err, "; this looks like a workload: run it with cpsim run FILE, or "
                               "name it as the sweep's base");
        return -1;
    }
    const char *name = NULL, *base = NULL;
    if (yio_opt_str(root, "", "name", &name, err) < 0 ||
        yio_opt_str(root, "", "base", &base, err) < 0)
        return -1;
    if (!base)
        return cp_fail_at(err, (cp_loc){sp->path, 0, 0}, "missing key \"base\" (the workload "
                          "every point starts from)");
    stem(sp->path, sp->name, sizeof sp->name);
    if (name)
        snprintf(sp->name, sizeof sp->name, "%s", name);
    char dir[4096];
    cp_resolve(sp->base, sizeof sp->base, cp_dirname(dir, sizeof dir, sp->path), base);
    if (read_sets(yio_key(root, "set"), sp, err) < 0 ||
        read_grid(yio_key(root, "grid"), sp, err) < 0 ||
        read_where(yio_key(root, "where"), sp, err) < 0 ||
        read_options(yio_key(root, "options"), sp, err) < 0 ||
        read_objective(yio_key(root, "objective"), yio_key(root, "pareto"), sp, err) < 0)
        return -1;
    return 0;
}

static int check_spec(const sweep_spec *sp, cp_err *err);

int sweep_load(const char *path, sweep_spec *sp, cp_err *err)
{
    memset(sp, 0, sizeof *sp);
    snprintf(sp->path, sizeof sp->path, "%s", path);
    ydoc *doc = yio_parse_file(path, err);
    if (!doc)
        return -1;
    int rc = read_spec(doc, sp, err);
    yio_free(doc);
    if (rc == 0)
        rc = check_spec(sp, err);
    if (rc < 0)
        sweep_free(sp);
    return rc;
}

void sweep_free(sweep_spec *sp)
{
    sweep_sets_free(sp->sets, sp->nsets);
    for (int a = 0; a < sp->naxes; a++) {
        for (int k = 0; k < sp->axes[a].nvals; k++)
            free(sp->axes[a].vals[k]);
        free(sp->axes[a].vals);
        free(sp->axes[a].key);
    }
    free(sp->axes);
    for (int w = 0; w < sp->nwhere; w++)
        sweep_expr_free(sp->where[w]);
    free(sp->where);
    json_decref(sp->objective);
    memset(sp, 0, sizeof *sp);
}

/* ---- points -------------------------------------------------------------------- */

char **sweep_point_sets(const sweep_spec *sp, const sweep_point *pt, int *n)
{
    char **sets = cp_xcalloc((size_t)(sp->nsets + sp->naxes), sizeof *sets);
    for (int i = 0; i < sp->nsets; i++)
        sets[i] = xstrdup(sp->sets[i]);
    for (int a = 0; a < sp->naxes; a++) {
        const char *k = sp->axes[a].key, *v = sp->axes[a].vals[pt->val[a]];
        size_t len = strlen(k) + strlen(v) + 2;
        char *s = malloc(len);
        if (!s)
            abort();
        snprintf(s, len, "%s=%s", k, v);
        sets[sp->nsets + a] = s;
    }
    *n = sp->nsets + sp->naxes;
    return sets;
}

void sweep_sets_free(char **sets, int n)
{
    for (int i = 0; sets && i < n; i++)
        free(sets[i]);
    free(sets);
}

json_t *sweep_point_params(const sweep_spec *sp, const sweep_point *pt)
{
    json_t *o = json_object();
    for (int a = 0; a < sp->naxes; a++) {
        const char *v = sp->axes[a].vals[pt->val[a]];
        cp_err err = {0};
        /* the text was written by put_flow, so it parses */
        ydoc *d = yio_parse_string(v, strlen(v), "value", &err);
        json_object_set_new(o, sp->axes[a].key, d ? typed_value(yio_root(d)) : json_string(v));
        yio_free(d);
    }
    return o;
}

static void point_id(const sweep_spec *sp, const int *val, char out[17])
{
    uint64_t h = SWEEP_FNV_INIT;
    for (int a = 0; a < sp->naxes; a++) {
        h = sweep_fnv1a64(h, sp->axes[a].key, strlen(sp->axes[a].key));
        h = sweep_fnv1a64(h, "=", 1);
        h = sweep_fnv1a64(h, sp->axes[a].vals[val[a]], strlen(sp->axes[a].vals[val[a]]));
        h = sweep_fnv1a64(h, "\n", 1);
    }
    sweep_hex(h, out);
}

/* What the conditions see: the base workload resolved once (shared by all
 * candidates), and per candidate its workload as written and resolved. */
typedef struct base_view {
    ydoc *resolved;     /* base + fixed assignments, resolved; on first need */
    int tried;
    cp_err why;         /* why the base does not load */
} base_view;

typedef struct cand_ctx {
    const sweep_spec *sp;
    const int *val;
    base_view *base;
    ydoc *doc;          /* base + assignments as written, on first need */
    ydoc *resolved;     /* the candidate resolved, on first need */
    int unloadable;     /* the candidate does not load */
    char **kept;        /* the text of every string value handed out, valid
                           until the conditions are evaluated (two keys of
                           one comparison each keep their own) */
    int nkept, capkept;
} cand_ctx;

/* Walk a dotted path in a YAML tree (list items by index). */
static const ynode *walk(const ynode *n, const char *path)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *seg = strtok(buf, "."); seg && n; seg = strtok(NULL, ".")) {
        if (n->kind == YN_MAP) {
            n = yio_key(n, seg);
        } else if (n->kind == YN_SEQ) {
            char *end;
            unsigned long i = strtoul(seg, &end, 10);
            n = *end == '\0' && isdigit((unsigned char)seg[0]) && i < n->n ? n->kids[i] : NULL;
        } else {
            n = NULL;
        }
    }
    return n;
}

/* A scalar as its text (a quoted one always a string); a list or a
 * mapping as its flow text, a string.  A string's text is copied into
 * c->kept: it outlives the node's document and the next lookup. */
static int node_value(cand_ctx *c, const ynode *n, sweep_val *out)
{
    if (n->kind == YN_SCALAR && !n->quoted) {
        *out = sweep_expr_value_of(n->str);
        if (!out->is_str)
            return 1;
    }
    if (c->nkept == c->capkept) {
        c->capkept = c->capkept ? 2 * c->capkept : 8;
        c->kept = realloc(c->kept, (size_t)c->capkept * sizeof *c->kept);
        if (!c->kept)
            abort();
    }
    char *text = n->kind == YN_SCALAR ? xstrdup(n->str) : flow_text(n);
    c->kept[c->nkept++] = text;
    *out = (sweep_val){.is_str = 1, .str = text};
    return 1;
}

/* wl_dump of a loaded workload, as a tree; NULL with why when it does not
 * load. */
static ydoc *resolved_tree(const char *base, char **sets, int nsets, cp_err *why)
{
    scenario s;
    if (wl_load(base, (const char *const *)sets, nsets, NULL, &s, why) < 0)
        return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        abort();
    wl_dump(&s, m);
    fclose(m);
    wl_free(&s);
    ydoc *d = yio_parse_string(buf, len, "resolved", why);
    free(buf);
    return d;
}

static const ynode *walk_resolved(ydoc *d, const char *key)
{
    char rkey[600];
    snprintf(rkey, sizeof rkey, "resolved.%s", key);
    return d ? walk(yio_root(d), rkey) : NULL;
}

/* A key outside the grid: the candidate's workload as written, else its
 * resolved value, else (when the candidate does not load, e.g. a TP that
 * does not divide the heads) the base's resolved value. */
static int workload_lookup(cand_ctx *c, const char *key, sweep_val *out, cp_err *err)
{
    sweep_point pt = {.val = (int *)c->val};
    int nsets;
    char **sets = sweep_point_sets(c->sp, &pt, &nsets);
    int rc = 0;
    if (!c->doc) {
        c->doc = yio_parse_file(c->sp->base, err);
        for (int i = 0; c->doc && i < nsets; i++)
            if (yio_set(c->doc, sets[i], err) < 0) {
                yio_free(c->doc);
                c->doc = NULL;
            }
        rc = c->doc ? 0 : -1;
    }
    const ynode *n = rc == 0 ? walk(yio_root(c->doc), key) : NULL;
    if (rc == 0 && !n && !c->resolved && !c->unloadable) {
        cp_err why = {0};
        c->resolved = resolved_tree(c->sp->base, sets, nsets, &why);
        c->unloadable = c->resolved == NULL;
    }
    if (rc == 0 && !n)
        n = walk_resolved(c->resolved, key);
    sweep_sets_free(sets, nsets);
    if (rc == 0 && !n && c->unloadable) {
        base_view *b = c->base;
        if (!b->tried)
            b->resolved = resolved_tree(c->sp->base, c->sp->sets, c->sp->nsets, &b->why);
        b->tried = 1;
        if (!b->resolved)
            return cp_fail(err, CP_EXIT_INPUT, "where: %s: the base workload does not load: %s",
                           key, b->why.msg);
        n = walk_resolved(b->resolved, key);
    }
    if (rc < 0)
        return -1;
    return n ? node_value(c, n, out) : 0;
}

static int cand_lookup(void *vctx, const char *key, sweep_val *out, cp_err *err)
{
    cand_ctx *c = vctx;
    const sweep_spec *sp = c->sp;
    for (int a = 0; a < sp->naxes; a++) {
        if (strcmp(sp->axes[a].key, key) != 0)
            continue;
        const char *v = sp->axes[a].vals[c->val[a]];
        ydoc *d = yio_parse_string(v, strlen(v), "value", err);
        if (!d)
            return -1;
        int rc = node_value(c, yio_root(d), out);
        yio_free(d);
        return rc;
    }
    return strchr(key, '.') ? workload_lookup(c, key, out, err) : 0;
}

/* ---- `where` checked at load ------------------------------------------------ */

typedef struct where_check {
    const sweep_spec *sp;
    ydoc *doc;           /* the base as written, `set:` applied (NULL: it does not parse) */
    ydoc *resolved;      /* the base resolved (NULL: it does not load) */
    cp_err why;          /* why it does not */
} where_check;

/* A key of a condition: a grid key, or a key of the base as written or
 * resolved; a string it is compared to is one its values can take. */
static int check_key(void *vctx, const char *key, const char *lit, cp_loc at, cp_err *err)
{
    where_check *wc = vctx;
    int grid = 0;
    for (int a = 0; a < wc->sp->naxes && !grid; a++)
        grid = strcmp(wc->sp->axes[a].key, key) == 0;
    if (!grid && !(wc->doc && walk(yio_root(wc->doc), key)) && !walk_resolved(wc->resolved, key))
        return wc->resolved ? cp_fail_at(err, at, "where: unknown key %s (not a grid key nor a "
                                         "key of the workload or of its resolved values)", key)
                            : cp_fail(err, CP_EXIT_INPUT, "where: %s: the base workload does "
                                      "not load: %s", key, wc->why.msg);
    const char *const *names = wl_enum_names(key);
    if (!lit || !names)
        return 0;
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], lit) == 0)
            return 0;
    char list[512], hint[96];
    size_t off = 0;
    for (int i = 0; names[i] && off < sizeof list; i++)
        off += (size_t)snprintf(list + off, sizeof list - off, "%s%s", i ? ", " : "", names[i]);
    return cp_fail_at(err, at, "where: %s is one of %s; \"%s\" matches no point%s", key, list,
                      lit, cp_suggest(hint, sizeof hint, lit, names));
}

/* The keys of `set:` and `grid:` are workload keys: the base loaded with
 * the fixed assignments and every axis at its first value must not meet
 * an unknown key (any other failure is a point's own, reported per point:
 * a TP the heads refuse, say). */
static int check_keys(const sweep_spec *sp, cp_err *err)
{
    sweep_point pt = {.val = cp_xcalloc((size_t)sp->naxes, sizeof *pt.val)};
    int nsets;
    char **sets = sweep_point_sets(sp, &pt, &nsets);
    scenario s;
    cp_err why = {0};
    int rc = 0;
    if (wl_load(sp->base, (const char *const *)sets, nsets, NULL, &s, &why) == 0)
        wl_free(&s);
    else if (strstr(why.msg, "unknown key"))
        rc = cp_fail(err, CP_EXIT_INPUT, "%s: a key of set: or grid: is not a workload key: %s",
                     sp->path, why.msg);
    sweep_sets_free(sets, nsets);
    free(pt.val);
    return rc;
}

/* Every key of every condition checked before any point is evaluated: a
 * typo in a branch that never runs (`a || parallel.spp == 2`) or a value
 * that matches nothing would otherwise pass silently. */
static int check_spec(const sweep_spec *sp, cp_err *err)
{
    if (check_keys(sp, err) < 0)
        return -1;
    if (sp->nwhere == 0)
        return 0;
    where_check wc = {.sp = sp};
    cp_err ignored = {0};
    wc.doc = yio_parse_file(sp->base, &ignored);
    for (int i = 0; wc.doc && i < sp->nsets; i++)
        if (yio_set(wc.doc, sp->sets[i], &ignored) < 0) {
            yio_free(wc.doc);
            wc.doc = NULL;
        }
    wc.resolved = resolved_tree(sp->base, sp->sets, sp->nsets, &wc.why);
    /* a base that loads only with grid values (a TP the heads refuse,
     * overridden by every point): the first of the first 64 grid
     * combinations that loads serves */
    int *val = cp_xcalloc((size_t)sp->naxes, sizeof *val);
    for (int c = 0; !wc.resolved && c < 64; c++) {
        long long r = c, total = 1;
        for (int a = sp->naxes - 1; a >= 0; a--) {
            val[a] = (int)(r % sp->axes[a].nvals);
            r /= sp->axes[a].nvals;
            total *= sp->axes[a].nvals;
        }
        if (c >= total)
            break;
        sweep_point pt = {.val = val};
        int nsets;
        char **sets = sweep_point_sets(sp, &pt, &nsets);
        cp_err other = {0};
        wc.resolved = resolved_tree(sp->base, sets, nsets, &other);
        sweep_sets_free(sets, nsets);
    }
    free(val);
    int rc = 0;
    for (int w = 0; w < sp->nwhere && rc == 0; w++)
        rc = sweep_expr_keys(sp->where[w], check_key, &wc, err);
    yio_free(wc.doc);
    yio_free(wc.resolved);
    return rc;
}

/* Whether every condition holds: 1 yes, 0 no, -1 error. */
static int conditions_hold(const sweep_spec *sp, const int *val, base_view *base, cp_err *err)
{
    cand_ctx c = {.sp = sp, .val = val, .base = base};
    int holds = 1, rc = 0;
    for (int w = 0; w < sp->nwhere && holds && rc == 0; w++)
        rc = sweep_expr_eval(sp->where[w], cand_lookup, &c, &holds, err);
    yio_free(c.doc);
    yio_free(c.resolved);
    for (int i = 0; i < c.nkept; i++)
        free(c.kept[i]);
    free(c.kept);
    return rc < 0 ? -1 : holds;
}

int sweep_expand(const sweep_spec *sp, sweep_points *out, cp_err *err)
{
    memset(out, 0, sizeof *out);
    long long total = 1;
    for (int a = 0; a < sp->naxes; a++)
        total *= sp->axes[a].nvals;
    out->candidates = (int)total;
    int *val = cp_xcalloc((size_t)sp->naxes, sizeof *val);
    int cap = 64;
    out->pt = cp_xcalloc((size_t)cap, sizeof *out->pt);
    out->vals = cp_xcalloc((size_t)cap * (size_t)sp->naxes, sizeof *out->vals);
    uint64_t h = sweep_file_hash(SWEEP_FNV_INIT, sp->base);
    for (int i = 0; i < sp->nsets; i++)
        h = sweep_fnv1a64(h, sp->sets[i], strlen(sp->sets[i]) + 1);
    int rc = 0;
    base_view base = {0};
    for (long long c = 0; c < total && rc == 0; c++) {
        long long r = c;
        for (int a = sp->naxes - 1; a >= 0; a--) {
            val[a] = (int)(r % sp->axes[a].nvals);
            r /= sp->axes[a].nvals;
        }
        int holds = conditions_hold(sp, val, &base, err);
        if (holds <= 0) {
            rc = holds;
            continue;
        }
        if (out->n == cap) {
            cap *= 2;
            out->pt = realloc(out->pt, (size_t)cap * sizeof *out->pt);
            out->vals = realloc(out->vals, (size_t)cap * (size_t)sp->naxes * sizeof *out->vals);
            if (!out->pt || !out->vals)
                abort();
        }
        sweep_point *pt = &out->pt[out->n];
        pt->index = out->n;
        memcpy(out->vals + (size_t)out->n * (size_t)sp->naxes, val,
               (size_t)sp->naxes * sizeof *val);
        point_id(sp, val, pt->id);
        h = sweep_fnv1a64(h, pt->id, sizeof pt->id);
        out->n++;
    }
    free(val);
    yio_free(base.resolved);
    for (int i = 0; i < out->n; i++)
        out->pt[i].val = out->vals + (size_t)i * (size_t)sp->naxes;
    out->spec_hash = h;
    if (rc == 0 && out->n == 0)
        rc = cp_fail_at(err, (cp_loc){sp->path, 0, 0}, "no point of the grid passes `where` "
                        "(%d combinations tried): nothing to run", out->candidates);
    if (rc < 0)
        sweep_points_free(out);
    return rc;
}

void sweep_points_free(sweep_points *p)
{
    free(p->pt);
    free(p->vals);
    memset(p, 0, sizeof *p);
}

/* ---- shards -------------------------------------------------------------------------- */

int sweep_parse_shard(const char *text, int *i, int *n, cp_err *err)
{
    char *end;
    errno = 0;
    long a = strtol(text, &end, 10);
    if (end == text || *end != '/' || errno)
        return cp_fail(err, CP_EXIT_INPUT, "--shard %s: expected I/N (e.g. 0/4)", text);
    const char *rest = end + 1;
    long b = strtol(rest, &end, 10);
    if (end == rest || *end != '\0' || errno)
        return cp_fail(err, CP_EXIT_INPUT, "--shard %s: expected I/N (e.g. 0/4)", text);
    if (b < 1 || b > 1000000)
        return cp_fail(err, CP_EXIT_INPUT, "--shard %s: N must be in [1, 1000000]", text);
    if (a < 0 || a >= b)
        return cp_fail(err, CP_EXIT_INPUT, "--shard %s: I must be in [0, %ld] (shards are "
                       "numbered from 0)", text, b - 1);
    *i = (int)a;
    *n = (int)b;
    return 0;
}

int sweep_in_shard(int index, int i, int n)
{
    return index % n == i;
}
