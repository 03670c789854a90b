/* cli_sweep: `cpsim sweep`, the command: its options, the output folder
 * (checked, resumed), the run of the points that are still to do
 * (sweep_exec.c) and, at the end, the tables (and plots).  See sweep.h for
 * the files. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reports/plot.h"
#include "reports/report.h"
#include "sim/cli/cli.h"
#include "sim/sweep/sweep.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    stop_signal = sig;
}

/* ---- the command ------------------------------------------------------------------------ */

static int fail(const cp_err *err)
{
    fprintf(stderr, "cpsim: %s\n", err->msg);
    return err->code ? err->code : CP_EXIT_INTERNAL;
}

static json_t *meta_json(const sweep_spec *sp, const sweep_points *pts, const cli_opts *a,
                         int shard_points)
{
    char h[17], shard[32];
    sweep_hex(pts->spec_hash, h);
    snprintf(shard, sizeof shard, "%d/%d", a->shard_i, a->shard_n);
    json_t *keys = json_array();
    for (int k = 0; k < sp->naxes; k++)
        json_array_append_new(keys, json_string(sp->axes[k].key));
    json_t *m = json_pack("{s:s, s:s, s:s, s:s, s:o, s:i, s:i, s:s, s:i, s:s}", "schema",
                          "cpsim.sweep/1", "name", sp->name, "file", sp->path, "base", sp->base,
                          "keys", keys, "candidates", pts->candidates, "points", pts->n,
                          "shard", shard, "shard_points", shard_points, "spec_hash", h);
    if (sp->objective) /* the ranking's; absent: the default by the points' kind */
        json_object_set(m, "objective", sp->objective);
    return m;
}

/* Check DIR against this sweep (--resume) or that it holds no results. */
static int check_out_dir(const char *dir, const char *spec_hash, int resume, cp_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/results.jsonl", dir);
    struct stat st;
    int have = stat(path, &st) == 0 && st.st_size > 0;
    if (!resume)
        return have ? cp_fail(err, CP_EXIT_INPUT, "%s holds results already: add --resume to "
                              "continue that sweep, or choose another --out", path) : 0;
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    json_error_t je;
    json_t *m = json_load_file(path, 0, &je);
    if (!m)
        return have ? cp_fail(err, CP_EXIT_INPUT, "--resume: %s is missing or unreadable (%s)",
                              path, je.text) : 0;
    char h[64];
    const char *mh = json_string_value(json_object_get(m, "spec_hash"));
    snprintf(h, sizeof h, "%s", mh ? mh : "none");
    int same = mh && strcmp(mh, spec_hash) == 0;
    json_decref(m);
    return same ? 0 : cp_fail(err, CP_EXIT_INPUT, "--resume: %s holds another sweep (its "
                              "spec_hash %s, this one %s): the sweep file or its base changed",
                              dir, h, spec_hash);
}

