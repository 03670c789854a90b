/* emit: a calibration profile measured by a profiler trace (cpsim compare
 * --emit-profile DIR, compare.h).
 *
 * DIR is the run platform's profile (every file copied) with the trace's
 * kernels as rows of the tables whose rows key on the shapes the run's ops
 * carry: bf16 GEMMs (gemm_graph.csv, and gemm_graph_decode.csv for M <=
 * 128, where the profile keeps the small-M rows) and FA2 prefill attention
 * (attention.csv).  A row of the same shape in the base table is replaced;
 * every row says where it came from in a `source` column (the base
 * profile's name, or the trace's file name).  Ops priced from other tables
 * (MoE, decode attention, elementwise) keep the base profile's rows, and
 * the line cmp_emit prints counts them.
 *
 * Which measured time an op gets: the class's measured calls in time order
 * (a split-K reduce joins the GEMM before it, a split-KV combine the
 * attention call before it) paired one to one with the run's ops of the
 * class in time order when the counts agree; otherwise each op's simulated
 * time scaled by the class's measured / simulated total.  A shape that
 * occurs in several layers gets the mean of its calls (n_sets says how
 * many), min and max beside it. */
#include "reports/compare/compare.h"

#include <dirent.h>
#include <fnmatch.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/datadir.h"
#include "models/cost_profile.h"
#include "reports/report.h"

enum { T_GEMM, T_GEMM_DECODE, T_ATTN, T_COUNT };

static const char *const table_file[T_COUNT] = {"gemm_graph.csv", "gemm_graph_decode.csv",
                                                "attention.csv"};

/* The small-M GEMM rows live in gemm_graph_decode.csv (M = 1 .. 128,
 * platforms/calibration/h200/README.md). */
#define DECODE_M_MAX 128

/* One emitted row: a shape and the measured times of its calls (us). */
typedef struct erow {
    int table;
    const char *name;        /* the first op's name (run trace, borrowed) */
    long long m, k, n;                                    /* GEMM */
    long long q_len, kv_len, heads, kv_heads, head_dim;   /* attention */
    int causal;
    double sum, min, max;
    int count;
} erow;

typedef struct emitter {
    erow *v;
    size_t n;
    int kept[CMP_NCLASSES];    /* ops of the class priced from another table */
    int paired[CMP_NCLASSES];  /* 1: calls paired one to one, 0: scaled */
} emitter;

/* The table an op's row goes to, -1 when none (cost_src names where the
 * run priced it). */
static int table_of(const cmp_kernel *op, const cmp_opinfo *in)
{
    if (op->cls == CMP_GEMM && in->m > 0 &&
        (!strcmp(in->src, "table:gemm_graph.csv") ||
         !strcmp(in->src, "table:gemm_graph_decode.csv") || !strcmp(in->src, "roofline:gemm")))
        return in->m <= DECODE_M_MAX ? T_GEMM_DECODE : T_GEMM;
    if (op->cls == CMP_ATTENTION && in->q_len > 0 && in->head_dim > 0 &&
        !strcmp(in->src, "table:attention.csv"))
        return T_ATTN;
    return -1;
}

static int same_shape(const erow *a, const erow *b)
{
    return a->table == b->table && a->m == b->m && a->k == b->k && a->n == b->n &&
           a->q_len == b->q_len && a->kv_len == b->kv_len && a->heads == b->heads &&
           a->kv_heads == b->kv_heads && a->head_dim == b->head_dim && a->causal == b->causal;
}

static void add_call(emitter *e, const erow *key, double us)
{
    for (size_t i = 0; i < e->n; i++)
        if (same_shape(&e->v[i], key)) {
            erow *r = &e->v[i];
            r->sum += us;
            r->min = fmin(r->min, us);
            r->max = fmax(r->max, us);
            r->count++;
            return;
        }
    erow *g = realloc(e->v, (e->n + 1) * sizeof *g);
    if (!g)
        abort(); /* out of memory: a row per shape */
    e->v = g;
    e->v[e->n] = *key;
    e->v[e->n].sum = e->v[e->n].min = e->v[e->n].max = us;
    e->v[e->n++].count = 1;
}

typedef struct call {
    double t0, us;
    size_t op;         /* the run's op (simulated calls) */
    int joins;         /* a kernel that finishes the call before it (measured) */
} call;

static int call_order(const void *a, const void *b)
{
    const call *x = a, *y = b;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    return (x->op > y->op) - (x->op < y->op);
}

/* The class's measured calls in time order: a split-K reduce or a split-KV
 * combine joins the call before it. */
