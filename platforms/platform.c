/* platform: loading presets (YAML, with the workload's overrides merged in)
 * and raw SimGrid XML platforms into struct platform, host names, and the
 * YAML dump (see platform.h; the preset format is documented at the top of
 * every platforms/<name>.yaml).
 *
 * Latency convention: every `latency` of a preset is what one transfer pays
 * to cross that tier (device to device over the fabric, die to die over the
 * package link, NIC stage and spine stage between nodes), and the structure
 * keeps it so; the XML writer spreads it over the links of the route.
 */
#include "platforms/platform.h"

#include <jansson.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "platforms/platform_xml.h"
#include "base/datadir.h"

const char *const plat_bundled[] = {
    "ascend-910b-8", "ascend-a3-16", "b200-8", "h100-sxm-8", "h100-sxm-8-500w", "h200-sxm-8",
    "h200-sxm-8-tcp100", NULL};

/* Shape limits (the task's: 4096 nodes, 1024 devices each, 65536 in all). */
#define NODES_MAX 4096
#define DPN_MAX 1024
#define DEVICES_MAX 65536

/* ---- key lists (for unknown-key checks and suggestions) ---------------- */

static const char *const top_keys[] = {
    "name", "nodes", "devices_per_node", "device", "fabric", "package", "network",
    "collectives", NULL};
static const char *const device_keys[] = {
    "model", "peak_flops", "vector_flops", "hbm_bytes", "hbm_bandwidth", "sm_count",
    "launch", "collective_latency", "efficiency", "calibration", "reserved_bytes",
    "workspace_bytes", NULL};
static const char *const mode_keys[] = {"eager", "graph", NULL};
static const char *const eff_keys[] = {"gemm", "attention", "memory", NULL};
static const char *const fabric_keys[] = {"kind", "bandwidth", "latency", "efficiency", NULL};
static const char *const fabric_kinds[] = {"switch", "mesh", NULL};
static const char *const package_keys[] = {"devices", "bandwidth", "latency", "efficiency",
                                           NULL};
static const char *const network_keys[] = {
    "nic_bandwidth", "nic_latency", "spine_bandwidth", "spine_latency", "efficiency", NULL};
static const char *const coll_keys[] = {"allreduce_oneshot_max", NULL};

/* ---- typed reads --------------------------------------------------------- */

static int missing(const ynode *map, const char *prefix, const char *key, cp_err *err)
{
    return cp_fail_at(err, map->loc, "%s: missing key \"%s\"", *prefix ? prefix : "platform",
                      key);
}

/* A number in (lo, hi] (lo_open) or [lo, hi].  Absent: error when required,
 * else *out is left as it is. */
static int get_num(const ynode *map, const char *prefix, const char *key, int required,
                   double lo, int lo_open, double hi, double *out, cp_err *err)
{
    const ynode *n = yio_key(map, key);
    if (!n)
        return required ? missing(map, prefix, key, err) : 0;
    char what[256];
    yio_path(what, sizeof what, prefix, key);
    double v;
    cp_err quiet = {0};
    if (yio_double(n, what, lo, hi, &v, &quiet) == 0 && (!lo_open || v > lo)) {
        *out = v;
        return 0;
    }
    char got[96];
    if (n->kind == YN_SCALAR)
        snprintf(got, sizeof got, "\"%.60s\"", n->str);
    else
        snprintf(got, sizeof got, "%s", n->kind == YN_MAP   ? "a mapping"
                                        : n->kind == YN_SEQ ? "a list"
                                                            : "an empty value");
    return cp_fail_at(err, n->loc, "%s: expected a number in %c%g, %g], got %s", what,
                      lo_open ? '(' : '[', lo, hi, got);
}

static int get_int(const ynode *map, const char *prefix, const char *key, int required,
                   long long lo, long long hi, int *out, cp_err *err)
{
    const ynode *n = yio_key(map, key);
    if (!n)
        return required ? missing(map, prefix, key, err) : 0;
    char what[256];
    long long v;
    if (yio_int(n, yio_path(what, sizeof what, prefix, key), lo, hi, &v, err) < 0)
        return -1;
    *out = (int)v;
    return 0;
}

