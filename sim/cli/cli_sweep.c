/* cli_sweep: `cpsim sweep`, the command: its options, the output folder
 * (checked, resumed), the run of the points that are still to do
 * (sweep_exec.c) and, at the end, the tables (and plots).  See sweep.h for
 * the files. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reports/plot.h"
#include "reports/report.h"
#include "sim/cli/cli_commands.h"
#include "sim/sweep/sweep.h"

typedef struct sweep_args {
    const char *file;
    const char *out;
    int jobs;
    int resume;
    int shard_i, shard_n;
    int plots;
    int quiet;
    int list;
    int no_share;
    char **merge;
    int nmerge;
} sweep_args;

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    stop_signal = sig;
}

static void usage(FILE *f)
{
    fputs("Usage: cpsim sweep SWEEP.yaml [-j N] [--out DIR] [--resume] [--shard I/N]\n"
          "                   [--plots] [--quiet] [--list] [--no-share]\n"
          "       cpsim sweep --merge DIR... --out DIR [--plots]\n"
          "\n"
          "Runs every point of the sweep's grid that passes its `where` conditions, each in\n"
          "a child process, up to N at a time (default: the number of cores), and appends\n"
          "one JSON line per point to DIR/results.jsonl (default DIR: out/<sweep name>).\n"
          "  --resume      run only the points that DIR/results.jsonl lacks\n"
          "  --shard I/N   run the I-th of N disjoint slices (I from 0), e.g. one per\n"
          "                Slurm array task; join the outputs with --merge\n"
          "  --merge DIR.. join shard outputs into --out DIR\n"
          "  --plots       draw the sweep's plots (gnuplot) into DIR/plots\n"
          "  --list        print the points (index, id, parameters) and run nothing\n"
          "  --no-share    simulate every point, even those whose plan, platform and\n"
          "                settings equal another's (shared by default)\n"
          "  --quiet       no progress and no tables on the terminal\n",
          f);
}

static int arg_value(int argc, char **argv, int *i, const char **out, cp_err *err)
{
    const char *a = argv[*i];
    const char *eq = strchr(a, '=');
    if (a[1] == '-' && eq) {
        *out = eq + 1;
        return 0;
    }
    if (*i + 1 >= argc)
        return cp_fail(err, CP_EXIT_INPUT, "option %s needs a value", a);
    *out = argv[++*i];
    return 0;
}

static int opt_is(const char *a, const char *name)
{
    size_t n = strlen(name);
    return strncmp(a, name, n) == 0 && (a[n] == '\0' || a[n] == '=');
}

static int parse_jobs(const char *v, int *jobs, cp_err *err)
{
    char *end;
    long j = strtol(v, &end, 10);
    /* 4096: as options.jobs (sweep_spec.c) */
    if (end == v || *end || j < 1 || j > 4096)
        return cp_fail(err, CP_EXIT_INPUT, "-j %s: expected a number of jobs in [1, 4096]", v);
    *jobs = (int)j;
    return 0;
}