static size_t measured_calls(const cmp_trace *m, int cls, call **out)
{
    call *v = malloc((m->n + 1) * sizeof *v);
    if (!v)
        abort(); /* out of memory: a call per kernel */
    size_t n = 0, w = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (m->k[i].cls != cls)
            continue;
        const char *nm = m->names[m->k[i].name];
        v[n++] = (call){m->k[i].t0, m->k[i].dur, i,
                        fnmatch("*splitKreduce*", nm, 0) == 0 ||
                            fnmatch("*splitkv_combine*", nm, 0) == 0};
    }
    qsort(v, n, sizeof *v, call_order);
    for (size_t i = 0; i < n; i++) {
        if (v[i].joins && w > 0)
            v[w - 1].us += v[i].us;
        else
            v[w++] = v[i];
    }
    *out = v;
    return w;
}

static void collect(emitter *e, const cmp_trace *meas, const cmp_trace *sim)
{
    static const int classes[] = {CMP_GEMM, CMP_ATTENTION};
    for (size_t c = 0; c < sizeof classes / sizeof classes[0]; c++) {
        int cls = classes[c];
        call *mc;
        size_t nm = measured_calls(meas, cls, &mc), ns = 0;
        call *sc = malloc((sim->n + 1) * sizeof *sc);
        if (!sc)
            abort(); /* out of memory: an entry per op */
        double msum = 0, ssum = 0;
        for (size_t i = 0; i < nm; i++)
            msum += mc[i].us;
        for (size_t i = 0; i < sim->n; i++)
            if (sim->k[i].cls == cls) {
                sc[ns++] = (call){sim->k[i].t0, sim->k[i].dur, i, 0};
                ssum += sim->k[i].dur;
            }
        qsort(sc, ns, sizeof *sc, call_order);
        e->paired[cls] = nm == ns;
        for (size_t j = 0; j < ns; j++) {
            const cmp_kernel *op = &sim->k[sc[j].op];
            const cmp_opinfo *in = &sim->info[sc[j].op];
            int t = table_of(op, in);
            if (t < 0) {
                e->kept[cls]++;
                continue;
            }
            double us = e->paired[cls] ? mc[j].us : ssum > 0 ? op->dur * msum / ssum : 0;
            erow key = {.table = t, .name = sim->names[op->name]};
            if (t == T_ATTN) {
                key.q_len = in->q_len;
                key.kv_len = in->kv_len;
                key.heads = in->heads;
                key.kv_heads = in->kv_heads;
                key.head_dim = in->head_dim;
                key.causal = in->causal;
            } else {
                key.m = in->m;
                key.k = in->k;
                key.n = in->n;
            }
            if (us > 0)
                add_call(e, &key, us);
        }
        free(mc);
        free(sc);
    }
}

/* ---- CSV text ----------------------------------------------------------------------- */

/* The fields of a CSV line (quotes kept), up to max, as [start, end) offsets. */
static int split_csv(const char *line, size_t *a, size_t *b, int max)
{
    int n = 0, q = 0;
    size_t s = 0, i = 0;
    for (;; i++) {
        char c = line[i];
        if (c == '"')
            q = !q;
        if ((c == ',' && !q) || c == '\n' || c == '\r' || c == 0) {
            if (n < max) {
                a[n] = s;
                b[n] = i;
            }
            n++;
            s = i + 1;
            if (c != ',')
                break;
        }
    }
    return n;
}

static int col_of(const char *hdr, const size_t *a, const size_t *b, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (b[i] - a[i] == strlen(name) && !strncmp(hdr + a[i], name, b[i] - a[i]))
            return i;
    return -1;
}

static long long field_ll(const char *line, const size_t *a, int c)
{
    return c < 0 ? -1 : strtoll(line + a[c], NULL, 10);
}

/* Columns a calibration table of this project has at most (gemm_graph.csv:
 * 19, moe.csv: 34), with room. */
#define MAX_COLS 64

/* The columns of a table's header that key its rows' shapes (-1: absent). */
typedef struct keycols {
    int impl, q_len, kv_len, q_heads, kv_heads, head_dim, causal, m, k, n;
} keycols;

static keycols keys_of(const char *hdr, const size_t *ha, const size_t *hb, int nh)
{
#define C(name) col_of(hdr, ha, hb, nh, name)
    return (keycols){C("impl"),     C("q_len"),    C("kv_len"), C("q_heads"), C("kv_heads"),
                     C("head_dim"), C("causal"),   C("M"),      C("K"),       C("N")};
#undef C
}

