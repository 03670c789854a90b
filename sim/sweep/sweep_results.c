/* sweep_results: results.jsonl lines, their reading after a kill, and the
 * merge of shard outputs (see sweep.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/cost.h"
#include "base/grow.h"
#include "platforms/platform.h"
#include "reports/plot.h"
#include "reports/report.h"
#include "sim/sweep/sweep.h"

void sweep_lines_add(sweep_lines *l, json_t *line)
{
    l->line = cp_grow(l->line, &l->cap, l->n + 1, sizeof *l->line);
    l->line[l->n++] = line;
}

void sweep_lines_free(sweep_lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        json_decref(l->line[i]);
    free(l->line);
    memset(l, 0, sizeof *l);
}

/* A line's fields that every consumer relies on. */
static int line_valid(json_t *j)
{
    return json_is_object(j) && json_is_integer(json_object_get(j, "index")) &&
           json_is_string(json_object_get(j, "id")) &&
           json_is_object(json_object_get(j, "params")) &&
           json_is_string(json_object_get(j, "status"));
}

/* Call fn on each complete line of path (absent: none), with its offset and
 * length (its newline included).  A last line without its newline (a write
 * cut by a kill) is left out, and with repair the file is truncated before
 * it.  A malformed line is an error naming it.  One line at a time: the
 * file is never held whole. */
static int each_line(const char *path, int repair,
                     int (*fn)(void *ctx, json_t *line, long long off, size_t len), void *ctx,
                     cp_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno == ENOENT ? 0 : cp_fail(err, CP_EXIT_INPUT, "%s: cannot read: %s", path,
                                             strerror(errno));
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n;
    long long off = 0;
    int lineno = 1, rc = 0, torn = 0;
    while (rc == 0 && (n = getline(&buf, &cap, f)) > 0) {
        if (buf[n - 1] != '\n') {
            torn = 1;   /* a torn last line: its point did not finish as far as results go */
            break;
        }
        json_error_t je;
        json_t *j = json_loadb(buf, (size_t)n - 1, 0, &je);
        if (!line_valid(j)) {
            rc = cp_fail(err, CP_EXIT_INPUT, "%s:%d: not a sweep result line%s%s", path,
                         lineno, j ? "" : ": ", j ? "" : je.text);
            json_decref(j);
            break;
        }
        rc = fn(ctx, j, off, (size_t)n);
        off += n;
        lineno++;
    }
    free(buf);
    fclose(f);
    if (rc == 0 && repair && torn && truncate(path, (off_t)off) != 0)
        return cp_fail(err, CP_EXIT_INPUT, "%s: cannot drop the incomplete last line: %s", path,
                       strerror(errno));
    return rc;
}

static int add_line(void *ctx, json_t *line, long long off, size_t len)
{
    (void)off;
    (void)len;
    sweep_lines_add(ctx, line);
    return 0;
}

int sweep_read_results(const char *path, int repair, sweep_lines *out, cp_err *err)
{
    return each_line(path, repair, add_line, out, err);
}

/* One write of text (len bytes) to fd (O_APPEND). */
static int append_text(int fd, const char *text, size_t len, cp_err *err)
{
    ssize_t w;
    do
        w = write(fd, text, len);
    while (w < 0 && errno == EINTR);
    if (w != (ssize_t)len)
        return cp_fail(err, CP_EXIT_INPUT, "results.jsonl: write failed: %s",
                       w < 0 ? strerror(errno) : "short write");
    return 0;
}

int sweep_append(int fd, json_t *line, cp_err *err)
{
    char *text = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    if (!text)
        return cp_fail(err, CP_EXIT_INTERNAL, "cannot format a result line");
    size_t len = strlen(text);
    text[len] = '\n';                /* replaces the terminator: one write */
    int rc = append_text(fd, text, len + 1, err);
    free(text);
    return rc;
}

/* summary.json without its per-rank list, the rank peaks kept. */
json_t *sweep_result_summary(json_t *summary)
{
    json_t *s = json_deep_copy(summary);
    json_t *ranks = json_object_get(s, "ranks");
    json_t *peaks = json_array();
    size_t i;
    json_t *r;
    json_array_foreach(ranks, i, r)
        json_array_append(peaks, json_object_get(r, "peak_bytes"));
    json_object_del(s, "ranks");
    json_object_del(s, "schema");
    json_object_set_new(s, "rank_peak_bytes", peaks);
    return s;
}

