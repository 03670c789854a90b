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

static int parse_lines(char *buf, size_t len, const char *path, sweep_lines *out, cp_err *err)
{
    size_t start = 0;
    int lineno = 1;
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != '\n')
            continue;
        buf[i] = '\0';
        json_error_t je;
        json_t *j = json_loads(buf + start, 0, &je);
        if (!line_valid(j)) {
            json_decref(j);
            return cp_fail(err, CP_EXIT_INPUT, "%s:%d: not a sweep result line%s%s", path,
                           lineno, j ? "" : ": ", j ? "" : je.text);
        }
        sweep_lines_add(out, j);
        start = i + 1;
        lineno++;
    }
    return 0;
}

int sweep_read_results(const char *path, int repair, sweep_lines *out, cp_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno == ENOENT ? 0 : cp_fail(err, CP_EXIT_INPUT, "%s: cannot read: %s", path,
                                             strerror(errno));
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[65536];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            cap = 2 * (len + n + 1);
            buf = realloc(buf, cap);
            if (!buf)
                abort();
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(f);
    size_t whole = len;
    while (whole > 0 && buf[whole - 1] != '\n')
        whole--;
    int rc = parse_lines(buf, whole, path, out, err);
    free(buf);
    /* a torn last line: its point did not finish as far as results go */
    if (rc == 0 && repair && whole < len && truncate(path, (off_t)whole) != 0)
        return cp_fail(err, CP_EXIT_INPUT, "%s: cannot drop the incomplete last line: %s", path,
                       strerror(errno));
    return rc;
}

int sweep_append(int fd, json_t *line, cp_err *err)
{
    char *text = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    if (!text)
        return cp_fail(err, CP_EXIT_INTERNAL, "cannot format a result line");
    size_t len = strlen(text);
    text[len] = '\n';                /* replaces the terminator: one write */
    ssize_t w;
    do
        w = write(fd, text, len + 1);
    while (w < 0 && errno == EINTR);
    free(text);
    if (w != (ssize_t)(len + 1))
        return cp_fail(err, CP_EXIT_INPUT, "results.jsonl: write failed: %s",
                       w < 0 ? strerror(errno) : "short write");
    return 0;
}

/* summary.json without its per-rank list, the rank peaks kept. */
static json_t *result_summary(json_t *summary)
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