/* Whether a base row is replaced by an emitted one (same shape); kc: the
 * table's key columns, nh its width. */
static int replaced(const emitter *e, int t, const keycols *kc, int nh, const char *line)
{
    size_t a[MAX_COLS], b[MAX_COLS];
    int n = split_csv(line, a, b, MAX_COLS);
    if (n != nh)
        return 0;
    erow key = {.table = t};
    if (t == T_ATTN) {
        if (kc->impl < 0 || strncmp(line + a[kc->impl], "flash_native_gqa",
                                    b[kc->impl] - a[kc->impl]))
            return 0;
        key.q_len = field_ll(line, a, kc->q_len);
        key.kv_len = field_ll(line, a, kc->kv_len);
        key.heads = field_ll(line, a, kc->q_heads);
        key.kv_heads = field_ll(line, a, kc->kv_heads);
        key.head_dim = field_ll(line, a, kc->head_dim);
        key.causal = (int)field_ll(line, a, kc->causal);
    } else {
        key.m = field_ll(line, a, kc->m);
        key.k = field_ll(line, a, kc->k);
        key.n = field_ll(line, a, kc->n);
    }
    for (size_t i = 0; i < e->n; i++)
        if (same_shape(&e->v[i], &key))
            return 1;
    return 0;
}

/* The value of column `name` in the emitted row r ("" when the table has
 * such a column and the trace says nothing of it). */
static void value_of(const erow *r, const char *model, const char *source, const char *name,
                     char *buf, size_t len)
{
    double mean = r->sum / r->count;
    double flops, bytes;
    /* bf16: 2 bytes per element (the tables this writes hold bf16 rows) */
    if (r->table == T_ATTN) {
        double q = (double)r->q_len, kv = (double)r->kv_len;
        /* causal bottom-right aligned: query i sees kv - q + i + 1 keys */
        double pairs = r->causal ? q * kv - q * (q - 1) / 2 : q * kv;
        flops = 4.0 * pairs * (double)r->heads * (double)r->head_dim; /* QK^T and PV */
        bytes = 2.0 * (2 * q * (double)r->heads + 2 * kv * (double)r->kv_heads) *
                (double)r->head_dim;
        /* attention.csv times an eager call: the table model takes
         * COST_EAGER_GAP off (cost_profile.c read_attention) */
        double eager = mean + COST_EAGER_GAP * 1e6;
        if (!strcmp(name, "mode"))
            snprintf(buf, len, "%s", r->causal && r->q_len == r->kv_len ? "causal_square"
                                     : r->causal                       ? "causal_prefix"
                                                                       : "full");
        else if (!strcmp(name, "impl"))
            snprintf(buf, len, "flash_native_gqa");
        else if (!strcmp(name, "q_len"))
            snprintf(buf, len, "%lld", r->q_len);
        else if (!strcmp(name, "kv_len"))
            snprintf(buf, len, "%lld", r->kv_len);
        else if (!strcmp(name, "causal"))
            snprintf(buf, len, "%d", r->causal);
        else if (!strcmp(name, "q_heads"))
            snprintf(buf, len, "%lld", r->heads);
        else if (!strcmp(name, "kv_heads"))
            snprintf(buf, len, "%lld", r->kv_heads);
        else if (!strcmp(name, "head_dim"))
            snprintf(buf, len, "%lld", r->head_dim);
        else if (!strcmp(name, "inner"))
            snprintf(buf, len, "%d", r->count);
        else if (!strcmp(name, "time_us"))
            snprintf(buf, len, "%.4f", eager);
        else if (!strcmp(name, "time_us_min"))
            snprintf(buf, len, "%.4f", r->min + COST_EAGER_GAP * 1e6);
        else if (!strcmp(name, "time_us_max"))
            snprintf(buf, len, "%.4f", r->max + COST_EAGER_GAP * 1e6);
        else if (!strcmp(name, "attended_pairs"))
            snprintf(buf, len, "%.0f", pairs);
        else if (!strcmp(name, "flops"))
            snprintf(buf, len, "%.6g", flops);
        else if (!strcmp(name, "tflops"))
            snprintf(buf, len, "%.3f", flops / (mean * 1e6));
        else if (!strcmp(name, "min_bytes"))
            snprintf(buf, len, "%.0f", bytes);
        else if (!strcmp(name, "note") || !strcmp(name, "source"))
            snprintf(buf, len, "%s", source);
        else
            buf[0] = 0;
        return;
    }
    flops = 2.0 * (double)r->m * (double)r->k * (double)r->n;
    bytes = 2.0 * ((double)r->m * r->k + (double)r->k * r->n + (double)r->m * r->n);
    if (!strcmp(name, "model"))
        snprintf(buf, len, "%s", model);
    else if (!strcmp(name, "name"))
        snprintf(buf, len, "%s", r->name);
    else if (!strcmp(name, "M"))
        snprintf(buf, len, "%lld", r->m);
    else if (!strcmp(name, "K"))
        snprintf(buf, len, "%lld", r->k);
    else if (!strcmp(name, "N"))
        snprintf(buf, len, "%lld", r->n);
    else if (!strcmp(name, "dtype"))
        snprintf(buf, len, "bf16");
    else if (!strcmp(name, "n_sets"))
        snprintf(buf, len, "%d", r->count);
    else if (!strcmp(name, "inner") || !strcmp(name, "graph_inner"))
        snprintf(buf, len, "1");
    else if (!strcmp(name, "time_us") || !strcmp(name, "time_us_graph"))
        snprintf(buf, len, "%.4f", mean);
    else if (!strcmp(name, "time_us_min") || !strcmp(name, "time_us_graph_min"))
        snprintf(buf, len, "%.4f", r->min);
    else if (!strcmp(name, "time_us_max") || !strcmp(name, "time_us_graph_max"))
        snprintf(buf, len, "%.4f", r->max);
    else if (!strcmp(name, "tflops") || !strcmp(name, "tflops_graph"))
        snprintf(buf, len, "%.3f", flops / (mean * 1e6));
    else if (!strcmp(name, "min_bytes"))
        snprintf(buf, len, "%.0f", bytes);
    else if (!strcmp(name, "gbps"))
        snprintf(buf, len, "%.3f", bytes / (mean * 1e3));
    else if (!strcmp(name, "source"))
        snprintf(buf, len, "%s", source);
    else
        buf[0] = 0;
}