/* The fields of a result line before its outcome. */
static json_t *line_head(const sweep_spec *sp, const sweep_point *pt, const char *scen_hash,
                         int ok)
{
    json_t *j = json_object();
    json_object_set_new(j, "index", json_integer(pt->index));
    json_object_set_new(j, "id", json_string(pt->id));
    json_object_set_new(j, "params", sweep_point_params(sp, pt));
    json_object_set_new(j, "scenario_hash", scen_hash ? json_string(scen_hash) : json_null());
    json_object_set_new(j, "status", json_string(ok ? "ok" : "failed"));
    return j;
}

json_t *sweep_result_line(const sweep_spec *sp, const sweep_point *pt, const char *scen_hash,
                          json_t *summary, const cp_err *why)
{
    json_t *j = line_head(sp, pt, scen_hash, summary != NULL);
    if (summary) {
        json_object_set_new(j, "summary", sweep_result_summary(summary));
    } else {
        json_object_set_new(j, "error", json_string(why->msg));
        json_object_set_new(j, "exit", json_integer(why->code ? why->code : CP_EXIT_INTERNAL));
    }
    return j;
}

/* The place of the scenario in a shared summary's text: a string no
 * summary holds (control characters, which JSON escapes). */
#define SCENARIO_MARK "\001cpsim:scenario\001"

int sweep_shared_text(json_t *summary, sweep_shared *out)
{
    memset(out, 0, sizeof *out);
    json_t *s = sweep_result_summary(summary);
    json_object_set_new(s, "scenario", json_string(SCENARIO_MARK));
    char *text = json_dumps(s, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(s);
    json_t *mark = json_string(SCENARIO_MARK);
    char *m = json_dumps(mark, JSON_ENCODE_ANY);
    json_decref(mark);
    char *at = text && m ? strstr(text, m) : NULL;
    if (!at || strstr(at + 1, m)) {
        free(text);
        free(m);
        return -1;      /* not found once: the caller keeps the summary whole */
    }
    size_t ml = strlen(m);
    *at = '\0';
    out->pre = text;
    out->post = strdup(at + ml);
    free(m);
    if (!out->post)
        abort();
    return 0;
}

void sweep_shared_free(sweep_shared *t)
{
    free(t->pre);
    free(t->post);
    memset(t, 0, sizeof *t);
}

int sweep_append_shared(int fd, const sweep_spec *sp, const sweep_point *pt,
                        const char *scen_hash, const sweep_shared *t, json_t *scen,
                        cp_err *err)
{
    /* the line sweep_result_line makes, as text: its head without the
     * closing brace, then the summary with the point's own scenario */
    json_t *head = line_head(sp, pt, scen_hash, 1);
    int flags = JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17);
    char *h = json_dumps(head, flags), *sc = json_dumps(scen, flags | JSON_ENCODE_ANY);
    json_decref(head);
    if (!h || !sc) {
        free(h);
        free(sc);
        return cp_fail(err, CP_EXIT_INTERNAL, "cannot format a result line");
    }
    size_t hl = strlen(h) - 1, pl = strlen(t->pre), sl = strlen(sc), ql = strlen(t->post);
    static const char key[] = ",\"summary\":";
    size_t kl = sizeof key - 1, len = hl + kl + pl + sl + ql + 2;
    char *line = malloc(len);
    if (!line)
        abort();
    char *o = line;
    memcpy(o, h, hl);
    o += hl;
    memcpy(o, key, kl);
    o += kl;
    memcpy(o, t->pre, pl);
    o += pl;
    memcpy(o, sc, sl);
    o += sl;
    memcpy(o, t->post, ql);
    o += ql;
    *o++ = '}';
    *o++ = '\n';
    int rc = append_text(fd, line, len, err);
    free(line);
    free(h);
    free(sc);
    return rc;
}

static int cmp_line(const void *a, const void *b)
{
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "index"));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "index"));
    if (x != y)
        return x < y ? -1 : 1;
    return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "id")),
                  json_string_value(json_object_get(*(json_t *const *)b, "id")));
}