/* A string of at most len - 1 characters into buf. */
static int get_str(const ynode *map, const char *prefix, const char *key, int required,
                   char *buf, size_t len, cp_err *err)
{
    const ynode *n = yio_key(map, key);
    if (!n)
        return required ? missing(map, prefix, key, err) : 0;
    char what[256];
    const char *s = yio_str(n, yio_path(what, sizeof what, prefix, key), err);
    if (!s)
        return -1;
    if (strlen(s) >= len)
        return cp_fail_at(err, n->loc, "%s: longer than %zu characters", what, len - 1);
    snprintf(buf, len, "%s", s);
    return 0;
}

/* A sub-map; *out NULL when absent and optional. */
static int get_map(const ynode *map, const char *prefix, const char *key, int required,
                   const ynode **out, cp_err *err)
{
    *out = yio_key(map, key);
    if (!*out)
        return required ? missing(map, prefix, key, err) : 0;
    char what[256];
    return yio_want_map(*out, yio_path(what, sizeof what, prefix, key), err);
}

/* Unknown keys first, so that a misspelt key is reported as such rather
 * than as the required key it was meant to be. */
static int only_known(const ynode *map, const char *prefix, const char *const *known,
                      cp_err *err)
{
    for (int i = 0; known[i]; i++)
        yio_key(map, known[i]);
    return yio_no_unknown(map, prefix, known, err);
}

/* Where to report a conflict between two keys of the (merged) preset: at
 * the one a workload override set, if only one was overridden, else at a.
 * Overridden nodes carry an origin other than the preset file's. */
static cp_loc conflict_loc(const ynode *root, const ynode *a, const ynode *b)
{
    const char *preset = root->loc.origin;
    int a_over = a->loc.origin != preset && (!preset || !a->loc.origin ||
                                             strcmp(a->loc.origin, preset) != 0);
    int b_over = b->loc.origin != preset && (!preset || !b->loc.origin ||
                                             strcmp(b->loc.origin, preset) != 0);
    return b_over && !a_over ? b->loc : a->loc;
}

/* ---- sections ------------------------------------------------------------ */

/* {eager, graph} seconds, both required, each in [0, 1]. */
static int read_modes(const ynode *dev, const char *key, double *eager, double *graph,
                      cp_err *err)
{
    const ynode *m;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "device.%s", key);
    if (get_map(dev, "device", key, 1, &m, err) < 0 ||
        only_known(m, prefix, mode_keys, err) < 0 ||
        get_num(m, prefix, "eager", 1, 0, 0, 1, eager, err) < 0 ||
        get_num(m, prefix, "graph", 1, 0, 0, 1, graph, err) < 0)
        return -1;
    return 0;
}

static int read_peaks(const ynode *dev, platform *p, cp_err *err)
{
    const ynode *m;
    if (get_map(dev, "device", "peak_flops", 1, &m, err) < 0 ||
        only_known(m, "device.peak_flops", dtype_names, err) < 0)
        return -1;
    for (int t = 0; t < DT_COUNT; t++) {
        if (get_num(m, "device.peak_flops", dtype_names[t], t == DT_BF16,
                    t == DT_BF16 ? PLAT_FLOPS_MIN : 0, 0, PLAT_FLOPS_MAX, &p->peak_flops[t],
                    err) < 0)
            return -1;
        /* 0: the dtype is not supported; else a real rate */
        if (p->peak_flops[t] > 0 && p->peak_flops[t] < PLAT_FLOPS_MIN)
            return cp_fail_at(err, yio_key(m, dtype_names[t])->loc,
                              "device.peak_flops.%s: expected 0 (unsupported) or a number in "
                              "[%g, %g], got %g", dtype_names[t], PLAT_FLOPS_MIN, PLAT_FLOPS_MAX,
                              p->peak_flops[t]);
    }
    return 0;
}

/* Whether the profile's folder (cp_calib_dir) is a directory; its path
 * into path. */