/* ---- files --------------------------------------------------------------------------- */

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap + 1);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *g = realloc(buf, 2 * cap + 1);
            if (!g)
                free(buf);
            buf = g;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf)
        abort(); /* out of memory: a calibration table */
    buf[n] = 0;
    return buf;
}

static int copy_file(const char *from, const char *to, cp_err *err)
{
    char *text = read_text(from);
    if (!text)
        return cp_fail(err, CP_EXIT_INPUT, "%s: cannot read", from);
    rep_file rf;
    int rc = rep_open(&rf, to, err);
    if (rc == 0) {
        fputs(text, rf.f);
        rc = rep_close(&rf, !ferror(rf.f), err);
    }
    free(text);
    return rc;
}

/* Table t of the profile: the base's rows (less those replaced) and the
 * emitted ones, each with its source. */
static int write_table(const emitter *e, int t, const char *base_dir, const char *base_name,
                       const char *dir, const char *model, const char *source, cp_err *err)
{
    char path[4200], out[4200];
    snprintf(path, sizeof path, "%s/%s", base_dir, table_file[t]);
    char *text = read_text(path);
    if (!text && t == T_GEMM_DECODE) {
        /* a profile without small-M rows: the header of its GEMM table */
        snprintf(path, sizeof path, "%s/%s", base_dir, table_file[T_GEMM]);
        text = read_text(path);
        if (text)
            text[strcspn(text, "\n")] = 0;
    }
    if (!text)
        return cp_fail(err, CP_EXIT_INPUT, "%s: cannot read the base profile's table", path);
    size_t ha[MAX_COLS], hb[MAX_COLS];
    int nh = split_csv(text, ha, hb, MAX_COLS);
    if (nh > MAX_COLS - 1) {
        free(text);
        return cp_fail(err, CP_EXIT_INPUT, "%s: more than %d columns", path, MAX_COLS - 1);
    }
    int has_source = col_of(text, ha, hb, nh, "source") >= 0;
    keycols kc = keys_of(text, ha, hb, nh);
    snprintf(out, sizeof out, "%s/%s", dir, table_file[t]);
    rep_file rf;
    if (rep_open(&rf, out, err) < 0) {
        free(text);
        return -1;
    }
    FILE *f = rf.f;
    size_t hlen = strcspn(text, "\r\n");
    fprintf(f, "%.*s%s\n", (int)hlen, text, has_source ? "" : ",source");
    for (char *line = text + hlen; *line;) {
        line += strspn(line, "\r\n");
        size_t len = strcspn(line, "\r\n");
        if (len && !replaced(e, t, &kc, nh, line))
            fprintf(f, "%.*s%s%s\n", (int)len, line, has_source ? "" : ",", has_source ? ""
                                                                                       : base_name);
        line += len;
    }
    for (size_t i = 0; i < e->n; i++) {
        if (e->v[i].table != t)
            continue;
        for (int c = 0; c <= nh; c++) {
            char name[64], val[600];
            if (c == nh && has_source)
                break;
            snprintf(name, sizeof name, "%.*s", c < nh ? (int)(hb[c] - ha[c]) : 6,
                     c < nh ? text + ha[c] : "source");
            value_of(&e->v[i], model, source, name, val, sizeof val);
            fputs(c ? "," : "", f);
            rep_csv_field(f, val);
        }
        fputc('\n', f);
    }
    free(text);
    return rep_close(&rf, !ferror(f), err);
}