int sweep_lines_normalize(sweep_lines *l, cp_err *err)
{
    if (l->n > 1)
        qsort(l->line, l->n, sizeof *l->line, cmp_line);
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (k > 0 && cmp_line(&l->line[k - 1], &l->line[i]) == 0) {
            if (!json_equal(l->line[k - 1], l->line[i]))
                return cp_fail(err, CP_EXIT_INPUT, "point %s (index %lld) has two different "
                               "results", json_string_value(json_object_get(l->line[i], "id")),
                               (long long)json_integer_value(json_object_get(l->line[i], "index")));
            json_decref(l->line[i]);
            continue;
        }
        l->line[k++] = l->line[i];
    }
    l->n = k;
    return 0;
}

/* ---- records: the last phase ------------------------------------------------------- */

void sweep_recs_init(sweep_recs *r, const json_t *objective)
{
    memset(r, 0, sizeof *r);
    plot_points_init(&r->pts);
    rep_points_paths(&r->pts, objective);
}

void sweep_recs_free(sweep_recs *r)
{
    plot_points_free(&r->pts);
    for (int i = 0; i < r->nfiles; i++)
        free(r->files[i]);
    free(r->files);
    memset(r, 0, sizeof *r);
}

typedef struct rec_ctx {
    sweep_recs *r;
    int as_written;
} rec_ctx;

static int add_rec(void *ctx, json_t *line, long long off, size_t len)
{
    rec_ctx *c = ctx;
    plot_point *p = plot_points_add(&c->r->pts, line, c->as_written);
    p->file = c->r->nfiles - 1;
    p->off = off;
    p->len = len;
    json_decref(line);
    return 0;
}

int sweep_recs_read(sweep_recs *r, const char *path, int as_written, cp_err *err)
{
    r->files = realloc(r->files, (size_t)(r->nfiles + 1) * sizeof *r->files);
    if (!r->files || !(r->files[r->nfiles] = strdup(path)))
        abort();
    r->nfiles++;
    rec_ctx c = {r, as_written};
    return each_line(path, 0, add_rec, &c, err);
}

/* The line of a record, read back from its file (its newline dropped); NULL
 * with err when the file changed under the sweep. */
static json_t *rec_line(const sweep_recs *r, const plot_point *p, char **buf, size_t *cap,
                        cp_err *err)
{
    if (*cap < p->len) {
        *buf = cp_grow(*buf, cap, p->len, 1);
    }
    int fd = open(r->files[p->file], O_RDONLY);
    ssize_t got = fd < 0 ? -1 : pread(fd, *buf, p->len, (off_t)p->off);
    if (fd >= 0)
        close(fd);
    json_t *j = got == (ssize_t)p->len && (*buf)[p->len - 1] == '\n'
                    ? json_loadb(*buf, p->len - 1, 0, NULL) : NULL;
    if (!j)
        cp_fail(err, CP_EXIT_INPUT, "%s: changed while the sweep read it (point %d)",
                r->files[p->file], p->index);
    return j;
}

static int cmp_rec(const void *a, const void *b)
{
    const plot_point *x = a, *y = b;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    return strcmp(x->id, y->id);
}

int sweep_recs_normalize(sweep_recs *r, cp_err *err)
{
    plot_points *s = &r->pts;
    /* the order of lines of one point does not matter: they are kept only
     * when equal */
    if (s->n > 1)
        qsort(s->p, s->n, sizeof *s->p, cmp_rec);
    size_t k = 0;
    char *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    for (size_t i = 0; i < s->n && rc == 0; i++) {
        if (k > 0 && cmp_rec(&s->p[k - 1], &s->p[i]) == 0) {
            json_t *a = rec_line(r, &s->p[k - 1], &buf, &cap, err);
            json_t *b = a ? rec_line(r, &s->p[i], &buf, &cap, err) : NULL;
            if (a && b && !json_equal(a, b))
                rc = cp_fail(err, CP_EXIT_INPUT, "point %s (index %d) has two different "
                             "results", s->p[i].id, s->p[i].index);
            else if (!a || !b)
                rc = -1;
            json_decref(a);
            json_decref(b);
            continue;
        }
        s->p[k++] = s->p[i];
    }
    free(buf);
    s->n = k;
    return rc;
}

/* The accuracy of the cost sources of the points' platform (the first that
 * ran: a preset by name), NULL when it cannot be had (its ties then stay
 * unknown). */