json_t *sweep_result_line(const sweep_spec *sp, const sweep_point *pt, const char *scen_hash,
                          json_t *summary, const cp_err *why)
{
    json_t *j = json_object();
    json_object_set_new(j, "index", json_integer(pt->index));
    json_object_set_new(j, "id", json_string(pt->id));
    json_object_set_new(j, "params", sweep_point_params(sp, pt));
    json_object_set_new(j, "scenario_hash", scen_hash ? json_string(scen_hash) : json_null());
    json_object_set_new(j, "status", json_string(summary ? "ok" : "failed"));
    if (summary) {
        json_object_set_new(j, "summary", result_summary(summary));
    } else {
        json_object_set_new(j, "error", json_string(why->msg));
        json_object_set_new(j, "exit", json_integer(why->code ? why->code : CP_EXIT_INTERNAL));
    }
    return j;
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

/* The accuracy of the cost sources of the lines' platform (the first that
 * ran: a preset by name), NULL when it cannot be had (its ties then stay
 * unknown). */
static json_t *source_errors(const sweep_lines *l)
{
    for (size_t i = 0; i < l->n; i++) {
        json_t *sc = json_object_get(json_object_get(l->line[i], "summary"), "scenario");
        const char *name = json_string_value(json_object_get(sc, "platform"));
        if (!name)
            continue;
        platform p;
        cp_err e = {0};
        if (plat_load(name, NULL, NULL, &p, &e) != 0 || !p.calibration[0])
            return NULL;
        return cost_source_errors(&p, &e);
    }
    return NULL;
}

int sweep_rank_lines(sweep_lines *l, const char *dir, cp_err *err)
{
    /* the ranking's margins, and the accuracies they came from beside the
     * results (the heat maps' ties read them) */
    json_t *errs = source_errors(l);
    char path[4200];
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    json_t *meta = json_load_file(path, 0, NULL);
    rep_sweep_objective(l->line, l->n, json_object_get(meta, "objective"));
    json_decref(meta);
    rep_sweep_rank(l->line, l->n, errs);
    snprintf(path, sizeof path, "%s/source_errors.json", dir);
    int rc = 0;
    if (errs)
        rc = rep_write_json(errs, path, err);
    else
        unlink(path);
    json_decref(errs);
    return rc;
}

int sweep_write_lines(const char *path, const sweep_lines *l, cp_err *err)
{
    rep_file rf;
    if (rep_open(&rf, path, err) != 0)
        return -1;
    int ok = 1;
    for (size_t i = 0; ok && i < l->n; i++)
        ok = json_dumpf(l->line[i], rf.f, JSON_COMPACT | JSON_PRESERVE_ORDER |
                                              JSON_REAL_PRECISION(17)) == 0 &&
             fputc('\n', rf.f) != EOF;
    if (rep_close(&rf, ok, err) != 0)
        return ok ? -1 : cp_fail(err, CP_EXIT_INPUT, "%s: write failed", path);
    return 0;
}

int sweep_load_dir(const char *dir, sweep_lines *l, char *path, size_t len, cp_err *err)
{
    snprintf(path, len, "%s/results.jsonl", dir);
    int rc = sweep_read_results(path, 0, l, err);
    return rc == 0 ? sweep_lines_normalize(l, err) : rc;
}

int sweep_plot_dir(const char *dir, cp_err *err)
{
    char path[4200];
    sweep_lines l = {0};
    int rc = sweep_load_dir(dir, &l, path, sizeof path, err);
    if (rc == 0)
        rc = plot_sweep(dir, l.line, l.n, err);
    sweep_lines_free(&l);
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

static int merge_one(const char *dir, json_t *first, sweep_lines *all, FILE *log, cp_err *err)
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
    size_t before = all->n;
    if (sweep_read_results(path, 0, all, err) < 0)
        return -1;
    if (log)
        fprintf(log, "merge: %s: %zu results\n", dir, all->n - before);
    return 0;
}

/* Tell which points are missing; returns how many. */
static long long report_missing(const sweep_lines *l, long long total, FILE *log)
{
    long long missing = 0;
    size_t k = 0;
    for (long long i = 0; i < total; i++) {
        while (k < l->n && json_integer_value(json_object_get(l->line[k], "index")) < i)
            k++;
        if (k < l->n && json_integer_value(json_object_get(l->line[k], "index")) == i)
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
    sweep_lines all = {0};
    int rc = 0;
    for (int d = 0; d < ndirs && rc == 0; d++)
        rc = merge_one(dirs[d], first, &all, log, err);
    if (rc == 0)
        rc = sweep_lines_normalize(&all, err);
    if (rc == 0 && mkdir(out_dir, 0777) != 0 && errno != EEXIST)
        rc = cp_fail(err, CP_EXIT_INPUT, "--out %s: cannot create it: %s", out_dir,
                     strerror(errno));
    char path[4200];
    long long missing = 0, total = json_integer_value(json_object_get(first, "points"));
    if (rc == 0) {
        missing = report_missing(&all, total, log);
        json_object_set_new(first, "shard", json_string("merged"));
        snprintf(path, sizeof path, "%s/sweep.json", out_dir);
        rc = rep_write_json(first, path, err);
    }
    if (rc == 0)
        rc = sweep_rank_lines(&all, out_dir, err);
    if (rc == 0) {
        snprintf(path, sizeof path, "%s/results.jsonl", out_dir);
        rc = sweep_write_lines(path, &all, err);
    }
    if (rc == 0)
        rc = rep_sweep_tables(all.line, all.n, out_dir, log, err);
    /* the merged folder is written (what the shards hold), but a merge
     * that lacks points is not a finished sweep */
    if (rc == 0 && missing > 0)
        rc = cp_fail(err, CP_EXIT_INPUT, "--merge: %lld of %lld points are missing from the "
                     "folders merged into %s (run their shards, with --resume, and merge again)",
                     missing, total, out_dir);
    sweep_lines_free(&all);
    json_decref(first);
    return rc;
}