static int parse_args(int argc, char **argv, sweep_args *a, cp_err *err)
{
    static const char *const opts[] = {"--jobs", "--out", "--resume", "--shard", "--merge",
                                       "--plots", "--quiet", "--list", "--no-share", "--help",
                                       NULL};
    memset(a, 0, sizeof *a);
    a->shard_n = 1;
    a->merge = calloc((size_t)argc, sizeof *a->merge);
    if (!a->merge)
        abort();
    int merging = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v;
        int rc = 0;
        if (strncmp(s, "--cfg=", 6) == 0 || strncmp(s, "--log=", 6) == 0)
            rc = cp_fail(err, CP_EXIT_INPUT, "sweep: %s: SimGrid options do not reach the "
                         "points (each runs with cpsim's settings); try the point with "
                         "cpsim run", s);
        else if (strcmp(s, "-j") == 0 || opt_is(s, "--jobs"))
            rc = arg_value(argc, argv, &i, &v, err) < 0 ? -1 : parse_jobs(v, &a->jobs, err);
        else if (strncmp(s, "-j", 2) == 0 && s[2])
            rc = parse_jobs(s + 2, &a->jobs, err);
        else if (opt_is(s, "--out"))
            rc = arg_value(argc, argv, &i, &a->out, err);
        else if (opt_is(s, "--shard"))
            rc = arg_value(argc, argv, &i, &v, err) < 0
                     ? -1 : sweep_parse_shard(v, &a->shard_i, &a->shard_n, err);
        else if (strcmp(s, "--resume") == 0)
            a->resume = 1;
        else if (strcmp(s, "--plots") == 0)
            a->plots = 1;
        else if (strcmp(s, "--quiet") == 0 || strcmp(s, "-q") == 0)
            a->quiet = 1;
        else if (strcmp(s, "--list") == 0)
            a->list = 1;
        else if (strcmp(s, "--no-share") == 0)
            a->no_share = 1;
        else if (strcmp(s, "--merge") == 0)
            merging = 1;
        else if (s[0] == '-' && s[1]) {
            char hint[128];
            rc = cp_fail(err, CP_EXIT_INPUT, "sweep: unknown option %s%s", s,
                         cp_suggest(hint, sizeof hint, s, opts));
        } else if (merging)
            a->merge[a->nmerge++] = argv[i];
        else if (!a->file)
            a->file = s;
        else
            rc = cp_fail(err, CP_EXIT_INPUT, "sweep: unexpected argument \"%s\" (one sweep "
                         "file; --merge takes folders)", s);
        if (rc < 0)
            return -1;
    }
    if (merging && (a->nmerge == 0 || !a->out || a->file))
        return cp_fail(err, CP_EXIT_INPUT, "sweep --merge needs the shard folders and --out "
                       "DIR, and no sweep file");
    if (!merging && !a->file)
        return cp_fail(err, CP_EXIT_INPUT, "sweep needs a SWEEP.yaml (or --merge DIR...)");
    return 0;
}

static int mkdir_p(const char *dir, cp_err *err)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *c = buf + 1;; c++) {
        if (*c != '/' && *c != '\0')
            continue;
        char keep = *c;
        *c = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return cp_fail(err, CP_EXIT_INPUT, "--out %s: cannot create %s: %s", dir, buf,
                           strerror(errno));
        *c = keep;
        if (!keep)
            break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return cp_fail(err, CP_EXIT_INPUT, "--out %s: not a directory", dir);
    return 0;
}

/* ---- the command ------------------------------------------------------------------------ */

static int fail(const cp_err *err)
{
    fprintf(stderr, "cpsim: %s\n", err->msg);
    return err->code ? err->code : CP_EXIT_INTERNAL;
}

static json_t *meta_json(const sweep_spec *sp, const sweep_points *pts, const sweep_args *a,
                         int shard_points)
{
    char h[17], shard[32];
    sweep_hex(pts->spec_hash, h);
    snprintf(shard, sizeof shard, "%d/%d", a->shard_i, a->shard_n);
    json_t *keys = json_array();
    for (int k = 0; k < sp->naxes; k++)
        json_array_append_new(keys, json_string(sp->axes[k].key));
    return json_pack("{s:s, s:s, s:s, s:s, s:o, s:i, s:i, s:s, s:i, s:s}", "schema",
                     "cpsim.sweep/1", "name", sp->name, "file", sp->path, "base", sp->base,
                     "keys", keys, "candidates", pts->candidates, "points", pts->n, "shard",
                     shard, "shard_points", shard_points, "spec_hash", h);
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
    const char *h = json_string_value(json_object_get(m, "spec_hash"));
    int same = h && strcmp(h, spec_hash) == 0;
    json_decref(m);
    return same ? 0 : cp_fail(err, CP_EXIT_INPUT, "--resume: %s holds another sweep (its "
                              "spec_hash %s, this one %s): the sweep file or its base changed",
                              dir, h ? h : "none", spec_hash);
}