static json_t *source_errors(const plot_points *s)
{
    for (size_t i = 0; i < s->n; i++) {
        if (!s->p[i].platform)
            continue;
        platform p;
        cp_err e = {0};
        if (plat_load(s->p[i].platform, NULL, NULL, &p, &e) != 0 || !p.calibration[0])
            return NULL;
        return cost_source_errors(&p, &e);
    }
    return NULL;
}

/* Rank the records with the objective of dir's sweep.json and the
 * accuracies of their platform's cost sources, written to
 * DIR/source_errors.json (removed when unknown); *obj: the objective
 * (caller frees). */
static int rank_recs(sweep_recs *r, const char *dir, json_t **obj, cp_err *err)
{
    json_t *errs = source_errors(&r->pts);
    char path[4200];
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    json_t *meta = json_load_file(path, 0, NULL);
    *obj = rep_objective_of(r->pts.serving, json_object_get(meta, "objective"));
    json_decref(meta);
    rep_points_objective(&r->pts, *obj);
    rep_points_rank(&r->pts, errs);
    snprintf(path, sizeof path, "%s/source_errors.json", dir);
    int rc = 0;
    if (errs)
        rc = rep_write_json(errs, path, err);
    else
        unlink(path);
    json_decref(errs);
    return rc;
}

/* DIR/results.jsonl and DIR/results.csv, one line at a time in index
 * order: each line read back from where it lies, its objective (obj) and
 * ranking set anew (as rep_sweep_objective and rep_sweep_rank set them on
 * the line), written compact at 17 digits, and its row of results.csv. */
