/* traces: the two sides of a comparison read into cmp_trace (compare.h):
 * a Kineto profile's device events with their record_function marks, and
 * one rank's ops of a cpsim trace.json. */
#include "reports/compare/compare.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "models/arch.h"
#include "models/plan.h"
#include "reports/report.h"

void cmp_trace_free(cmp_trace *t)
{
    for (size_t i = 0; i < t->nnames; i++)
        free(t->names[i]);
    free(t->names);
    free(t->k);
    free(t->info);
    memset(t, 0, sizeof *t);
}

static size_t gz_chunk(void *buf, size_t len, void *gz)
{
    int n = gzread(gz, buf, (unsigned)len);
    return n < 0 ? (size_t)-1 : (size_t)n;
}

/* A JSON file, plain or gzip (gzread reads both). */
static json_t *load_json(const char *path, cp_err *err)
{
    gzFile gz = gzopen(path, "rb");
    if (!gz)
        return cp_fail(err, CP_EXIT_INPUT, "%s: cannot open", path), NULL;
    json_error_t je;
    json_t *j = json_load_callback(gz_chunk, gz, JSON_DISABLE_EOF_CHECK, &je);
    gzclose(gz);
    if (!j)
        cp_fail(err, CP_EXIT_INPUT, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    return j;
}

static json_t *events_of(json_t *root)
{
    return json_is_array(root) ? root : json_object_get(root, "traceEvents");
}

/* The index of name in t->names, added when new (map: name -> index). */
static int name_index(cmp_trace *t, json_t *map, const char *name)
{
    json_t *v = json_object_get(map, name);
    if (v)
        return (int)json_integer_value(v);
    char **grown = realloc(t->names, (t->nnames + 1) * sizeof *grown);
    char *copy = strdup(name);
    if (!grown || !copy)
        abort(); /* out of memory: a name list, before any output */
    t->names = grown;
    t->names[t->nnames] = copy;
    json_object_set_new(map, name, json_integer((json_int_t)t->nnames));
    return (int)t->nnames++;
}

static double num(json_t *o, const char *key)
{
    return json_number_value(json_object_get(o, key));
}

/* ---- record_function ranges --------------------------------------------------------- */

typedef struct range {
    int stream;      /* a device range: the stream it marks (Kineto's tid); host: 0 */
    double t0, t1;
    int layer;       /* "layer.N": N; else -1 */
    int cls;         /* an op's class for a range named as a run's op; else CMP_UNMATCHED */
    int step;        /* "step.*" */
} range;

static int range_order(const void *a, const void *b)
{
    const range *x = a, *y = b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    return x->t1 > y->t1 ? -1 : x->t1 < y->t1;   /* the outer one first */
}

typedef struct query {
    int stream;
    double t;
    size_t i;
} query;

static int query_order(const void *a, const void *b)
{
    const query *x = a, *y = b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* For each query (sorted), the innermost range of its stream (sorted by
 * range_order) holding its time that has a layer (want 0) or an op class
 * (want 1): out[q.i] = range index or -1.  Ranges nest (record_function's
 * do). */
static void innermost(const range *r, size_t nr, const query *q, size_t nq, int want, int *out)
{
    size_t *stack = malloc((nr + 1) * sizeof *stack), top = 0, next = 0;
    if (!stack)
        abort(); /* out of memory: one index per range */
    for (size_t k = 0; k < nq; k++) {
        double t = q[k].t;
        if (k && q[k].stream != q[k - 1].stream)
            top = 0;
        while (next < nr && r[next].stream < q[k].stream)
            next++;
        while (next < nr && r[next].stream == q[k].stream && r[next].t0 <= t) {
            if (want ? r[next].cls != CMP_UNMATCHED : r[next].layer >= 0)
                stack[top++] = next;
            next++;
        }
        while (top && r[stack[top - 1]].t1 < t)
            top--;
        out[q[k].i] = top ? (int)stack[top - 1] : -1;
    }
    free(stack);
}

/* A range's meaning from its name: "layer.N", "step.*", a run's op. */
static int read_range(json_t *ev, const char *const *ops, const int *opcls, size_t nops,
                      range *r)
{
    const char *name = json_string_value(json_object_get(ev, "name"));
    if (!name)
        return 0;
    *r = (range){.t0 = num(ev, "ts"), .layer = -1, .cls = CMP_UNMATCHED};
    if (strcmp(json_string_value(json_object_get(ev, "cat")), "gpu_user_annotation") == 0)
        r->stream = (int)json_integer_value(json_object_get(ev, "tid"));
    r->t1 = r->t0 + num(ev, "dur");
    char *end;
    if (strncmp(name, "layer.", 6) == 0) {
        long l = strtol(name + 6, &end, 10);
        /* a layer index as arch.h bounds them (ARCH_MAX_LAYERS) */
        if (end != name + 6 && *end == 0 && l >= 0 && l < ARCH_MAX_LAYERS)
            r->layer = (int)l;
    } else if (strncmp(name, "step.", 5) == 0) {
        r->step = 1;
    } else {
        for (size_t i = 0; i < nops; i++)
            if (strcmp(ops[i], name) == 0)
                r->cls = opcls[i];
    }
    return r->layer >= 0 || r->step || r->cls != CMP_UNMATCHED;
}

typedef struct marks {
    int device;               /* the device whose ranges count */
    range *gpu, *cpu;
    size_t ngpu, ncpu;
    json_t *launch;           /* correlation (as a string) -> host time of its launch */
    int steps;
} marks;

static void push_range(range **v, size_t *n, const range *r)
{
    range *g = realloc(*v, (*n + 1) * sizeof *g);
    if (!g)
        abort(); /* out of memory: the trace's marks */
    g[(*n)++] = *r;
    *v = g;
}

/* The device of a device event or range: args.device, else its pid (Kineto
 * writes a GPU's events under pid = its index). */
static int device_of(json_t *ev)
{
    json_t *d = json_object_get(json_object_get(ev, "args"), "device");
    return (int)json_integer_value(d ? d : json_object_get(ev, "pid"));
}

static void read_marks(json_t *evs, const char *const *ops, const int *opcls, size_t nops,
                       marks *m)
{
    size_t i;
    json_t *ev;
    m->launch = json_object();
    json_array_foreach(evs, i, ev) {
        const char *cat = json_string_value(json_object_get(ev, "cat"));
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        if (!cat || !ph || strcmp(ph, "X") != 0)
            continue;
        range r;
        int gpu = strcmp(cat, "gpu_user_annotation") == 0;
        if (gpu && device_of(ev) != m->device)
            continue;
        if ((gpu || strcmp(cat, "user_annotation") == 0) &&
            read_range(ev, ops, opcls, nops, &r)) {
            m->steps += r.step && !gpu;
            if (gpu)
                push_range(&m->gpu, &m->ngpu, &r);
            else
                push_range(&m->cpu, &m->ncpu, &r);
        } else if (strcmp(cat, "cuda_runtime") == 0 || strcmp(cat, "cuda_driver") == 0) {
            /* cudaLaunchKernel, cudaGraphLaunch; cuBLASLt launches through the
             * driver (cuLaunchKernelEx) */
            json_t *c = json_object_get(json_object_get(ev, "args"), "correlation");
            char key[32];
            if (json_is_integer(c)) {
                snprintf(key, sizeof key, "%lld", (long long)json_integer_value(c));
                json_object_set_new(m->launch, key, json_real(num(ev, "ts")));
            }
        }
    }
    if (m->ngpu)
        qsort(m->gpu, m->ngpu, sizeof *m->gpu, range_order);
    if (m->ncpu)
        qsort(m->cpu, m->ncpu, sizeof *m->cpu, range_order);
}

/* Marks of the kernels: by the device's ranges, then, for what those left
 * unmarked, by the host range around the kernel's launch. */
static void apply_marks(cmp_trace *t, const marks *m, const double *launch_ts)
{
    size_t n = t->n;
    query *q = malloc((n + 1) * sizeof *q);
    int *lay = malloc((n + 1) * sizeof *lay), *op = malloc((n + 1) * sizeof *op);
    if (!q || !lay || !op)
        abort(); /* out of memory: per kernel */
    for (int side = 0; side < 2; side++) {
        const range *r = side ? m->cpu : m->gpu;
        size_t nr = side ? m->ncpu : m->ngpu, nq = 0;
        for (size_t i = 0; i < n; i++) {
            double t0 = side ? launch_ts[i] : t->k[i].t0 + t->k[i].dur / 2;
            if (side && (t0 < 0 || (t->k[i].layer >= 0 && t->k[i].by_mark)))
                continue;
            q[nq++] = (query){side ? 0 : t->k[i].stream, t0, i};
            lay[i] = op[i] = -1;
        }
        qsort(q, nq, sizeof *q, query_order);
        innermost(r, nr, q, nq, 0, lay);
        innermost(r, nr, q, nq, 1, op);
        for (size_t k = 0; k < nq; k++) {
            cmp_kernel *e = &t->k[q[k].i];
            if (lay[q[k].i] >= 0 && e->layer < 0)
                e->layer = r[lay[q[k].i]].layer;
            if (op[q[k].i] >= 0 && !e->by_mark) {
                e->cls = r[op[q[k].i]].cls;
                e->by_mark = 1;
            }
        }
    }
    free(q);
    free(lay);
    free(op);
}

static int count_layers(const cmp_trace *t)
{
    int max = -1, n = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->k[i].layer > max)
            max = t->k[i].layer;
    if (max < 0)
        return 0;
    unsigned char *seen = calloc((size_t)max + 1, 1);
    if (!seen)
        abort(); /* out of memory: a flag per layer */
    for (size_t i = 0; i < t->n; i++)
        if (t->k[i].layer >= 0 && !seen[t->k[i].layer]++)
            n++;
    free(seen);
    return n;
}

static int is_device_event(const char *cat)
{
    return !strcmp(cat, "kernel") || !strcmp(cat, "gpu_memcpy") || !strcmp(cat, "gpu_memset");
}

/* The device compared (want < 0: the lowest that ran a kernel), and how many
 * ran one. */
static int pick_device(json_t *evs, int want, int *ndev, int *found)
{
    unsigned char seen[256] = {0}; /* device ids: --device's bound (cli_options.c) */
    int lo = -1;
    size_t i;
    json_t *ev;
    *ndev = 0;
    *found = 0;
    json_array_foreach(evs, i, ev) {
        const char *cat = json_string_value(json_object_get(ev, "cat"));
        if (!cat || !is_device_event(cat))
            continue;
        int d = device_of(ev);
        if (d >= 0 && d < 256 && !seen[d]++)
            (*ndev)++;
        lo = lo < 0 || d < lo ? d : lo;
        *found |= d == want;
    }
    return want >= 0 ? want : lo;
}

int cmp_read_profile(const char *path, const char *const *ops, const int *opcls, size_t nops,
                     int device, cmp_trace *t, cp_err *err)
{
    memset(t, 0, sizeof *t);
    json_t *root = load_json(path, err);
    if (!root)
        return -1;
    json_t *evs = events_of(root);
    if (!json_is_array(evs)) {
        json_decref(root);
        return cp_fail(err, CP_EXIT_INPUT, "%s: not a Chrome trace (no traceEvents)", path);
    }
    int found;
    t->device = pick_device(evs, device, &t->ndevices, &found);
    if (device >= 0 && !found) {
        json_decref(root);
        return cp_fail(err, CP_EXIT_INPUT, "%s: no kernel ran on device %d", path, device);
    }
    marks m = {.device = t->device};
    read_marks(evs, ops, opcls, nops, &m);
    json_t *names = json_object();
    size_t cap = 0, i;
    double *launch_ts = NULL;
    json_t *ev;
    json_array_foreach(evs, i, ev) {
        const char *cat = json_string_value(json_object_get(ev, "cat"));
        const char *name = json_string_value(json_object_get(ev, "name"));
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        if (!cat || !name || !ph || strcmp(ph, "X") != 0 || !is_device_event(cat) ||
            device_of(ev) != t->device)
            continue;
        if (t->n == cap) {
            cap = cap ? 2 * cap : 1024;
            cmp_kernel *g = realloc(t->k, cap * sizeof *g);
            double *l = realloc(launch_ts, cap * sizeof *l);
            if (!g || !l)
                abort(); /* out of memory: the trace's kernels */
            t->k = g;
            launch_ts = l;
        }
        json_t *args = json_object_get(ev, "args");
        json_t *corr = json_object_get(args, "correlation");
        char key[32];
        snprintf(key, sizeof key, "%lld", (long long)json_integer_value(corr));
        json_t *lt = json_is_integer(corr) ? json_object_get(m.launch, key) : NULL;
        launch_ts[t->n] = lt ? json_number_value(lt) : -1;
        t->k[t->n++] = (cmp_kernel){.t0 = num(ev, "ts"),
                                    .dur = num(ev, "dur"),
                                    .stream = (int)json_integer_value(json_object_get(args,
                                                                                      "stream")),
                                    .layer = -1,
                                    .cls = cmp_class_of_kernel(name),
                                    .name = name_index(t, names, name)};
    }
    int rc = 0;
    if (t->n == 0) {
        rc = cp_fail(err, CP_EXIT_INPUT, "%s: no device events (cat \"kernel\"): profile with "
                     "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]", path);
    } else {
        apply_marks(t, &m, launch_ts);
        double first = t->k[0].t0;
        for (size_t k = 0; k < t->n; k++)
            first = t->k[k].t0 < first ? t->k[k].t0 : first;
        for (size_t k = 0; k < t->n; k++) {
            t->k[k].t0 -= first;
            t->marked_ops += t->k[k].by_mark;
        }
        t->layers = count_layers(t);
        t->nsteps = m.steps ? m.steps : 1;
    }
    free(launch_ts);
    free(m.gpu);
    free(m.cpu);
    json_decref(m.launch);
    json_decref(names);
    json_decref(root);
    if (rc < 0)
        cmp_trace_free(t);
    return rc;
}

/* ---- a cpsim run -------------------------------------------------------------------- */

static void read_info(json_t *args, cmp_opinfo *in)
{
    const char *src = json_string_value(json_object_get(args, "cost_src"));
    *in = (cmp_opinfo){0};
    snprintf(in->src, sizeof in->src, "%s", src ? src : "");
#define LL(key) ((long long)json_integer_value(json_object_get(args, key)))
    in->m = LL("m");
    in->k = LL("k");
    in->n = LL("n");
    in->q_len = LL("q_len");
    in->kv_len = LL("kv_len");
    in->heads = LL("heads");
    in->kv_heads = LL("kv_heads");
    in->head_dim = LL("head_dim");
    in->causal = (int)LL("causal");
#undef LL
}

int cmp_read_run(const char *dir, int rank, int step, cmp_trace *t, int **kernels,
                 cp_err *err)
{
    memset(t, 0, sizeof *t);
    *kernels = NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s/trace.json", dir);
    if (access(path, R_OK) != 0)
        snprintf(path, sizeof path, "%s/trace.json.gz", dir);
    if (access(path, R_OK) != 0)
        return cp_fail(err, CP_EXIT_INPUT, "%s: no trace.json of a run (cpsim run --trace full "
                       "writes one)", dir);
    json_t *root = load_json(path, err);
    if (!root)
        return -1;
    json_t *evs = events_of(root);
    json_t *names = json_object();
    size_t i, cap = 0;
    json_t *ev;
    int steps = -1, ranks = 0;
    json_array_foreach(evs, i, ev) {
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        const char *cat = json_string_value(json_object_get(ev, "cat"));
        const char *name = json_string_value(json_object_get(ev, "name"));
        int row = (int)json_integer_value(json_object_get(ev, "tid")) - REP_TRACE_ID_BASE;
        if (!ph || strcmp(ph, "X") || !cat || !name || row < 0)
            continue;
        ranks = row / ST_COUNT + 1 > ranks ? row / ST_COUNT + 1 : ranks;
        int cls = cmp_class_of_category(cat);
        json_t *args = json_object_get(ev, "args");
        json_t *nk = json_object_get(args, "kernels"), *st = json_object_get(args, "step");
        if (row / ST_COUNT != rank || cls == CMP_UNMATCHED ||
            (step >= 0 && json_integer_value(st) != step))
            continue;
        json_t *ly = json_object_get(args, "layer");
        if (t->n == cap) {
            cap = cap ? 2 * cap : 1024;
            cmp_kernel *g = realloc(t->k, cap * sizeof *g);
            int *kk = realloc(*kernels, cap * sizeof *kk);
            cmp_opinfo *in = realloc(t->info, cap * sizeof *in);
            if (!g || !kk || !in)
                abort(); /* out of memory: the rank's ops */
            t->k = g;
            *kernels = kk;
            t->info = in;
        }
        read_info(args, &t->info[t->n]);
        (*kernels)[t->n] = nk ? (int)json_integer_value(nk) : 1;
        if (json_is_integer(st) && json_integer_value(st) > steps)
            steps = (int)json_integer_value(st);
        /* the op's kernels alone: its eager gaps are idle, as a profile's are */
        double gap = fmin(num(args, "gap_us"), num(ev, "dur"));
        t->k[t->n++] = (cmp_kernel){.t0 = num(ev, "ts"),
                                    .dur = num(ev, "dur") - gap,
                                    .stream = row % ST_COUNT,
                                    .layer = ly ? (int)json_integer_value(ly) : -1,
                                    .cls = cls,
                                    .name = name_index(t, names, name)};
    }
    json_decref(names);
    json_decref(root);
    if (t->n == 0) {
        cmp_trace_free(t);
        free(*kernels);
        *kernels = NULL;
        if (ranks > 0 && rank >= ranks)
            return cp_fail(err, CP_EXIT_INPUT, "%s: no rank %d (the trace has %d)", path, rank,
                           ranks);
        if (step >= 0)
            return cp_fail(err, CP_EXIT_INPUT, "%s: no op of rank %d in step %d (the trace "
                           "holds every op of a run, and of a serving run's first steps)",
                           path, rank, step);
        return cp_fail(err, CP_EXIT_INPUT, "%s: the trace holds no ops of rank %d (run with "
                       "--trace full)", path, rank);
    }
    t->layers = count_layers(t);
    t->nsteps = step >= 0 ? 1 : steps + 1;
    return 0;
}