static int cmp_id(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The points of this shard that results.jsonl lacks. */
static int pending(const sweep_points *pts, const sweep_lines *done, const sweep_args *a,
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

static void list_points(const sweep_spec *sp, const sweep_points *pts, const sweep_args *a)
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

/* The run's results sorted, the tables and the plots. */
static int conclude(const char *dir, const sweep_args *a, int plots, cp_err *err)
{
    char path[4200];
    sweep_lines l = {0};
    int rc = sweep_load_dir(dir, &l, path, sizeof path, err);
    /* a finished sweep leaves its lines in index order: deterministic files */
    if (rc == 0)
        rc = sweep_write_lines(path, &l, err);
    if (rc == 0)
        rc = rep_sweep_tables(l.line, l.n, dir, a->quiet ? NULL : stdout, err);
    if (rc == 0 && plots)
        rc = plot_sweep(dir, l.line, l.n, err);
    sweep_lines_free(&l);
    if (rc == 0 && !a->quiet)
        printf("\nwrote %s/results.jsonl, results.csv, best.csv, split.csv%s\n", dir,
               plots ? ", plots/" : "");
    return rc;
}

/* The output folder made ready for this run: checked against the sweep,
 * sweep.json written, results.jsonl repaired and open for appending, and
 * the points of this shard that it lacks. */
typedef struct session {
    int fd;
    const sweep_point **pending_pts;
    int npending;
    int total;              /* points of this shard */
    int failed;             /* failed points among those done before */
} session;

static int open_session(const sweep_spec *sp, const sweep_points *pts, const sweep_args *a,
                        const char *dir, session *ss, cp_err *err)
{
    char h[17], path[4200];
    sweep_hex(pts->spec_hash, h);
    memset(ss, 0, sizeof *ss);
    ss->fd = -1;
    sweep_lines done = {0};
    int rc = mkdir_p(dir, err);
    if (rc == 0)
        rc = check_out_dir(dir, h, a->resume, err);
    snprintf(path, sizeof path, "%s/results.jsonl", dir);
    if (rc == 0)
        rc = sweep_read_results(path, 1, &done, err);
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
    free(ss->pending_pts);
}

static int run_sweep(const sweep_spec *sp, const sweep_args *a, const char *dir, cp_err *err)
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

int cli_sweep(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return CP_EXIT_OK;
        }
    sweep_args a;
    cp_err err = {0};
    if (parse_args(argc, argv, &a, &err) < 0) {
        free(a.merge);
        fprintf(stderr, "cpsim: %s\nTry 'cpsim sweep --help'.\n", err.msg);
        return CP_EXIT_INPUT;
    }
    int rc;
    if (a.nmerge > 0) {
        rc = sweep_merge(a.merge, a.nmerge, a.out, a.quiet ? NULL : stdout, &err);
        if (rc == 0 && a.plots)
            rc = sweep_plot_dir(a.out, &err);
        free(a.merge);
        return rc < 0 ? fail(&err) : CP_EXIT_OK;
    }
    sweep_spec sp;
    if (sweep_load(a.file, &sp, &err) < 0) {
        free(a.merge);
        return fail(&err);
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", a.out ? a.out : "");
    if (!a.out)
        snprintf(dir, sizeof dir, "out/%s", sp.name);
    struct sigaction sa = {.sa_handler = on_signal}, old[3];
    sigemptyset(&sa.sa_mask);
    const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int k = 0; k < 3; k++)
        sigaction(sigs[k], &sa, &old[k]);
    rc = run_sweep(&sp, &a, dir, &err);
    for (int k = 0; k < 3; k++)
        sigaction(sigs[k], &old[k], NULL);
    sweep_free(&sp);
    free(a.merge);
    return rc < 0 ? fail(&err) : rc;
}