static int rewrite_lines(const sweep_recs *r, const json_t *obj, const char *dir, cp_err *err)
{
    char path[4200];
    rep_file jf, cf;
    snprintf(path, sizeof path, "%s/results.jsonl", dir);
    if (rep_open(&jf, path, err) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/results.csv", dir);
    if (rep_open(&cf, path, err) != 0) {
        rep_close(&jf, 0, err);
        return -1;
    }
    json_t *keys = rep_results_csv_keys(&r->pts);
    rep_results_csv_header(cf.f, keys);
    char *buf = NULL;
    size_t cap = 0;
    int ok = 1, rc = 0;
    for (size_t i = 0; ok && rc == 0 && i < r->pts.n; i++) {
        const plot_point *p = &r->pts.p[i];
        json_t *j = rec_line(r, p, &buf, &cap, err);
        if (!j) {
            rc = -1;
            break;
        }
        json_object_del(j, "objective");
        json_object_del(j, "ranking");
        if (p->status_ok)
            json_object_set_new(j, "objective",
                                rep_line_objective(obj, json_object_get(j, "summary")));
        json_t *rk = rep_point_ranking(p);
        if (rk)
            json_object_set_new(j, "ranking", rk);
        ok = json_dumpf(j, jf.f, JSON_COMPACT | JSON_PRESERVE_ORDER |
                                     JSON_REAL_PRECISION(17)) == 0 && fputc('\n', jf.f) != EOF;
        rep_results_csv_row(cf.f, keys, j, p);
        json_decref(j);
    }
    free(buf);
    json_decref(keys);
    if (rep_close(&jf, ok && rc == 0, err) != 0 && rc == 0)
        rc = ok ? -1 : cp_fail(err, CP_EXIT_INPUT, "%s/results.jsonl: write failed", dir);
    if (rep_close(&cf, rc == 0, err) != 0 && rc == 0)
        rc = -1;
    return rc;
}

int sweep_recs_conclude(sweep_recs *r, const char *dir, FILE *out, cp_err *err)
{
    json_t *obj = NULL;
    int rc = rank_recs(r, dir, &obj, err);
    /* a finished sweep leaves its lines in index order: deterministic files */
    if (rc == 0)
        rc = rewrite_lines(r, obj, dir, err);
    json_decref(obj);
    if (rc == 0)
        rc = rep_sweep_tables(&r->pts, dir, out, err);
    return rc;
}

int sweep_recs_load_dir(const char *dir, int as_written, sweep_recs *r, cp_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    json_t *meta = json_load_file(path, 0, NULL);
    sweep_recs_init(r, json_object_get(meta, "objective"));
    json_decref(meta);
    snprintf(path, sizeof path, "%s/results.jsonl", dir);
    int rc = sweep_recs_read(r, path, as_written, err);
    return rc == 0 ? sweep_recs_normalize(r, err) : rc;
}

int sweep_plot_dir(const char *dir, cp_err *err)
{
    sweep_recs r;
    int rc = sweep_recs_load_dir(dir, 1, &r, err);
    if (rc == 0)
        rc = plot_sweep(dir, &r.pts, err);
    sweep_recs_free(&r);
    return rc;
}

/* ---- merge ----------------------------------------------------------------------- */

static json_t *read_meta(const char *dir, cp_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    json_error_t je;
    json_t *m = json_load_file(path, 0, &je);
    if (!m || !json_is_string(json_object_get(m, "spec_hash")) ||
        !json_is_integer(json_object_get(m, "points"))) {
        json_decref(m);
        cp_fail(err, CP_EXIT_INPUT, "%s: not the output folder of a sweep (no valid "
                "sweep.json%s%s)", dir, m ? "" : ": ", m ? "" : je.text);
        return NULL;
    }
    return m;
}

static int merge_one(const char *dir, json_t *first, sweep_recs *all, FILE *log, cp_err *err)
{
    json_t *meta = read_meta(dir, err);
    if (!meta)
        return -1;
    const char *h = json_string_value(json_object_get(meta, "spec_hash"));
    const char *h0 = json_string_value(json_object_get(first, "spec_hash"));
    int same = strcmp(h, h0) == 0;
    if (!same)
        cp_fail(err, CP_EXIT_INPUT, "%s: another sweep (spec_hash %s, not %s)", dir, h, h0);
    json_decref(meta);
    if (!same)
        return -1;
    char path[4200];
    snprintf(path, sizeof path, "%s/results.jsonl", dir);
    size_t before = all->pts.n;
    if (sweep_recs_read(all, path, 0, err) < 0)
        return -1;
    if (log)
        fprintf(log, "merge: %s: %zu results\n", dir, all->pts.n - before);
    return 0;
}

/* Tell which points are missing; returns how many. */
static long long report_missing(const plot_points *l, long long total, FILE *log)
{
    long long missing = 0;
    size_t k = 0;
    for (long long i = 0; i < total; i++) {
        while (k < l->n && l->p[k].index < i)
            k++;
        if (k < l->n && l->p[k].index == i)
            continue;
        if (missing++ < 10 && log)
            fprintf(log, "merge: point %lld missing\n", i);
    }
    if (log && missing)
        fprintf(log, "merge: %lld of %lld points missing (run their shards, with --resume)\n",
                missing, total);
    return missing;
}

int sweep_merge(char *const *dirs, int ndirs, const char *out_dir, FILE *log, cp_err *err)
{
    json_t *first = read_meta(dirs[0], err);
    if (!first)
        return -1;
    sweep_recs all;
    sweep_recs_init(&all, json_object_get(first, "objective"));
    int rc = 0;
    for (int d = 0; d < ndirs && rc == 0; d++)
        rc = merge_one(dirs[d], first, &all, log, err);
    if (rc == 0)
        rc = sweep_recs_normalize(&all, err);
    if (rc == 0 && mkdir(out_dir, 0777) != 0 && errno != EEXIST)
        rc = cp_fail(err, CP_EXIT_INPUT, "--out %s: cannot create it: %s", out_dir,
                     strerror(errno));
    char path[4200];
    long long missing = 0, total = json_integer_value(json_object_get(first, "points"));
    if (rc == 0) {
        missing = report_missing(&all.pts, total, log);
        json_object_set_new(first, "shard", json_string("merged"));
        snprintf(path, sizeof path, "%s/sweep.json", out_dir);
        rc = rep_write_json(first, path, err);
    }
    if (rc == 0)
        rc = sweep_recs_conclude(&all, out_dir, log, err);
    /* the merged folder is written (what the shards hold), but a merge
     * that lacks points is not a finished sweep */
    if (rc == 0 && missing > 0)
        rc = cp_fail(err, CP_EXIT_INPUT, "--merge: %lld of %lld points are missing from the "
                     "folders merged into %s (run their shards, with --resume, and merge again)",
                     missing, total, out_dir);
    sweep_recs_free(&all);
    json_decref(first);
    return rc;
}
