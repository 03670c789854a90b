/* platform_raw: the reader of raw SimGrid XML platforms (plat_xml_read, see
 * platform_xml.h): SimGrid loads the file in a forked child, which sends
 * back the <prop>s of the devices and their routes; the records become the
 * platform's devices and links. */
#include "platforms/platform_xml.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <xbt/dict.h>
#include <xbt/dynar.h>
#include <xbt/log.h>

#include "base/datadir.h"
#include "base/proc.h"

/* ---- raw XML: probe in a child ---------------------------------------- */

/* Child -> parent records: "H<len>:<host name>", "P<len>:<key><len>:<value>"
 * for the props of hosts carrying peak_bf16_flops (in sg_host_list order);
 * once every route between them was resolved, "L<len>:<j><len>:<bandwidth>
 * <len>:<latency>" for the route from the first of them to the j-th, then
 * "E". */
static void put_str(FILE *f, const char *s)
{
    fprintf(f, "%zu:%s", strlen(s), s);
}

/* Resolving the routes between the devices makes SimGrid fail here, not in
 * the simulation: all pairs up to this many devices, else every device to
 * and from device 0 and its ring neighbour.  A missing route in a Full zone
 * crashes SimGrid without a message, so the pair being resolved is kept in
 * memory shared with the parent (at[0], at[1]: indices in record order). */
#define PROBE_ALL_PAIRS_MAX 256

static void probe_routes(sg_host_t *dev, int n, volatile int *at)
{
    xbt_dynar_t links = xbt_dynar_new(sizeof(void *), NULL);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
            int wanted = n <= PROBE_ALL_PAIRS_MAX || i == 0 || j == 0 || j == (i + 1) % n;
            if (i == j || !wanted)
                continue;
            at[0] = i;
            at[1] = j;
            xbt_dynar_reset(links);
            sg_host_get_route(dev[i], dev[j], links);
        }
    }
    at[0] = at[1] = -1;
    xbt_dynar_free(&links);
}

static void probe_child(const char *path, int fd, volatile int *at)
{
    /* SimGrid's refusal of a bad file is an abort; the child dies of it
     * plainly, whatever handlers the parent had (a fuzzer's, a debugger's) */
    static const int fatal[] = {SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE};
    for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++)
        signal(fatal[i], SIG_DFL);
    FILE *f = fdopen(fd, "w");
    if (!f)
        _exit(3);
    int argc = 1;
    char arg0[] = "cpsim";
    char *argv[] = {arg0, NULL};
    xbt_log_control_set("root.thres:error");
    simgrid_init(&argc, argv);
    simgrid_load_platform(path);
    size_t nhosts = sg_host_count();
    sg_host_t *hosts = sg_host_list();
    sg_host_t *dev = malloc((nhosts + 1) * sizeof *dev);
    int ndev = 0;
    for (size_t h = 0; h < nhosts; h++) {
        if (!sg_host_get_property_value(hosts[h], "peak_bf16_flops"))
            continue;
        dev[ndev++] = hosts[h];
        fputc('H', f);
        put_str(f, sg_host_get_name(hosts[h]));
        xbt_dict_t props = sg_host_get_properties(hosts[h]);
        xbt_dict_cursor_t cur = NULL;
        char *key;
        char *val;
        xbt_dict_foreach (props, cur, key, val) {
            fputc('P', f);
            put_str(f, key);
            put_str(f, val);
        }
        xbt_dict_free(&props);
    }
    fflush(f);
    probe_routes(dev, ndev, at);
    for (int j = 1; j < ndev; j++) {
        char num[32];
        fputc('L', f);
        snprintf(num, sizeof num, "%d", j);
        put_str(f, num);
        put_str(f, plat_num(num, sizeof num, sg_host_get_route_bandwidth(dev[0], dev[j])));
        put_str(f, plat_num(num, sizeof num, sg_host_get_route_latency(dev[0], dev[j])));
    }
    free(dev);
    free(hosts);
    fputc('E', f);
    fclose(f);
    _exit(0);
}