static int calibration_exists(const char *name, char *path, size_t len)
{
    struct stat st;
    cp_calib_dir(path, len, name);
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* device.calibration: a bundled profile's name, or the path of a profile
 * folder (holding a '/'), relative to the file it is written in. */
static int check_calibration(const ynode *dev, platform *p, cp_err *err)
{
    const ynode *n = yio_key(dev, "calibration");
    if (strchr(p->calibration, '/') && p->calibration[0] != '/' && n->loc.origin &&
        strncmp(n->loc.origin, "--set", 5) != 0) {
        char dir[1024], rel[1024];
        snprintf(rel, sizeof rel, "%s", p->calibration);
        cp_resolve(p->calibration, sizeof p->calibration,
                   cp_dirname(dir, sizeof dir, n->loc.origin), rel);
    }
    char path[1024];
    if (calibration_exists(p->calibration, path, sizeof path))
        return 0;
    return cp_fail_at(err, n->loc, "device.calibration: no calibration profile \"%s\" "
                      "(expected the directory %s)", n->str, path);
}

static int read_device(const ynode *root, platform *p, cp_err *err)
{
    const ynode *dev, *eff;
    if (get_map(root, "", "device", 1, &dev, err) < 0 ||
        only_known(dev, "device", device_keys, err) < 0 ||
        get_str(dev, "device", "model", 1, p->device, sizeof p->device, err) < 0 ||
        read_peaks(dev, p, err) < 0 ||
        get_num(dev, "device", "vector_flops", 1, PLAT_FLOPS_MIN, 0, PLAT_FLOPS_MAX,
                &p->vector_flops, err) < 0 ||
        get_num(dev, "device", "hbm_bytes", 1, 0, 1, PLAT_HBM_MAX, &p->hbm_bytes, err) < 0 ||
        get_num(dev, "device", "hbm_bandwidth", 1, PLAT_BW_MIN, 0, PLAT_BW_MAX, &p->hbm_bw,
                err) < 0 ||
        get_num(dev, "device", "reserved_bytes", 0, 0, 0, PLAT_HBM_MAX, &p->reserved_bytes,
                err) < 0 ||
        get_num(dev, "device", "workspace_bytes", 0, 0, 0, PLAT_HBM_MAX, &p->workspace_bytes,
                err) < 0 ||
        get_int(dev, "device", "sm_count", 0, 0, PLAT_SM_MAX, &p->sm_count, err) < 0 ||
        read_modes(dev, "launch", &p->launch_eager, &p->launch_graph, err) < 0 ||
        read_modes(dev, "collective_latency", &p->coll_latency_eager,
                   &p->coll_latency_graph, err) < 0 ||
        get_map(dev, "device", "efficiency", 1, &eff, err) < 0 ||
        only_known(eff, "device.efficiency", eff_keys, err) < 0 ||
        get_num(eff, "device.efficiency", "gemm", 1, PLAT_EFF_MIN, 0, 1, &p->eff_gemm, err) < 0 ||
        get_num(eff, "device.efficiency", "attention", 1, PLAT_EFF_MIN, 0, 1, &p->eff_attention,
                err) < 0 ||
        get_num(eff, "device.efficiency", "memory", 1, PLAT_EFF_MIN, 0, 1, &p->eff_memory,
                err) < 0 ||
        get_str(dev, "device", "calibration", 0, p->calibration, sizeof p->calibration, err) < 0)
        return -1;
    if (p->calibration[0] && check_calibration(dev, p, err) < 0)
        return -1;
    return 0;
}

/* Line rate (bytes/s per direction) and latency (s) of one tier. */
static int read_link(const ynode *m, const char *prefix, const char *bw_key,
                     const char *lat_key, plat_link *l, cp_err *err)
{
    if (get_num(m, prefix, bw_key, 1, PLAT_BW_MIN, 0, PLAT_BW_MAX, &l->bandwidth, err) < 0 ||
        get_num(m, prefix, lat_key, 1, 0, 1, 1, &l->latency, err) < 0)
        return -1;
    return 0;
}

static int read_fabric(const ynode *root, platform *p, cp_err *err)
{
    const ynode *m;
    int kind = FAB_SWITCH;
    if (get_map(root, "", "fabric", 1, &m, err) < 0 ||
        only_known(m, "fabric", fabric_keys, err) < 0)
        return -1;
    if (!yio_key(m, "kind"))
        return missing(m, "fabric", "kind", err);
    if (yio_opt_enum(m, "fabric", "kind", fabric_kinds, &kind, err) < 0 ||
        read_link(m, "fabric", "bandwidth", "latency", &p->intra, err) < 0 ||
        get_num(m, "fabric", "efficiency", 1, PLAT_EFF_MIN, 0, 1, &p->intra.efficiency, err) < 0)
        return -1;
    p->fabric = (plat_fabric_kind)kind;
    if (p->fabric == FAB_MESH && p->devices_per_node < 2)
        return cp_fail_at(err, conflict_loc(root, yio_key(m, "kind"),
                                            yio_key(root, "devices_per_node")),
                          "fabric.kind: a mesh needs devices_per_node >= 2, got %d",
                          p->devices_per_node);
    return 0;
}

static int read_package(const ynode *root, platform *p, cp_err *err)
{
    const ynode *m;
    if (get_map(root, "", "package", 0, &m, err) < 0)
        return -1;
    if (!m)
        return 0;
    if (only_known(m, "package", package_keys, err) < 0 ||
        get_int(m, "package", "devices", 1, 1, DPN_MAX, &p->package_devices, err) < 0 ||
        read_link(m, "package", "bandwidth", "latency", &p->package, err) < 0 ||
        get_num(m, "package", "efficiency", 1, PLAT_EFF_MIN, 0, 1, &p->package.efficiency, err) < 0)
        return -1;
    if (p->devices_per_node % p->package_devices != 0)
        return cp_fail_at(err, conflict_loc(root, yio_key(m, "devices"),
                                            yio_key(root, "devices_per_node")),
                          "package.devices: %d does not divide devices_per_node (%d)",
                          p->package_devices, p->devices_per_node);
    return 0;
}

static int read_network(const ynode *root, platform *p, cp_err *err)
{
    const ynode *m;
    if (get_map(root, "", "network", 1, &m, err) < 0 ||
        only_known(m, "network", network_keys, err) < 0 ||
        read_link(m, "network", "nic_bandwidth", "nic_latency", &p->nic, err) < 0 ||
        get_num(m, "network", "spine_latency", 1, 0, 1, 1, &p->spine.latency, err) < 0 ||
        get_num(m, "network", "efficiency", 1, PLAT_EFF_MIN, 0, 1, &p->nic.efficiency, err) < 0)
        return -1;
    /* Default: a non-blocking spine, never slower than a NIC for one flow. */
    p->spine.bandwidth = p->nic.bandwidth;
    p->spine.efficiency = p->nic.efficiency;
    return get_num(m, "network", "spine_bandwidth", 0, PLAT_BW_MIN, 0, PLAT_BW_MAX,
                   &p->spine.bandwidth, err);
}

static int read_collectives(const ynode *root, platform *p, cp_err *err)
{
    const ynode *m;
    if (get_map(root, "", "collectives", 0, &m, err) < 0 ||
        only_known(m, "collectives", coll_keys, err) < 0)
        return -1;
    return get_num(m, "collectives", "allreduce_oneshot_max", 0, 0, 0, PLAT_ONESHOT_MAX,
                   &p->allreduce_oneshot_max, err);
}

static int read_shape(const ynode *root, platform *p, cp_err *err)
{
    if (get_int(root, "", "nodes", 1, 1, NODES_MAX, &p->nodes, err) < 0 ||
        get_int(root, "", "devices_per_node", 1, 1, DPN_MAX, &p->devices_per_node, err) < 0)
        return -1;
    long long total = (long long)p->nodes * p->devices_per_node;
    if (total > DEVICES_MAX)
        return cp_fail_at(err, conflict_loc(root, yio_key(root, "nodes"),
                                            yio_key(root, "devices_per_node")),
                          "nodes x devices_per_node = %d x %d "
                          "= %lld devices; at most %d are supported", p->nodes,
                          p->devices_per_node, total, DEVICES_MAX);
    return 0;
}

/* Everything but `name` (read before the overrides were merged). */
static int read_preset(const ynode *root, platform *p, cp_err *err)
{
    if (only_known(root, "", top_keys, err) < 0 || read_shape(root, p, err) < 0 ||
        read_device(root, p, err) < 0 || read_fabric(root, p, err) < 0 ||
        read_package(root, p, err) < 0 || read_network(root, p, err) < 0)
        return -1;
    return read_collectives(root, p, err);
}

/* ---- locating the preset ------------------------------------------------- */

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int unknown_preset(const char *spec, const ynode *overrides, cp_err *err)
{
    char hint[160], list[512] = "";
    cp_suggest(hint, sizeof hint, spec, plat_bundled);
    for (int i = 0; plat_bundled[i]; i++) {
        size_t o = strlen(list);
        snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", plat_bundled[i]);
    }
#define UNKNOWN_PRESET "unknown platform preset \"%s\"%s; bundled presets: %s (or give a " \
                       "path to a .yaml preset or a SimGrid .xml platform)"
    const ynode *at = yio_key(overrides, "name");
    if (at)
        return cp_fail_at(err, at->loc, UNKNOWN_PRESET, spec, hint, list);
    return cp_fail(err, CP_EXIT_INPUT, UNKNOWN_PRESET, spec, hint, list);
#undef UNKNOWN_PRESET
}

/* Preset file of spec into path. */
static int preset_path(const char *spec, const char *base_dir, const ynode *overrides,
                       char *path, size_t len, cp_err *err)
{
    if (strchr(spec, '/') || ends_with(spec, ".yaml") || ends_with(spec, ".yml")) {
        cp_resolve(path, len, base_dir, spec);
        return 0;
    }
    char rel[512];
    struct stat st;
    snprintf(rel, sizeof rel, "platforms/%s.yaml", spec);
    cp_data_path(path, len, rel);
    if (!*spec || stat(path, &st) != 0)
        return unknown_preset(spec, overrides, err);
    return 0;
}

/* ---- raw XML host names -------------------------------------------------
 * The structure has no room for host names, so the names of every raw XML
 * platform loaded by this process are kept here, by source path, for
 * plat_host_name (they live until the process ends). */

typedef struct raw_names {
    char source[1024];
    int n;
    char **names;
} raw_names;

static raw_names *raw_reg;
static int raw_nreg;

static raw_names *raw_find(const char *source)
{
    for (int i = 0; i < raw_nreg; i++)
        if (strcmp(raw_reg[i].source, source) == 0)
            return &raw_reg[i];
    return NULL;
}

static void raw_register(const platform *p, char **names)
{
    raw_names *r = raw_find(p->source);
    if (r) {
        for (int i = 0; i < r->n; i++)
            free(r->names[i]);
        free(r->names);
    } else {
        raw_reg = realloc(raw_reg, (size_t)(raw_nreg + 1) * sizeof *raw_reg);
        r = &raw_reg[raw_nreg++];
        snprintf(r->source, sizeof r->source, "%s", p->source);
    }
    r->n = plat_devices(p);
    r->names = names;
}

static void calibrated_fabric(platform *p, const platform *base)
{
    p->cal_intra = base->intra;
    p->cal_coll_latency_eager = base->coll_latency_eager;
    p->cal_coll_latency_graph = base->coll_latency_graph;
}

static int load_preset(const char *path, const ynode *overrides, platform *out, cp_err *err);

/* The preset a raw platform's missing device props come from. */
#define RAW_DEFAULTS_PRESET "h200-sxm-8"

static int load_raw(const char *path, const ynode *overrides, platform *out, cp_err *err)
{
    for (size_t i = 0; overrides && overrides->kind == YN_MAP && i < overrides->n; i++)
        if (strcmp(overrides->keys[i], "name") != 0)
            return cp_fail_at(err, overrides->key_locs[i], "platform.%s: a raw SimGrid "
                              "platform (%s) cannot be overridden; edit the XML file",
                              overrides->keys[i], path);
    char **names, dir[1024];
    platform dflt;
    memset(&dflt, 0, sizeof dflt);
    if (preset_path(RAW_DEFAULTS_PRESET, NULL, NULL, dir, sizeof dir, err) < 0 ||
        load_preset(dir, NULL, &dflt, err) < 0 || plat_xml_read(path, &dflt, out, &names, err) < 0)
        return -1;
    raw_register(out, names);
    calibrated_fabric(out, out);
    if (out->calibration[0] && !calibration_exists(out->calibration, dir, sizeof dir))
        return cp_fail(err, CP_EXIT_INPUT, "%s: host property \"calibration\": no calibration "
                       "profile \"%s\" (expected the directory %s)", path, out->calibration, dir);
    return 0;
}

/* ---- public -------------------------------------------------------------- */

static int load_preset(const char *path, const ynode *overrides, platform *out, cp_err *err)
{
    ydoc *doc = yio_parse_file(path, err);
    if (!doc)
        return -1;
    ynode *root = yio_root(doc);
    int rc = yio_want_map(root, "platform", err);
    if (rc == 0)
        rc = get_str(root, "", "name", 1, out->name, sizeof out->name, err);
    /* the preset as written: the calibrated fabric */
    platform base;
    memset(&base, 0, sizeof base);
    int have_base = rc == 0 && overrides && read_preset(root, &base, &(cp_err){0}) == 0;
    if (rc == 0 && overrides)
        rc = yio_want_map(overrides, "platform", err) < 0 ? -1
                                                          : yio_merge(doc, root, overrides, err);
    if (rc == 0)
        rc = read_preset(root, out, err);
    if (rc == 0)
        calibrated_fabric(out, have_base ? &base : out);
    yio_free(doc);
    return rc;
}

int plat_load(const char *spec, const char *base_dir, const ynode *overrides,
              platform *out, cp_err *err)
{
    char path[1024];
    memset(out, 0, sizeof *out);
    if (ends_with(spec, ".xml"))
        return load_raw(cp_resolve(path, sizeof path, base_dir, spec), overrides, out, err);
    if (preset_path(spec, base_dir, overrides, path, sizeof path, err) < 0)
        return -1;
    snprintf(out->source, sizeof out->source, "%s", path);
    return load_preset(path, overrides, out, err);
}

double plat_link_rate(const platform *p, const plat_link *l)
{
    return p->raw_xml ? l->bandwidth : l->bandwidth * l->efficiency;
}

int plat_devices(const platform *p)
{
    return p->nodes * p->devices_per_node;
}

/* Raw XML: the file's own name for device d (kept by plat_load in this
 * process); generated platforms: n<node>g<i>. */
void plat_host_name(const platform *p, int d, char *buf, size_t len)
{
    const raw_names *r = p->raw_xml ? raw_find(p->source) : NULL;
    if (r && d >= 0 && d < r->n)
        snprintf(buf, len, "%s", r->names[d]);
    else
        snprintf(buf, len, "n%dg%d", d / p->devices_per_node, d % p->devices_per_node);
}

/* ---- dump ---------------------------------------------------------------- */

/* s as a YAML double-quoted scalar. */
static void put_quoted(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

/* "key: value" with the shortest exact text of the number. */
static void put_num(FILE *out, const char *sep, const char *key, double v)
{
    char num[32];
    fprintf(out, "%s%s: %s", sep, key, plat_num(num, sizeof num, v));
}

static void dump_device(const platform *p, FILE *out)
{
    fprintf(out, "device:\n  model: ");
    put_quoted(out, p->device);
    fprintf(out, "\n  peak_flops:");
    for (int t = 0; t < DT_COUNT; t++)
        put_num(out, "\n    ", dtype_names[t], p->peak_flops[t]);
    put_num(out, "\n  ", "vector_flops", p->vector_flops);
    put_num(out, "\n  ", "hbm_bytes", p->hbm_bytes);
    put_num(out, "\n  ", "reserved_bytes", p->reserved_bytes);
    put_num(out, "\n  ", "workspace_bytes", p->workspace_bytes);
    put_num(out, "\n  ", "hbm_bandwidth", p->hbm_bw);
    fprintf(out, "\n  sm_count: %d\n  launch: {", p->sm_count);
    put_num(out, "", "eager", p->launch_eager);
    put_num(out, ", ", "graph", p->launch_graph);
    fprintf(out, "}\n  collective_latency: {");
    put_num(out, "", "eager", p->coll_latency_eager);
    put_num(out, ", ", "graph", p->coll_latency_graph);
    fprintf(out, "}\n  efficiency: {");
    put_num(out, "", "gemm", p->eff_gemm);
    put_num(out, ", ", "attention", p->eff_attention);
    put_num(out, ", ", "memory", p->eff_memory);
    fprintf(out, "}\n");
    if (p->calibration[0])
        fprintf(out, "  calibration: %s\n", p->calibration);
}

static void dump_link(FILE *out, const plat_link *l)
{
    put_num(out, ", ", "bandwidth", l->bandwidth);
    put_num(out, ", ", "latency", l->latency);
    put_num(out, ", ", "efficiency", l->efficiency);
    fprintf(out, "}\n");
}

static void dump_links(const platform *p, FILE *out)
{
    fprintf(out, "fabric: {kind: %s", fabric_kinds[p->fabric]);
    dump_link(out, &p->intra);
    if (p->package_devices > 0) {
        fprintf(out, "package: {devices: %d", p->package_devices);
        dump_link(out, &p->package);
    }
    fprintf(out, "network:");
    put_num(out, "\n  ", "nic_bandwidth", p->nic.bandwidth);
    put_num(out, "\n  ", "nic_latency", p->nic.latency);
    put_num(out, "\n  ", "spine_bandwidth", p->spine.bandwidth);
    put_num(out, "\n  ", "spine_latency", p->spine.latency);
    put_num(out, "\n  ", "efficiency", p->nic.efficiency);
    fprintf(out, "\n");
}

static json_t *link_json(const plat_link *l)
{
    return json_pack("{s:f, s:f, s:f}", "bandwidth", l->bandwidth, "latency", l->latency,
                     "efficiency", l->efficiency);
}

json_t *plat_json(const platform *p)
{
    json_t *j = json_object(), *dev = json_object(), *peaks = json_object();
    json_object_set_new(j, "name", json_string(p->name));
    json_object_set_new(j, "source", json_string(p->source));
    json_object_set_new(j, "devices", json_integer(plat_devices(p)));
    json_object_set_new(j, "nodes", json_integer(p->nodes));
    json_object_set_new(j, "devices_per_node", json_integer(p->devices_per_node));
    json_object_set_new(dev, "model", json_string(p->device));
    for (int t = 0; t < DT_COUNT; t++)
        json_object_set_new(peaks, dtype_names[t], json_real(p->peak_flops[t]));
    json_object_set_new(dev, "peak_flops", peaks);
    json_object_set_new(dev, "vector_flops", json_real(p->vector_flops));
    json_object_set_new(dev, "hbm_bytes", json_real(p->hbm_bytes));
    json_object_set_new(dev, "hbm_bandwidth", json_real(p->hbm_bw));
    json_object_set_new(dev, "reserved_bytes", json_real(p->reserved_bytes));
    json_object_set_new(dev, "workspace_bytes", json_real(p->workspace_bytes));
    json_object_set_new(dev, "sm_count", json_integer(p->sm_count));
    json_object_set_new(dev, "launch", json_pack("{s:f, s:f}", "eager", p->launch_eager,
                                                 "graph", p->launch_graph));
    json_object_set_new(dev, "collective_latency",
                        json_pack("{s:f, s:f}", "eager", p->coll_latency_eager, "graph",
                                  p->coll_latency_graph));
    json_object_set_new(dev, "efficiency",
                        json_pack("{s:f, s:f, s:f}", "gemm", p->eff_gemm, "attention",
                                  p->eff_attention, "memory", p->eff_memory));
    json_object_set_new(dev, "calibration", json_string(p->calibration));
    json_object_set_new(j, "device", dev);
    json_t *fab = link_json(&p->intra);
    json_object_set_new(fab, "kind", json_string(p->raw_xml ? "raw_xml" : fabric_kinds[p->fabric]));
    json_object_set_new(j, "fabric", fab);
    if (p->package_devices > 0) {
        json_t *pk = link_json(&p->package);
        json_object_set_new(pk, "devices", json_integer(p->package_devices));
        json_object_set_new(j, "package", pk);
    }
    json_object_set_new(j, "network",
                        json_pack("{s:f, s:f, s:f, s:f, s:f}", "nic_bandwidth", p->nic.bandwidth,
                                  "nic_latency", p->nic.latency, "spine_bandwidth",
                                  p->spine.bandwidth, "spine_latency", p->spine.latency,
                                  "efficiency", p->nic.efficiency));
    json_object_set_new(j, "collectives", json_pack("{s:f}", "allreduce_oneshot_max",
                                                    p->allreduce_oneshot_max));
    return j;
}

void plat_dump(const platform *p, FILE *out)
{
    char a[32], b[32], c[32], d[32], e[32];
    if (p->raw_xml)
        fprintf(out, "# raw SimGrid platform %s: its hosts, links and routes are used as\n"
                "# they are; slowest routes inside a node %s B/s, %s s, between nodes\n"
                "# %s B/s, %s s; link efficiency %s\n", p->source,
                plat_num(a, sizeof a, p->intra.bandwidth), plat_num(b, sizeof b, p->intra.latency),
                plat_num(c, sizeof c, p->nic.bandwidth),
                plat_num(d, sizeof d, p->nic.latency + p->spine.latency),
                plat_num(e, sizeof e, p->intra.efficiency));
    else
        fprintf(out, "# preset %s\n", p->source);
    fprintf(out, "name: ");
    put_quoted(out, p->name);
    fprintf(out, "\nnodes: %d\ndevices_per_node: %d\n", p->nodes, p->devices_per_node);
    dump_device(p, out);
    if (!p->raw_xml)
        dump_links(p, out);
    fprintf(out, "collectives: {");
    put_num(out, "", "allreduce_oneshot_max", p->allreduce_oneshot_max);
    fprintf(out, "}\n");
}