static int cmp_id(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The points of this shard that results.jsonl lacks. */
static int pending(const sweep_points *pts, const sweep_lines *done, const cli_opts *a,
                   const sweep_point ***out, int *total)
{
    const char **ids = malloc((done->n + 1) * sizeof *ids);
    const sweep_point **pending_pts = malloc(((size_t)pts->n + 1) * sizeof *pending_pts);
    if (!ids || !pending_pts)
        abort();
    for (size_t i = 0; i < done->n; i++)
        ids[i] = json_string_value(json_object_get(done->line[i], "id"));
    qsort(ids, done->n, sizeof *ids, cmp_id);
    int n = 0;
    *total = 0;
    for (int i = 0; i < pts->n; i++) {
        if (!sweep_in_shard(pts->pt[i].index, a->shard_i, a->shard_n))
            continue;
        ++*total;
        const char *id = pts->pt[i].id;
        if (!bsearch(&id, ids, done->n, sizeof *ids, cmp_id))
            pending_pts[n++] = &pts->pt[i];
    }
    free(ids);
    *out = pending_pts;
    return n;
}

static void list_points(const sweep_spec *sp, const sweep_points *pts, const cli_opts *a)
{
    for (int i = 0; i < pts->n; i++) {
        if (!sweep_in_shard(pts->pt[i].index, a->shard_i, a->shard_n))
            continue;
        json_t *p = sweep_point_params(sp, &pts->pt[i]);
        char *t = json_dumps(p, JSON_COMPACT | JSON_PRESERVE_ORDER);
        printf("%d %s %s\n", pts->pt[i].index, pts->pt[i].id, t);
        free(t);
        json_decref(p);
    }
}

/* The run's results sorted and ranked, the tables and the plots. */
static int conclude(const char *dir, const cli_opts *a, int plots, cp_err *err)
{
    sweep_recs r;
    int rc = sweep_recs_load_dir(dir, 0, &r, err);
    if (rc == 0)
        rc = sweep_recs_conclude(&r, dir, a->quiet ? NULL : stdout, err);
    if (rc == 0 && plots)
        rc = plot_sweep(dir, &r.pts, err);
    if (rc == 0 && !a->quiet)
        printf("\nwrote %s/results.jsonl, results.csv, best.csv, pareto.csv, split.csv%s\n",
               dir, plots ? ", plots/" : "");
    /* a sweep none of whose points ran is an error (a grid key misspelt,
     * a base that does not load), not an empty result */
    const plot_point *first_failed = NULL;
    size_t ok = 0, n = r.pts.n;
    for (size_t i = 0; i < n; i++) {
        if (r.pts.p[i].status_ok)
            ok++;
        else if (!first_failed)
            first_failed = &r.pts.p[i];
    }
    if (rc == 0 && n > 0 && ok == 0)
        rc = cp_fail(err, CP_EXIT_INPUT, "every point of the sweep failed (%zu); point %d: %s",
                     n, first_failed->index, first_failed->error ? first_failed->error : "(null)");
    sweep_recs_free(&r);
    return rc;
}

/* One sweep at a time writes a folder: DIR/sweep.lock, locked (flock,
 * released when the process ends however it ends) and holding the pid of
 * its holder for the message. */
static int lock_dir(const char *dir, int *lock, cp_err *err)
{
    char path[4200], pid[32] = "";
    snprintf(path, sizeof path, "%s/sweep.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT, 0666);
    if (fd < 0)
        return cp_fail(err, CP_EXIT_INPUT, "%s: cannot open: %s", path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        ssize_t n = read(fd, pid, sizeof pid - 1);
        pid[n > 0 ? n : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        close(fd);
        if (e == EWOULDBLOCK)
            return cp_fail(err, CP_EXIT_INPUT, "--out %s: another cpsim sweep (pid %s) is "
                           "writing this folder; wait for it or choose another --out", dir,
                           pid[0] ? pid : "?");
        return cp_fail(err, CP_EXIT_INPUT, "%s: cannot lock: %s", path, strerror(e));
    }
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
        close(fd);
        return cp_fail(err, CP_EXIT_INPUT, "%s: cannot write: %s", path, strerror(errno));
    }
    *lock = fd;
    return 0;
}

/* --resume: every point already in the folder ran on the inputs it would
 * read now.  The spec hash covers the sweep file and the base, not the
 * files a point reads (model config, platform, calibration tables), so a
 * table changed between a kill and --resume would leave points of two
 * tables in one folder: each finished point's scenario hash is taken again
 * and compared with the one it recorded. */
static int check_done_inputs(const sweep_spec *sp, const sweep_points *pts,
                             const sweep_lines *done, cp_err *err)
{
    int changed = 0, first = -1;
    char then[17] = "", now[17] = "";
    for (size_t i = 0; i < done->n; i++) {
        const char *id = json_string_value(json_object_get(done->line[i], "id"));
        const char *h = json_string_value(json_object_get(done->line[i], "scenario_hash"));
        const sweep_point *pt = NULL;
        for (int k = 0; id && h && k < pts->n && !pt; k++)
            if (strcmp(pts->pt[k].id, id) == 0)
                pt = &pts->pt[k];
        if (!pt)
            continue; /* a point that did not load: nothing read */
        int nsets;
        char **sets = sweep_point_sets(sp, pt, &nsets);
        scenario s;
        cp_err why = {0};
        uint64_t v = 0;
        int loads = wl_load(sp->base, (const char *const *)sets, nsets, NULL, &s, &why) == 0;
        if (loads) {
            sweep_scenario_hash(&s, &v, &why);
            wl_free(&s);
        }
        sweep_sets_free(sets, nsets);
        char hex[17];
        sweep_hex(v, hex);
        if (!loads || strcmp(hex, h) != 0) {
            if (changed++ == 0) {
                first = pt->index;
                snprintf(then, sizeof then, "%s", h);
                snprintf(now, sizeof now, "%s", loads ? hex : "none");
            }
        }
    }
    if (!changed)
        return 0;
    return cp_fail(err, CP_EXIT_INPUT, "--resume: %d of the %zu points already done ran on "
                   "other inputs than they would read now (point %d: scenario hash %s then, %s "
                   "now): a model config, platform or calibration table changed since; run "
                   "into a new --out", changed, done->n, first, then, now);
}

/* The output folder made ready for this run: checked against the sweep,
 * sweep.json written, results.jsonl repaired and open for appending, and
 * the points of this shard that it lacks. */
typedef struct session {
    int lock;               /* DIR/sweep.lock, held (flock) for the session */
    int fd;
    const sweep_point **pending_pts;
    int npending;
    int total;              /* points of this shard */
    int failed;             /* failed points among those done before */
} session;

static int open_session(const sweep_spec *sp, const sweep_points *pts, const cli_opts *a,
                        const char *dir, session *ss, cp_err *err)
{
    char h[17], path[4200];
    sweep_hex(pts->spec_hash, h);
    memset(ss, 0, sizeof *ss);
    ss->fd = ss->lock = -1;
    sweep_lines done = {0};
    int rc = rep_mkdir_p(dir, err);
    if (rc == 0)
        rc = lock_dir(dir, &ss->lock, err);
    if (rc == 0) {
        rep_remove_stale(dir);
        rc = check_out_dir(dir, h, a->resume, err);
    }
    snprintf(path, sizeof path, "%s/results.jsonl", dir);
    if (rc == 0)
        rc = sweep_read_results(path, 1, &done, err);
    if (rc == 0 && a->resume)
        rc = check_done_inputs(sp, pts, &done, err);
    if (rc == 0)
        ss->npending = pending(pts, &done, a, &ss->pending_pts, &ss->total);
    for (size_t i = 0; i < done.n; i++)
        ss->failed += strcmp(json_string_value(json_object_get(done.line[i], "status")), "ok") != 0;
    sweep_lines_free(&done);
    if (rc == 0) {
        json_t *meta = meta_json(sp, pts, a, ss->total);
        snprintf(path, sizeof path, "%s/sweep.json", dir);
        rc = rep_write_json(meta, path, err);
        json_decref(meta);
    }
    snprintf(path, sizeof path, "%s/results.jsonl", dir);
    if (rc == 0 && (ss->fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0666)) < 0)
        rc = cp_fail(err, CP_EXIT_INPUT, "%s: cannot open: %s", path, strerror(errno));
    return rc;
}

static void close_session(session *ss)
{
    if (ss->fd >= 0) {
        fdatasync(ss->fd);
        close(ss->fd);
    }
    if (ss->lock >= 0)
        close(ss->lock); /* releases the lock */
    free(ss->pending_pts);
}

static int run_sweep(const sweep_spec *sp, const cli_opts *a, const char *dir, cp_err *err)
{
    sweep_points pts;
    if (sweep_expand(sp, &pts, err) < 0)
        return -1;
    if (a->list) {
        list_points(sp, &pts, a);
        sweep_points_free(&pts);
        return 0;
    }
    session ss;
    int rc = open_session(sp, &pts, a, dir, &ss, err), stopped = 0;
    int jobs = a->jobs ? a->jobs : sp->jobs ? sp->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
    jobs = jobs < 1 ? 1 : jobs;
    sweep_progress pg = {.total = ss.total, .done = ss.total - ss.npending,
                         .resumed = ss.total - ss.npending, .failed = ss.failed,
                         .t0 = sweep_now(), .last = sweep_now(), .tty = isatty(STDERR_FILENO),
                         .quiet = a->quiet, .name = sp->name};
    if (rc == 0 && !a->quiet)
        fprintf(stderr, "sweep %s: %d points (%d of %d grid combinations pass `where`)%s, %d "
                "to run, %d at a time\n", sp->name, ss.total, pts.n, pts.candidates,
                a->shard_n > 1 ? " in this shard" : "", ss.npending, jobs);
    if (rc == 0) {
        sweep_exec_opts eo = {.jobs = jobs, .timeout_s = sp->timeout_s, .share = !a->no_share,
                              .fd = ss.fd, .pg = &pg};
        stopped = sweep_exec(sp, ss.pending_pts, ss.npending, &eo, &stop_signal, err);
        rc = stopped < 0 ? -1 : 0;
        sweep_progress_show(&pg, 1);
    }
    close_session(&ss);
    sweep_points_free(&pts);
    if (rc == 0 && stopped) {
        fprintf(stderr, "sweep %s: interrupted (%s); %d of %d points are in %s/results.jsonl; "
                "continue with --resume\n", sp->name, strsignal(stop_signal), pg.done, ss.total,
                dir);
        return 128 + stop_signal;
    }
    return rc == 0 ? conclude(dir, a, a->plots || sp->plots, err) : -1;
}

int cli_sweep(const cli_opts *a)
{
    cp_err err = {0};
    int rc;
    if (a->merge) {
        rc = sweep_merge((char *const *)a->args, a->nargs, a->out_dir, a->quiet ? NULL : stdout,
                         &err);
        if (rc == 0 && a->plots)
            rc = sweep_plot_dir(a->out_dir, &err);
        return rc < 0 ? fail(&err) : CP_EXIT_OK;
    }
    sweep_spec sp;
    if (sweep_load(a->args[0], &sp, &err) < 0)
        return fail(&err);
    char dir[4096];
    if (a->out_dir)
        snprintf(dir, sizeof dir, "%s", a->out_dir);
    else
        snprintf(dir, sizeof dir, "out/%s", sp.name);
    struct sigaction sa = {.sa_handler = on_signal}, old[3];
    sigemptyset(&sa.sa_mask);
    const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int k = 0; k < 3; k++)
        sigaction(sigs[k], &sa, &old[k]);
    rc = run_sweep(&sp, a, dir, &err);
    for (int k = 0; k < 3; k++)
        sigaction(sigs[k], &old[k], NULL);
    sweep_free(&sp);
    return rc < 0 ? fail(&err) : rc;
}