/* SimGrid's first error line without its "[time] file:line: [cat/ERROR] "
 * prefix, into buf ("" when none). */
static void first_error(FILE *log, char *buf, size_t len)
{
    char line[1024];
    buf[0] = '\0';
    rewind(log);
    while (fgets(line, sizeof line, log)) {
        char *tag = strstr(line, "/ERROR] ");
        if (!tag)
            tag = strstr(line, "/CRITICAL] ");
        if (!tag)
            continue;
        char *msg = strchr(tag, ' ') + 1;
        msg[strcspn(msg, "\r\n")] = '\0';
        snprintf(buf, len, "%s", msg);
        return;
    }
}

typedef struct probe {
    char *data;       /* records (malloc'ed), complete when ok */
    size_t len;
    int ok;           /* the end marker arrived */
    int at[2];        /* failed: route being resolved (record indices), or -1 */
    int signal;       /* failed: signal that ended the child, 0 if none */
    char why[800];    /* failed: SimGrid's first error line, or "" */
} probe;

/* Fork the probe and collect what it says. -1 only when it cannot start. */
static int run_probe(const char *path, probe *pr, cp_err *err)
{
    memset(pr, 0, sizeof *pr);
    FILE *log = tmpfile();
    int fds[2] = {-1, -1};
    int *at = mmap(NULL, 2 * sizeof *at, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    /* set before the fork: the child writes the pair it is resolving at
     * once (a reset after the fork raced with it, and a platform without
     * routes got one of two messages) */
    if (at != MAP_FAILED)
        at[0] = at[1] = -1;
    fflush(NULL);
    pid_t pid = log && at != MAP_FAILED && pipe(fds) == 0 ? fork() : -1;
    if (pid == 0) {
        close(fds[0]);
        dup2(fileno(log), STDERR_FILENO);
        dup2(fileno(log), STDOUT_FILENO);
        probe_child(path, fds[1], at);
    }
    int rc = 0;
    if (pid < 0) {
        rc = cp_fail(err, CP_EXIT_INTERNAL, "%s: cannot start the SimGrid probe: %s", path,
                     strerror(errno));
    } else {
        close(fds[1]);
        pr->data = cp_read_all(fds[0], &pr->len);
        int status = cp_wait(pid);
        /* Success is the end marker: under valgrind the child's exit status
         * can report SimGrid's own leaks. */
        pr->ok = pr->len > 0 && pr->data[pr->len - 1] == 'E';
        pr->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        pr->at[0] = at[0];
        pr->at[1] = at[1];
        first_error(log, pr->why, sizeof pr->why);
    }
    if (fds[0] >= 0)
        close(fds[0]);
    if (at != MAP_FAILED)
        munmap(at, 2 * sizeof *at);
    if (log)
        fclose(log);
    return rc;
}

/* ---- raw XML: records to devices --------------------------------------- */

#define RAW_MAX_PROPS 32

typedef struct raw_host {
    char *name;
    int nprops;
    char *key[RAW_MAX_PROPS];
    char *val[RAW_MAX_PROPS];
    long node, rank;   /* rank -1: none */
    int first;         /* the first host of the records (route origin) */
    double bw, lat;    /* route from the first host: bytes/s, s (0: none) */
} raw_host;

/* Parse "<len>:<bytes>" at *pos; NULL when malformed. */
static char *get_str(const char *data, size_t len, size_t *pos)
{
    char *end;
    unsigned long n = strtoul(data + *pos, &end, 10);
    if (end == data + *pos || *end != ':' || n > len - (size_t)(end + 1 - data))
        return NULL;
    char *s = strndup(end + 1, n);
    *pos = (size_t)(end + 1 - data) + n;
    return s;
}

static void free_hosts(raw_host *h, int n)
{
    for (int i = 0; i < n; i++) {
        free(h[i].name);
        for (int j = 0; j < h[i].nprops; j++) {
            free(h[i].key[j]);
            free(h[i].val[j]);
        }
    }
    free(h);
}

/* An "L" record: route from the first host to host j. */
static int parse_route(const char *data, size_t len, size_t *pos, raw_host *h, int n)
{
    char *f[3] = {NULL, NULL, NULL};
    int ok = 1;
    for (int i = 0; i < 3 && ok; i++)
        ok = (f[i] = get_str(data, len, pos)) != NULL;
    long j = ok ? strtol(f[0], NULL, 10) : 0;
    ok = ok && j > 0 && j < n;
    if (ok) {
        h[j].bw = strtod(f[1], NULL);
        h[j].lat = strtod(f[2], NULL);
    }
    for (int i = 0; i < 3; i++)
        free(f[i]);
    return ok ? 0 : -1;
}

/* The host records of a probe's answer; complete: the answer must end with
 * the end marker, else whatever arrived before the child stopped is kept. */
static int parse_records(const char *path, const char *data, size_t len, int complete,
                         raw_host **out, int *nout, cp_err *err)
{
    raw_host *h = NULL;
    int n = 0, cap = 0;
    size_t pos = 0;
    while (pos < len && data[pos] != 'E') {
        char tag = data[pos++];
        if (tag == 'H') {
            if (n == cap) {
                cap = cap ? 2 * cap : 64;
                h = realloc(h, (size_t)cap * sizeof *h);
            }
            memset(&h[n], 0, sizeof h[n]);
            h[n].name = get_str(data, len, &pos);
            if (!h[n].name)
                break;
            n++;
        } else if (tag == 'P' && n > 0 && h[n - 1].nprops < RAW_MAX_PROPS) {
            raw_host *c = &h[n - 1];
            c->key[c->nprops] = get_str(data, len, &pos);
            c->val[c->nprops] = c->key[c->nprops] ? get_str(data, len, &pos) : NULL;
            if (!c->val[c->nprops++])
                break;
        } else if (tag == 'L') {
            if (parse_route(data, len, &pos, h, n) < 0)
                break;
        } else if (tag == 'P' && n > 0) {
            *out = h;
            *nout = n;
            return cp_fail(err, CP_EXIT_INPUT, "%s: host \"%s\" has more than %d properties",
                           path, h[n - 1].name, RAW_MAX_PROPS);
        } else {
            break;
        }
    }
    if (n > 0)
        h[0].first = 1;
    *out = h;
    *nout = n;
    if (complete && (pos >= len || data[pos] != 'E'))
        return cp_fail(err, CP_EXIT_INTERNAL, "%s: garbled answer from the SimGrid probe", path);
    return 0;
}

/* The message for a probe that did not finish. */
static int refused(const char *path, const probe *pr, const raw_host *h, int n, cp_err *err)
{
    char why[900];
    if (pr->why[0])
        snprintf(why, sizeof why, "%s", pr->why);
    else if (pr->at[0] >= 0 && pr->at[0] < n && pr->at[1] >= 0 && pr->at[1] < n)
        snprintf(why, sizeof why, "no route from host \"%s\" to host \"%s\"",
                 h[pr->at[0]].name, h[pr->at[1]].name);
    else if (pr->signal)
        snprintf(why, sizeof why, "the SimGrid probe died of signal %d", pr->signal);
    else
        snprintf(why, sizeof why, "the SimGrid probe stopped without a message");
    return cp_fail(err, CP_EXIT_INPUT, "%s: SimGrid refused the platform: %s", path, why);
}

static const char *prop(const raw_host *h, const char *key)
{
    for (int i = 0; i < h->nprops; i++)
        if (h->key[i] && strcmp(h->key[i], key) == 0)
            return h->val[i];
    return NULL;
}

/* Compare names with digit runs taken as numbers: n0g2 < n0g10 (names equal
 * that way, such as g2 and g02, fall back to plain order). */
static int natural_cmp(const char *a, const char *b)
{
    const char *x = a, *y = b;
    while (*x && *y) {
        if (*x >= '0' && *x <= '9' && *y >= '0' && *y <= '9') {
            char *ex, *ey;
            unsigned long long u = strtoull(x, &ex, 10), v = strtoull(y, &ey, 10);
            if (u != v)
                return u < v ? -1 : 1;
            x = ex;
            y = ey;
        } else if (*x != *y) {
            return (unsigned char)*x < (unsigned char)*y ? -1 : 1;
        } else {
            x++;
            y++;
        }
    }
    if (*x || *y)
        return *x ? 1 : -1;
    return strcmp(a, b);
}

static int by_rank(const void *x, const void *y)
{
    const raw_host *a = x, *b = y;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

static int by_node_name(const void *x, const void *y)
{
    const raw_host *a = x, *b = y;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    return natural_cmp(a->name, b->name);
}

/* Integer prop in [lo, hi], or dflt when absent. */
static int int_prop(const char *path, const raw_host *h, const char *key, long lo, long hi,
                    long dflt, long *out, cp_err *err)
{
    const char *v = prop(h, key);
    if (!v) {
        *out = dflt;
        return 0;
    }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi)
        return cp_fail(err, CP_EXIT_INPUT,
                       "%s: host \"%s\": property \"%s\" = \"%s\" is not an integer in [%ld, %ld]",
                       path, h->name, key, v, lo, hi);
    *out = x;
    return 0;
}

/* Number prop in (lo, hi] (lo_incl: [lo, hi]); required or default dflt. */
static int num_prop(const char *path, const raw_host *h, const char *key, int required,
                    double lo, int lo_incl, double hi, double dflt, double *out, cp_err *err)
{
    const char *v = prop(h, key);
    if (!v && required)
        return cp_fail(err, CP_EXIT_INPUT, "%s: host \"%s\" lacks property \"%s\"", path,
                       h->name, key);
    if (!v) {
        *out = dflt;
        return 0;
    }
    char *end;
    double x = strtod(v, &end);
    int ok = end != v && !*end && x <= hi && (lo_incl ? x >= lo : x > lo);
    if (!ok)
        return cp_fail(err, CP_EXIT_INPUT,
                       "%s: host \"%s\": property \"%s\" = \"%s\" is not a number in %c%g, %g]",
                       path, h->name, key, v, lo_incl ? '[' : '(', lo, hi);
    *out = x;
    return 0;
}

/* Raw-XML props of a device. */
static const char *const raw_props[] = {
    "peak_bf16_flops", "peak_fp16_flops", "peak_fp8_flops", "peak_int8_flops",
    "peak_fp32_flops", "peak_int4_flops", "vector_flops", "hbm_bytes", "hbm_bandwidth",
    "launch_eager", "launch_graph", "collective_latency_eager", "collective_latency_graph",
    "efficiency_gemm", "efficiency_attention", "efficiency_memory", "link_efficiency",
    "allreduce_oneshot_max", "reserved_bytes", "workspace_bytes", "sm_count", "node", "rank",
    "calibration", "model", NULL};

/* A prop close to a known one but not known is a typo, not a foreign prop. */
static int check_prop_names(const char *path, const raw_host *h, cp_err *err)
{
    for (int i = 0; i < h->nprops; i++) {
        int known = 0;
        for (const char *const *k = raw_props; *k && !known; k++)
            known = strcmp(*k, h->key[i]) == 0;
        const char *close = known ? NULL : cp_did_you_mean(h->key[i], raw_props);
        if (close)
            return cp_fail(err, CP_EXIT_INPUT,
                           "%s: host \"%s\": unknown property \"%s\" (did you mean \"%s\"?)",
                           path, h->name, h->key[i], close);
    }
    return 0;
}

/* Defaults for what a raw platform does not say (each used only when the
 * host lacks the prop):
 *   peak_fp16_flops      = peak_bf16_flops (equal on the NVIDIA devices of
 *                          models-hardware.md 3.1; the Ascend profiles of
 *                          3.2 differ, so give it for them)
 *   other peaks          0 (unsupported)
 *   vector_flops         peak_fp32_flops when given, else peak_bf16 / 14.8
 *                        (derived: H100 989.4 / 66.9 TF, models-hardware 3.1)
 *   launch, collective latencies, efficiencies, link_efficiency (fabric,
 *   package and network each the preset's own), allreduce_oneshot_max,
 *   reserved_bytes, workspace_bytes: the values of dflt, the h200-sxm-8
 *   preset (sources in platforms/h200-sxm-8.yaml), read from the preset
 *   itself so the two cannot drift apart;
 *   sm_count 0 (no wave quantisation: the SM count belongs to the device
 *   model, not a default), node 0, no calibration.
 * Link bandwidths and latencies come from the file's routes (set_links). */
static int read_device(const char *path, const raw_host *h, const platform *dflt, platform *p,
                       cp_err *err)
{
    const double fmax = PLAT_FLOPS_MAX;
    if (check_prop_names(path, h, err) < 0 ||
        num_prop(path, h, "peak_bf16_flops", 1, PLAT_FLOPS_MIN, 1, fmax, 0,
                 &p->peak_flops[DT_BF16], err) < 0 ||
        num_prop(path, h, "hbm_bytes", 1, 0, 0, PLAT_HBM_MAX, 0, &p->hbm_bytes, err) < 0 ||
        num_prop(path, h, "hbm_bandwidth", 1, PLAT_BW_MIN, 1, PLAT_BW_MAX, 0, &p->hbm_bw, err) < 0)
        return -1;
    for (int t = DT_FP16; t < DT_COUNT; t++) {
        double dflt_peak = t == DT_FP16 ? p->peak_flops[DT_BF16] : 0;
        if (num_prop(path, h, plat_peak_prop[t], 0, 0, 1, fmax, dflt_peak, &p->peak_flops[t],
                     err) < 0)
            return -1;
        if (p->peak_flops[t] > 0 && p->peak_flops[t] < PLAT_FLOPS_MIN)
            return cp_fail(err, CP_EXIT_INPUT, "%s: host \"%s\": property \"%s\" = %g: expected "
                           "0 (unsupported) or at least %g", path, h->name, plat_peak_prop[t],
                           p->peak_flops[t], PLAT_FLOPS_MIN);
    }
    double vdflt = p->peak_flops[DT_FP32] > 0 ? p->peak_flops[DT_FP32]
                                              : p->peak_flops[DT_BF16] / 14.8;
    double link_eff = -1, sm;
    if (num_prop(path, h, "vector_flops", 0, PLAT_FLOPS_MIN, 1, fmax, vdflt, &p->vector_flops,
                 err) < 0 ||
        num_prop(path, h, "launch_eager", 0, 0, 1, 1, dflt->launch_eager, &p->launch_eager, err) <
            0 ||
        num_prop(path, h, "launch_graph", 0, 0, 1, 1, dflt->launch_graph, &p->launch_graph, err) <
            0 ||
        num_prop(path, h, "collective_latency_eager", 0, 0, 1, 1, dflt->coll_latency_eager,
                 &p->coll_latency_eager, err) < 0 ||
        num_prop(path, h, "collective_latency_graph", 0, 0, 1, 1, dflt->coll_latency_graph,
                 &p->coll_latency_graph, err) < 0 ||
        num_prop(path, h, "efficiency_gemm", 0, PLAT_EFF_MIN, 1, 1, dflt->eff_gemm, &p->eff_gemm,
                 err) < 0 ||
        num_prop(path, h, "efficiency_attention", 0, PLAT_EFF_MIN, 1, 1, dflt->eff_attention,
                 &p->eff_attention, err) < 0 ||
        num_prop(path, h, "efficiency_memory", 0, PLAT_EFF_MIN, 1, 1, dflt->eff_memory,
                 &p->eff_memory, err) < 0 ||
        num_prop(path, h, "link_efficiency", 0, PLAT_EFF_MIN, 1, 1, -1, &link_eff, err) < 0 ||
        num_prop(path, h, "allreduce_oneshot_max", 0, 0, 1, PLAT_ONESHOT_MAX,
                 dflt->allreduce_oneshot_max, &p->allreduce_oneshot_max, err) < 0 ||
        num_prop(path, h, "reserved_bytes", 0, 0, 1, PLAT_HBM_MAX, dflt->reserved_bytes,
                 &p->reserved_bytes, err) < 0 ||
        num_prop(path, h, "workspace_bytes", 0, 0, 1, PLAT_HBM_MAX, dflt->workspace_bytes,
                 &p->workspace_bytes, err) < 0 ||
        num_prop(path, h, "sm_count", 0, 0, 1, PLAT_SM_MAX, 0, &sm, err) < 0)
        return -1;
    if (sm != floor(sm))
        return cp_fail(err, CP_EXIT_INPUT, "%s: host \"%s\": property \"sm_count\" must be an "
                       "integer", path, h->name);
    p->sm_count = (int)sm;
    /* one link_efficiency for every tier when given, else each tier the
     * preset's */
    p->intra.efficiency = link_eff > 0 ? link_eff : dflt->intra.efficiency;
    p->package.efficiency = link_eff > 0 ? link_eff : dflt->package.efficiency;
    p->nic.efficiency = link_eff > 0 ? link_eff : dflt->nic.efficiency;
    p->spine.efficiency = link_eff > 0 ? link_eff : dflt->spine.efficiency;
    const char *cal = prop(h, "calibration"), *model = prop(h, "model");
    /* a profile name, or a folder's path relative to the XML file */
    char dir[1024];
    if (cal && strchr(cal, '/'))
        cp_resolve(p->calibration, sizeof p->calibration, cp_dirname(dir, sizeof dir, path), cal);
    else
        snprintf(p->calibration, sizeof p->calibration, "%s", cal ? cal : "");
    snprintf(p->device, sizeof p->device, "%s", model ? model : "raw SimGrid host");
    return 0;
}

/* The device fields of two platforms, compared field by field. */
static const char *device_differs(const platform *a, const platform *b)
{
    for (int t = 0; t < DT_COUNT; t++)
        if (a->peak_flops[t] != b->peak_flops[t])
            return plat_peak_prop[t];
    if (a->hbm_bytes != b->hbm_bytes)
        return "hbm_bytes";
    if (a->hbm_bw != b->hbm_bw)
        return "hbm_bandwidth";
    if (a->vector_flops != b->vector_flops || a->launch_eager != b->launch_eager ||
        a->launch_graph != b->launch_graph || a->coll_latency_eager != b->coll_latency_eager ||
        a->coll_latency_graph != b->coll_latency_graph || a->eff_gemm != b->eff_gemm ||
        a->eff_attention != b->eff_attention || a->eff_memory != b->eff_memory ||
        a->intra.efficiency != b->intra.efficiency || a->sm_count != b->sm_count ||
        a->reserved_bytes != b->reserved_bytes || a->workspace_bytes != b->workspace_bytes ||
        a->allreduce_oneshot_max != b->allreduce_oneshot_max ||
        strcmp(a->calibration, b->calibration) != 0)
        return "device properties";
    return NULL;
}

/* Order the devices and derive nodes / devices_per_node. */
static int arrange(const char *path, raw_host *h, int n, platform *p, cp_err *err)
{
    int with_rank = 0;
    for (int i = 0; i < n; i++) {
        if (int_prop(path, &h[i], "node", 0, 4095, 0, &h[i].node, err) < 0 ||
            int_prop(path, &h[i], "rank", 0, 65535, -1, &h[i].rank, err) < 0)
            return -1;
        with_rank += h[i].rank >= 0;
    }
    if (with_rank && with_rank != n)
        return cp_fail(err, CP_EXIT_INPUT, "%s: property \"rank\" is on %d of the %d devices: "
                       "give it to all or none", path, with_rank, n);
    qsort(h, (size_t)n, sizeof *h, with_rank ? by_rank : by_node_name);
    long nodes = 0;
    for (int i = 0; i < n; i++) {
        if (with_rank && h[i].rank != i)
            return cp_fail(err, CP_EXIT_INPUT, "%s: device ranks must be 0..%d, each once "
                           "(host \"%s\" has %ld)", path, n - 1, h[i].name, h[i].rank);
        if (h[i].node + 1 > nodes)
            nodes = h[i].node + 1;
    }
    int per = n / (int)nodes;
    for (int i = 0; i < n; i++)
        if (per * nodes != n || h[i].node != i / per)
            return cp_fail(err, CP_EXIT_INPUT, "%s: the %d devices must fill nodes 0..%ld "
                           "equally, in rank order (host \"%s\" is on node %ld)", path, n,
                           nodes - 1, h[i].name, h[i].node);
    p->nodes = (int)nodes;
    p->devices_per_node = per;
    return 0;
}

/* Whether route a is a worse bottleneck than route b (NULL: none yet). */
static int slower(const raw_host *a, const raw_host *b)
{
    return !b || a->bw < b->bw || (a->bw == b->bw && a->lat > b->lat);
}

/* Line rates and latencies of a raw platform, read from its routes (after
 * arrange): intra = the slowest route from the first host of the records
 * to another device of its node (the fabric rather than a package link),
 * nic + spine = the slowest one to a device of another node (its latency
 * split in halves, like a preset's NIC and spine stages).  A tier without
 * such a pair takes the other's values; a lone device copies within its
 * memory (intra = HBM bandwidth, no latency). */
static void set_links(const raw_host *h, int n, platform *p)
{
    const raw_host *ref = NULL, *near = NULL, *far = NULL;
    for (int i = 0; i < n; i++)
        if (h[i].first)
            ref = &h[i];
    for (int i = 0; i < n; i++) {
        if (&h[i] == ref)
            continue;
        if (h[i].node == ref->node && slower(&h[i], near))
            near = &h[i];
        if (h[i].node != ref->node && slower(&h[i], far))
            far = &h[i];
    }
    near = near ? near : far;
    far = far ? far : near;
    p->intra.bandwidth = near ? near->bw : p->hbm_bw;
    p->intra.latency = near ? near->lat : 0;
    p->nic.bandwidth = p->spine.bandwidth = far ? far->bw : p->hbm_bw;
    p->nic.latency = p->spine.latency = far ? far->lat / 2 : 0;
}

static int build(const char *path, raw_host *h, int n, const platform *dflt, platform *out,
                 char ***names, cp_err *err)
{
    if (n <= 0)
        return cp_fail(err, CP_EXIT_INPUT, "%s: no host carries the property "
                       "\"peak_bf16_flops\", so the platform has no devices", path);
    if (n > 65536)
        return cp_fail(err, CP_EXIT_INPUT, "%s: %d devices; at most 65536 are supported (as "
                       "for presets)", path, n);
    if (arrange(path, h, n, out, err) < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        platform dev = *out;
        if (read_device(path, &h[i], dflt, i ? &dev : out, err) < 0)
            return -1;
        const char *what = i ? device_differs(out, &dev) : NULL;
        if (what)
            return cp_fail(err, CP_EXIT_INPUT, "%s: host \"%s\" differs from host \"%s\" in %s; "
                           "cpsim needs identical devices", path, h[i].name, h[0].name, what);
    }
    set_links(h, n, out);
    if (out->intra.bandwidth < PLAT_BW_MIN ||
        (out->nodes > 1 && out->nic.bandwidth < PLAT_BW_MIN))
        return cp_fail(err, CP_EXIT_INPUT, "%s: the slowest route between devices runs at %g "
                       "B/s; cpsim needs at least %g B/s", path,
                       out->nodes > 1 && out->nic.bandwidth < out->intra.bandwidth
                           ? out->nic.bandwidth : out->intra.bandwidth, PLAT_BW_MIN);
    *names = malloc((size_t)n * sizeof **names);
    for (int i = 0; i < n; i++) {
        (*names)[i] = h[i].name;
        h[i].name = NULL;
    }
    return 0;
}

/* The value of attribute `name` in the tag starting at t (up to its '>'),
 * copied into v; 0 when absent. */
static int attr(const char *t, const char *name, char *v, size_t n)
{
    size_t len = strlen(name);
    const char *end = strchr(t, '>');
    for (const char *a = t; (a = strstr(a, name)) && (!end || a < end); a += len) {
        if ((a[-1] != ' ' && a[-1] != '\t' && a[-1] != '\n') || a[len] != '=' ||
            (a[len + 1] != '"' && a[len + 1] != '\''))
            continue;
        const char *q = strchr(a + len + 2, a[len + 1]);
        if (!q)
            return 0;
        snprintf(v, n, "%.*s", (int)(q - a - len - 2), a + len + 2);
        return 1;
    }
    return 0;
}

/* SimGrid keeps one of a host's <prop>s given twice and says nothing: a
 * scan of the text refuses the second, with its line (comments skipped). */
static int check_duplicate_props(const char *path, cp_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0; /* the probe names the problem */
    char *text = NULL;
    size_t cap = 0;
    ssize_t len = getdelim(&text, &cap, '\0', f);
    fclose(f);
    if (len <= 0) {
        free(text);
        return 0;
    }
    enum { SEEN = 64 };
    char host[128] = "", seen[SEEN][64];
    int nseen = 0, line = 1, rc = 0;
    for (const char *c = text; *c && rc == 0; c++) {
        if (*c == '\n')
            line++;
        if (*c != '<')
            continue;
        if (strncmp(c, "<!--", 4) == 0) {
            const char *e = strstr(c, "-->");
            for (const char *k = c; e && k < e; k++)
                line += *k == '\n';
            if (!e)
                break;
            c = e + 2;
        } else if (strncmp(c, "<host", 5) == 0 && (c[5] == ' ' || c[5] == '\t' || c[5] == '\n')) {
            if (!attr(c, "id", host, sizeof host))
                host[0] = '\0';
            nseen = 0;
        } else if (strncmp(c, "</host", 6) == 0) {
            host[0] = '\0';
        } else if (strncmp(c, "<prop", 5) == 0 && host[0]) {
            char id[64];
            if (!attr(c, "id", id, sizeof id))
                continue;
            for (int i = 0; i < nseen && rc == 0; i++)
                if (strcmp(seen[i], id) == 0)
                    rc = cp_fail_at(err, (cp_loc){path, line, 1},
                                    "host \"%s\": property \"%s\" given twice (SimGrid "
                                    "would keep one of them silently)", host, id);
            if (nseen < SEEN)
                snprintf(seen[nseen++], sizeof seen[0], "%s", id);
        }
    }
    free(text);
    return rc;
}

int plat_xml_read(const char *path, const platform *dflt, platform *out, char ***names,
                  cp_err *err)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return cp_fail(err, CP_EXIT_INPUT, "%s: cannot read the SimGrid platform: %s", path,
                       errno ? strerror(errno) : "not a regular file");
    if (check_duplicate_props(path, err) < 0)
        return -1;
    probe pr;
    if (run_probe(path, &pr, err) < 0)
        return -1;
    raw_host *h = NULL;
    int n = 0;
    int rc = parse_records(path, pr.data, pr.len, pr.ok, &h, &n, err);
    if (rc == 0 && !pr.ok)
        rc = refused(path, &pr, h, n, err);
    free(pr.data);
    if (rc == 0) {
        memset(out, 0, sizeof *out);
        out->raw_xml = 1;
        out->fabric = FAB_SWITCH;
        snprintf(out->source, sizeof out->source, "%s", path);
        const char *base = strrchr(path, '/');
        snprintf(out->name, sizeof out->name, "%s", base ? base + 1 : path);
        rc = build(path, h, n, dflt, out, names, err);
    }
    free_hosts(h, n);
    return rc;
}