static int copy_profile(const char *base_dir, const char *dir, cp_err *err)
{
    DIR *d = opendir(base_dir);
    if (!d)
        return cp_fail(err, CP_EXIT_INPUT, "%s: cannot open the run's calibration profile",
                       base_dir);
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        char from[4400], to[4400];
        struct stat st;
        snprintf(from, sizeof from, "%s/%s", base_dir, de->d_name);
        if (stat(from, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        int ours = 0;
        for (int t = 0; t < T_COUNT; t++)
            ours |= !strcmp(de->d_name, table_file[t]);
        if (ours)
            continue;
        snprintf(to, sizeof to, "%s/%s", dir, de->d_name);
        rc = copy_file(from, to, err);
    }
    closedir(d);
    return rc;
}

int cmp_emit_profile(const cmp_trace *meas, const cmp_trace *sim, const char *run_dir,
                     const char *profile, const char *dir, FILE *say, cp_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/summary.json", run_dir);
    json_error_t je;
    json_t *sum = json_load_file(path, 0, &je);
    json_t *sc = json_object_get(sum, "scenario");
    const char *model = json_string_value(json_object_get(sc, "model"));
    const char *calib = json_string_value(json_object_get(sc, "calibration"));
    if (!sum || !model || !calib || !*calib) {
        json_decref(sum);
        return cp_fail(err, CP_EXIT_INPUT, "%s: %s", path, !sum ? je.text
                       : "the run's platform names no calibration profile to start from");
    }
    char base_dir[4096];
    cp_calib_dir(base_dir, sizeof base_dir, calib);
    const char *slash = strrchr(calib, '/');
    const char *base_name = slash ? slash + 1 : calib;
    const char *pslash = strrchr(profile, '/');
    char source[512];
    snprintf(source, sizeof source, "trace %s", pslash ? pslash + 1 : profile);
    for (char *c = source; *c; c++)
        *c = *c == ',' || *c == '"' ? '_' : *c;
    int rc = rep_mkdir_p(dir, err);
    char rd[PATH_MAX], rb[PATH_MAX];
    if (rc == 0 && realpath(dir, rd) && realpath(base_dir, rb) && !strcmp(rd, rb))
        rc = cp_fail(err, CP_EXIT_INPUT, "--emit-profile %s: that is the run's own profile "
                     "(%s); name a new folder", dir, calib);
    if (rc < 0) {
        json_decref(sum);
        return -1;
    }
    emitter e = {0};
    collect(&e, meas, sim);
    if (rc == 0)
        rc = copy_profile(base_dir, dir, err);
    for (int t = 0; t < T_COUNT && rc == 0; t++)
        rc = write_table(&e, t, base_dir, base_name, dir, model, source, err);
    if (rc == 0 && say) {
        int rows[T_COUNT] = {0};
        for (size_t i = 0; i < e.n; i++)
            rows[e.v[i].table]++;
        fprintf(say, "emitted %s: the profile %s with %d GEMM rows (gemm_graph.csv %d, "
                "gemm_graph_decode.csv %d; calls %s) and %d attention rows (attention.csv; "
                "calls %s) from the trace; %d GEMM and %d attention ops priced from other "
                "tables keep its rows\n", dir, base_name, rows[T_GEMM] + rows[T_GEMM_DECODE],
                rows[T_GEMM], rows[T_GEMM_DECODE],
                e.paired[CMP_GEMM] ? "paired one to one" : "scaled by the class total",
                rows[T_ATTN], e.paired[CMP_ATTENTION] ? "paired one to one"
                                                      : "scaled by the class total",
                e.kept[CMP_GEMM], e.kept[CMP_ATTENTION]);
    }
    free(e.v);
    json_decref(sum);
    return rc;
}
