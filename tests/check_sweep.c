/* check_sweep: the sweep file, its expansion and `where` conditions, point
 * identities and scenario hashes, results lines after a kill, shards,
 * merge, and the tables, on files made here (no simulation). */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/build/build.h"
#include "models/cost.h"
#include "platforms/platform.h"
#include "reports/plot.h"
#include "reports/report.h"
#include "sim/sweep/sweep.h"
#include "tests/testutil.h"

/* ---- helpers ---------------------------------------------------------------------- */

static char tmpdir[64];

static void setup(void)
{
    tu_setup();
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cpsim-sweep-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static void write_file(const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    for (char *c = path + strlen(tmpdir) + 1; *c; c++)
        if (*c == '/') {
            *c = '\0';
            mkdir(path, 0777);
            *c = '/';
        }
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static char *slurp(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s missing", path);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static const char base_yaml[] =
    "model: qwen3-omni-30b-a3b-thinker\n"
    "platform: h100-sxm-8\n"
    "parallel: {tp: 8}\n"
    "requests:\n"
    "  - prompt_tokens: 4096\n";

static int load(const char *name, const char *text, sweep_spec *sp, cp_err *err)
{
    write_file("base.yaml", base_yaml);
    write_file(name, text);
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    return sweep_load(path, sp, err);
}

/* Expand a sweep file; fails the test on error. */
static void expand(const char *text, sweep_spec *sp, sweep_points *pts)
{
    cp_err err = {0};
    ck_assert_msg(load("s.yaml", text, sp, &err) == 0, "%s", err.msg);
    ck_assert_msg(sweep_expand(sp, pts, &err) == 0, "%s", err.msg);
}

/* The error of a sweep file that must be refused. */
static const char *refusal(const char *text)
{
    static cp_err err;
    memset(&err, 0, sizeof err);
    sweep_spec sp;
    sweep_points pts;
    if (load("bad.yaml", text, &sp, &err) == 0) {
        int rc = sweep_expand(&sp, &pts, &err);
        sweep_free(&sp);
        if (rc == 0)
            sweep_points_free(&pts);
        ck_assert_msg(rc < 0, "accepted: %s", text);
    }
    ck_assert_int_eq(err.code, CP_EXIT_INPUT);
    return err.msg;
}

/* ---- where expressions --------------------------------------------------------------- */

typedef struct kv {
    const char *key, *val;
} kv;

static int table_lookup(void *ctx, const char *key, sweep_val *out, cp_err *err)
{
    (void)err;
    for (const kv *t = ctx; t->key; t++)
        if (strcmp(t->key, key) == 0) {
            *out = sweep_expr_value_of(t->val);
            return 1;
        }
    return 0;
}

static const kv params[] = {{"parallel.tp", "4"},          {"parallel.sp", "2"},
                            {"parallel.exchange", "ring"}, {"requests.0.prompt_tokens", "65536"},
                            {NULL, NULL}};

/* 1 true, 0 false, -1 error (message in err). */
static int holds(const char *text, cp_err *err)
{
    memset(err, 0, sizeof *err);
    sweep_expr *e = sweep_expr_parse(text, (cp_loc){"f.yaml", 3, 7}, 1, err);
    if (!e)
        return -1;
    int h = 0;
    int rc = sweep_expr_eval(e, table_lookup, (void *)params, &h, err);
    sweep_expr_free(e);
    return rc < 0 ? -1 : h;
}

START_TEST(expressions_evaluate)
{
    cp_err err;
    ck_assert_int_eq(holds("parallel.tp * parallel.sp == 8", &err), 1);
    ck_assert_int_eq(holds("parallel.tp * parallel.sp == 16", &err), 0);
    ck_assert_int_eq(holds("1 + 2 * 3 == 7 && (1 + 2) * 3 == 9", &err), 1);
    ck_assert_int_eq(holds("10 - 4 - 3 == 3 && 12 / 4 / 3 == 1 && 7 % 4 == 3", &err), 1);
    ck_assert_int_eq(holds("parallel.exchange == ring", &err), 1);
    ck_assert_int_eq(holds("parallel.exchange != 'ring' || parallel.tp > 4", &err), 0);
    ck_assert_int_eq(holds("!(parallel.sp == 1) && -parallel.tp < 0", &err), 1);
    ck_assert_int_eq(holds("requests.0.prompt_tokens >= 65536 && 1e6 > 999999.5", &err), 1);
    ck_assert_int_eq(holds("parallel.exchange == \"all_gather\"", &err), 0);
    /* short circuit: the right side would divide by zero */
    ck_assert_int_eq(holds("parallel.sp == 2 || 1 / 0", &err), 1);
    ck_assert_int_eq(holds("(parallel.exchange == ring) == (parallel.sp > 1)", &err), 1);
}
END_TEST

START_TEST(expression_errors_name_the_place)
{
    cp_err err;
    ck_assert_int_eq(holds("parallel.tp * == 8", &err), -1);
    ck_assert_str_eq(err.msg, "f.yaml:3:21: where: expected a number, a key, a string or "
                              "\"(\", found \"== 8\" in \"parallel.tp * == 8\"");
    ck_assert_int_eq(holds("parallel.tp = 8", &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "f.yaml:3:19: where: expected an operator"));
    ck_assert_int_eq(holds("(parallel.tp == 8", &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "expected \")\""));
    ck_assert_int_eq(holds("1 < 2 < 3", &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "do not chain"));
    ck_assert_int_eq(holds("parallel.exchange == 'ring", &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "f.yaml:3:28: where: unterminated string"));
    ck_assert_int_eq(holds("parallel.tpp == 4", &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "f.yaml:3:7: where: unknown key parallel.tpp"));
    ck_assert_int_eq(holds("parallel.exchange * 2 == 4", &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "f.yaml:3:25: where: * needs a number, got the "
                                          "string \"ring\""));
    ck_assert_int_eq(holds("parallel.exchange == 4", &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "compares a string with a number"));
    ck_assert_int_eq(holds("parallel.exchange < ring", &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "orders numbers only"));
    ck_assert_int_eq(holds("parallel.tp % (parallel.sp - 2) == 0", &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "f.yaml:3:19: where: division by zero"));
    ck_assert_int_eq(holds("parallel.exchange", &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "is a string, not a condition"));
    ck_assert_int_eq(holds("4k == 4", &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "malformed number"));
}
END_TEST

/* Deep nesting is refused with a message, not a stack overflow; 1000
 * levels are accepted. */
START_TEST(expression_depth_is_bounded)
{
    cp_err err;
    enum { DEEP = 100000 };
    char *t = malloc(2 * DEEP + 8);
    ck_assert_ptr_nonnull(t);
    for (int depth = 0; depth < 2; depth++) {
        int n = depth ? DEEP : 999;
        memset(t, '(', (size_t)n);
        t[n] = '1';
        memset(t + n + 1, ')', (size_t)n);
        t[2 * n + 1] = '\0';
        ck_assert_int_eq(holds(t, &err), depth ? -1 : 1);
        if (depth)
            ck_assert_msg(strstr(err.msg, "nests more than 1000 levels deep"), "%s", err.msg);
    }
    memset(t, '!', DEEP);
    snprintf(t + DEEP, 8, "1");
    ck_assert_int_eq(holds(t, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "nests more than 1000 levels deep"));
    /* a chain of one operator is a deep tree too */
    char *c = t;
    for (int i = 0; i < 2000; i++)
        c += sprintf(c, "1+");
    sprintf(c, "1 > 0");
    ck_assert_int_eq(holds(t, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "nests more than 1000"));
    free(t);
}
END_TEST

/* ---- sweep files and expansion ------------------------------------------------------- */

START_TEST(grid_expands_in_order_with_where)
{
    sweep_spec sp;
    sweep_points pts;
    expand("name: demo\n"
           "base: base.yaml\n"
           "set: {engine.graph: captured}\n"
           "grid:\n"
           "  parallel.tp: [1, 2, 4, 8]\n"
           "  parallel.sp: [1, 2, 4, 8]\n"
           "  parallel.exchange: [none, ring]\n"
           "where:\n"
           "  - parallel.tp * parallel.sp == 8\n"
           "  - parallel.exchange == ring || parallel.sp == 1\n",
           &sp, &pts);
    ck_assert_str_eq(sp.name, "demo");
    ck_assert_int_eq(sp.naxes, 3);
    ck_assert_int_eq(pts.candidates, 32);
    /* shapes 1x8, 2x4, 4x2 with ring; 8x1 with none and ring */
    ck_assert_int_eq(pts.n, 5);
    static const int want[5][3] = {{0, 3, 1}, {1, 2, 1}, {2, 1, 1}, {3, 0, 0}, {3, 0, 1}};
    for (int i = 0; i < pts.n; i++) {
        ck_assert_int_eq(pts.pt[i].index, i);
        for (int a = 0; a < 3; a++)
            ck_assert_int_eq(pts.pt[i].val[a], want[i][a]);
        for (int k = 0; k < i; k++)
            ck_assert_str_ne(pts.pt[i].id, pts.pt[k].id);
    }
    int n;
    char **sets = sweep_point_sets(&sp, &pts.pt[4], &n);
    ck_assert_int_eq(n, 4);
    ck_assert_str_eq(sets[0], "engine.graph=captured");
    ck_assert_str_eq(sets[1], "parallel.tp=8");
    ck_assert_str_eq(sets[3], "parallel.exchange=ring");
    sweep_sets_free(sets, n);
    json_t *p = sweep_point_params(&sp, &pts.pt[4]);
    ck_assert_int_eq(json_integer_value(json_object_get(p, "parallel.sp")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(p, "parallel.exchange")), "ring");
    json_decref(p);
    /* the same file expands to the same ids and spec hash */
    sweep_points again;
    cp_err err = {0};
    ck_assert_int_eq(sweep_expand(&sp, &again, &err), 0);
    ck_assert_str_eq(again.pt[2].id, pts.pt[2].id);
    ck_assert(again.spec_hash == pts.spec_hash);
    sweep_points_free(&again);
    sweep_points_free(&pts);
    sweep_free(&sp);
}
END_TEST

START_TEST(values_keep_their_yaml_types)
{
    sweep_spec sp;
    sweep_points pts;
    expand("base: base.yaml\n"
           "grid:\n"
           "  parallel.layer_sharding: [[], [o_proj, q_b_proj]]\n"
           "  platform.device.hbm_bytes: [40e9, \"x y\"]\n"
           "  parallel.ring_overlap: [true]\n",
           &sp, &pts);
    ck_assert_str_eq(sp.name, "s");
    ck_assert_int_eq(pts.n, 4);
    int n;
    char **sets = sweep_point_sets(&sp, &pts.pt[3], &n);
    ck_assert_str_eq(sets[0], "parallel.layer_sharding=[o_proj, q_b_proj]");
    ck_assert_str_eq(sets[1], "platform.device.hbm_bytes=\"x y\"");
    sweep_sets_free(sets, n);
    json_t *p = sweep_point_params(&sp, &pts.pt[2]);
    ck_assert(json_is_array(json_object_get(p, "parallel.layer_sharding")));
    ck_assert_int_eq(json_array_size(json_object_get(p, "parallel.layer_sharding")), 2);
    ck_assert(json_is_real(json_object_get(p, "platform.device.hbm_bytes")));
    ck_assert(json_is_true(json_object_get(p, "parallel.ring_overlap")));
    json_decref(p);
    sweep_points_free(&pts);
    sweep_free(&sp);
}
END_TEST

START_TEST(where_reads_workload_and_resolved_keys)
{
    sweep_spec sp;
    sweep_points pts;
    /* model.heads (32) and platform.devices (8) are resolved values; tp 3
     * does not load (heads), so the base's resolved heads decide */
    expand("base: base.yaml\n"
           "grid:\n"
           "  parallel.tp: [1, 3, 4, 16]\n"
           "  parallel.layer_sharding: [[], [o_proj]]\n"
           "where:\n"
           "  - model.heads % parallel.tp == 0 && parallel.tp <= platform.devices\n"
           "  - parallel.layer_sharding == '[]' || requests.0.prompt_tokens == 4096\n"
           "  - parallel.ep == 1\n",
           &sp, &pts);
    ck_assert_int_eq(pts.n, 4);
    ck_assert_int_eq(pts.pt[0].val[0], 0);
    ck_assert_int_eq(pts.pt[3].val[0], 2);
    sweep_points_free(&pts);
    sweep_free(&sp);
}
END_TEST

/* Two keys of one comparison each keep their value (the first used to be
 * overwritten by the second's, so "!=" of two different strings failed). */
START_TEST(where_compares_two_keys)
{
    sweep_spec sp;
    sweep_points pts;
    expand("base: base.yaml\n"
           "grid:\n"
           "  parallel.exchange: [ring, all_gather]\n"
           "  parallel.kv_storage: [by_position]\n"
           "  parallel.sp: [2]\n"
           "  parallel.tp: [4]\n"
           "where:\n"
           "  - parallel.exchange != parallel.kv_storage\n"
           "  - model.name != parallel.exchange && platform.name != model.name\n"
           "  - parallel.exchange == parallel.exchange\n",
           &sp, &pts);
    ck_assert_int_eq(pts.n, 2);
    sweep_points_free(&pts);
    sweep_free(&sp);
}
END_TEST

START_TEST(bad_sweep_files_are_refused_with_their_place)
{
    ck_assert_ptr_nonnull(strstr(refusal("grid: {parallel.tp: [1]}\n"), "missing key \"base\""));
    ck_assert_ptr_nonnull(strstr(refusal("base: base.yaml\n"), "missing key \"grid\""));
    ck_assert_ptr_nonnull(strstr(refusal("base: base.yaml\ngrid:\n  parallel.tp: []\n"),
                                 "bad.yaml:3:16: grid.parallel.tp: no values"));
    ck_assert_ptr_nonnull(strstr(refusal("base: base.yaml\ngrid:\n  parallel.tp: 4\n"),
                                 "bad.yaml:3:16"));
    ck_assert_ptr_nonnull(strstr(refusal("base: base.yaml\ngird: {parallel.tp: [1]}\n"),
                                 "did you mean \"grid\""));
    ck_assert_ptr_nonnull(strstr(refusal("base: base.yaml\ngrid: {parallel.tp: [1]}\n"
                                         "options: {jobs: 0}\n"), "options.jobs"));
    ck_assert_ptr_nonnull(strstr(refusal("base: base.yaml\ngrid: {parallel.tp: [1]}\n"
                                         "where:\n  - parallel.tp >> 1\n"),
                                 "bad.yaml:4:18: where: expected a number"));
    ck_assert_ptr_nonnull(strstr(refusal("base: base.yaml\ngrid: {parallel.tp: [1]}\n"
                                         "where: [\"parallel.tp == nope.key\"]\n"),
                                 "bad.yaml:3:25: where: unknown key nope.key"));
    ck_assert_ptr_nonnull(strstr(refusal("base: nothere.yaml\ngrid: {parallel.tp: [1]}\n"
                                         "where: [parallel.zz == 1]\n"), "nothere.yaml"));
    /* a key of a point that does not load comes from the base, which must */
    write_file("tp3.yaml", "model: qwen3-omni-30b-a3b-thinker\nparallel: {tp: 3}\n");
    ck_assert_ptr_nonnull(strstr(refusal("base: tp3.yaml\ngrid: {parallel.ep: [1]}\n"
                                         "where: [model.heads > 1]\n"),
                                 "where: model.heads: the base workload does not load"));
}
END_TEST

/* Every key and value of a sweep is checked when it loads, not when a
 * point happens to evaluate it (issue 30 part 4). */
START_TEST(sweeps_are_checked_whole_at_load)
{
    /* a typo in a branch that short-circuits away */
    ck_assert_ptr_nonnull(strstr(refusal("base: base.yaml\ngrid: {parallel.tp: [4, 8]}\n"
                                         "where: [\"parallel.tp >= 1 || parallel.spp == 2\"]\n"),
                                 "bad.yaml:3:30: where: unknown key parallel.spp"));
    /* an enum value no point can have, with the closest name */
    ck_assert_ptr_nonnull(strstr(refusal("base: base.yaml\ngrid: {parallel.tp: [4, 8]}\n"
                                         "where: [\"parallel.exchange != rign\"]\n"),
                                 "\"rign\" matches no point (did you mean \"ring\"?)"));
    ck_assert_ptr_nonnull(strstr(refusal("base: base.yaml\ngrid: {parallel.tp: [4, 8]}\n"
                                         "where: [\"'bf61' == precision.weights\"]\n"),
                                 "where: precision.weights is one of bf16,"));
    /* no point passes: exit 2, not empty tables */
    ck_assert_ptr_nonnull(strstr(refusal("base: base.yaml\ngrid: {parallel.tp: [4, 8]}\n"
                                         "where: [parallel.tp > 8]\n"),
                                 "no point of the grid passes `where` (2 combinations tried)"));
    /* a value listed twice: two points with one id */
    ck_assert_ptr_nonnull(strstr(refusal("base: base.yaml\ngrid:\n  parallel.tp: [4, 8, 4]\n"),
                                 "bad.yaml:3:23: grid.parallel.tp: the value 4 is listed twice"));
    /* a key both set and varied, or a section set whole and a key of it varied */
    ck_assert_ptr_nonnull(strstr(refusal("base: base.yaml\nset: {parallel.tp: 8}\n"
                                         "grid: {parallel.tp: [4, 8]}\n"),
                                 "grid.parallel.tp: set: gives parallel.tp too"));
    ck_assert_ptr_nonnull(strstr(refusal("base: base.yaml\nset: {parallel: {tp: 2}}\n"
                                         "grid: {parallel.tp: [4, 8]}\n"),
                                 "grid.parallel.tp: set: gives parallel too"));
    ck_assert_ptr_nonnull(strstr(refusal("base: base.yaml\nset: {parallel.tpx: 2}\n"
                                         "grid: {parallel.tp: [4, 8]}\n"),
                                 "is not a workload key: --set parallel.tpx=2: unknown key"));
    ck_assert_ptr_nonnull(strstr(refusal("base: base.yaml\ngrid: {parallel.tpp: [4, 8]}\n"),
                                 "unknown key \"tpp\" in parallel (did you mean \"tp\"?)"));
    ck_assert_ptr_nonnull(strstr(refusal("base: base.yaml\n"
                                         "grid: {parallel.exchange: [ring, rign]}\n"),
                                 "bad.yaml:2:34: grid.parallel.exchange: expected one of auto,"));
    /* a set key that only shares a prefix with a grid key is fine */
    sweep_spec sp;
    sweep_points pts;
    expand("base: base.yaml\nset: {parallel.sp: 1}\n"
           "grid: {parallel.split: [striped]}\n", &sp, &pts);
    sweep_points_free(&pts);
    sweep_free(&sp);
}
END_TEST

/* parallel.all_gather_tensors at its default beside a ring changes
 * nothing and is accepted (a grid over it and the exchange); kv is refused. */
START_TEST(all_gather_tensors_default_passes_beside_a_ring)
{
    cp_err err = {0};
    scenario s;
    write_file("base.yaml", base_yaml);
    char path[256];
    snprintf(path, sizeof path, "%s/base.yaml", tmpdir);
    const char *const ok[] = {"parallel.tp=4", "parallel.sp=2", "parallel.kv_storage=by_position",
                              "parallel.exchange=ring", "parallel.all_gather_tensors=qkv"};
    ck_assert_msg(wl_load(path, ok, 5, NULL, &s, &err) == 0, "%s", err.msg);
    wl_free(&s);
    const char *const bad[] = {"parallel.tp=4", "parallel.sp=2",
                               "parallel.kv_storage=by_position", "parallel.exchange=ring",
                               "parallel.all_gather_tensors=kv"};
    ck_assert_int_eq(wl_load(path, bad, 5, NULL, &s, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "parallel.all_gather_tensors: says what the "
                                          "all_gather exchange gathers"));
}
END_TEST

/* ---- hashes ------------------------------------------------------------------------------ */

START_TEST(fnv1a_matches_its_reference_values)
{
    /* FNV-1a 64 test vectors (draft-eastlake-fnv, section 6 / the FNV
     * reference code's test suite) */
    ck_assert(sweep_fnv1a64(SWEEP_FNV_INIT, "", 0) == 0xcbf29ce484222325ULL);
    ck_assert(sweep_fnv1a64(SWEEP_FNV_INIT, "a", 1) == 0xaf63dc4c8601ec8cULL);
    ck_assert(sweep_fnv1a64(SWEEP_FNV_INIT, "foobar", 6) == 0x85944171f73967e8ULL);
    char hex[17];
    sweep_hex(0xaf63dc4c8601ec8cULL, hex);
    ck_assert_str_eq(hex, "af63dc4c8601ec8c");
}
END_TEST

static uint64_t hash_of(const char *name, const char *const *sets, int nsets)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    scenario s;
    cp_err err = {0};
    ck_assert_msg(wl_load(path, sets, nsets, NULL, &s, &err) == 0, "%s", err.msg);
    uint64_t h = 0;
    ck_assert_int_eq(sweep_scenario_hash(&s, &h, &err), 0);
    wl_free(&s);
    return h;
}

START_TEST(scenario_hash_follows_content_not_place)
{
    write_file("a/w.yaml", base_yaml);
    write_file("b/c/w.yaml", "# a comment\n" "model: qwen3-omni-30b-a3b-thinker\n"
                             "platform: {name: h100-sxm-8}\n"
                             "parallel: {tp: 8, sp: 1}\n"
                             "requests: [{prompt_tokens: 4096}]\n");
    uint64_t a = hash_of("a/w.yaml", NULL, 0), b = hash_of("b/c/w.yaml", NULL, 0);
    ck_assert(a == b);
    const char *tp4[] = {"parallel.tp=4"};
    ck_assert(hash_of("a/w.yaml", tp4, 1) != a);
    const char *bw[] = {"platform.fabric.bandwidth=100e9"};
    ck_assert(hash_of("a/w.yaml", bw, 1) != a);
    ck_assert(hash_of("a/w.yaml", NULL, 0) == a);
}
END_TEST

/* A plan's build records where it compared step tokens with min_tokens
 * (sc_split_probe); the sweep joins a point to an earlier plan of its
 * scenario less min_tokens when its min_tokens falls in (below, at].  On a
 * TP4 x SP2 ring of a 4,096-token prompt: every min_tokens inside the bounds
 * builds a plan with the first one's simulation key, the scenario hashes
 * less min_tokens agree, and a min_tokens past the prompt (copied, not
 * split) falls outside them with another key. */
static uint64_t min_tokens_key(int64_t m, uint64_t *sans_min, sc_split_probe *probe)
{
    char path[256], set[64];
    snprintf(path, sizeof path, "%s/mt/w.yaml", tmpdir);
    snprintf(set, sizeof set, "parallel.min_tokens=%lld", (long long)m);
    const char *sets[] = {set};
    scenario s;
    cp_err err = {0};
    ck_assert_msg(wl_load(path, sets, 1, NULL, &s, &err) == 0, "%s", err.msg);
    uint64_t key;
    sweep_hashes hs;
    ck_assert_int_eq(sweep_scenario_hashes(&s, &hs, &err), 0);
    *sans_min = hs.sans_min;
    sc_split_probe own = {-1, INT64_MAX};
    s.split_probe = probe ? probe : &own;
    s.fold_at_build = s.fold_layers;
    plan p;
    build_plan(&s, &p);
    s.split_probe = NULL;
    ck_assert_int_eq(sweep_sim_key(&s, &p, &key, &err), 0);
    plan_free(&p);
    wl_free(&s);
    return key;
}

START_TEST(split_probe_bounds_the_min_tokens_of_one_plan)
{
    write_file("mt/w.yaml", "model: qwen3-omni-30b-a3b-thinker\n"
                            "platform: {name: h100-sxm-8}\n"
                            "parallel: {tp: 4, sp: 2, exchange: ring, kv_storage: by_position}\n"
                            "requests: [{prompt_tokens: 4096, decode_tokens: 2}]\n");
    sc_split_probe pr = {-1, INT64_MAX};
    uint64_t base_sans, sans;
    uint64_t k0 = min_tokens_key(2048, &base_sans, &pr);
    ck_assert_msg(pr.below >= 1 && pr.below < 2048 && pr.at >= 2048 && pr.at <= 4096,
                  "probe (%lld, %lld]", (long long)pr.below, (long long)pr.at);
    static const int64_t ms[] = {0, 1, 2, 1000, 2047, 2048, 4096, 4097, 8192, 1 << 20};
    int inside = 0, outside = 0;
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
        uint64_t k = min_tokens_key(ms[i], &sans, NULL);
        ck_assert(sans == base_sans);
        if (pr.below < ms[i] && ms[i] <= pr.at) {
            ck_assert_msg(k == k0, "min_tokens %lld inside the probe: another plan",
                          (long long)ms[i]);
            inside++;
        } else {
            outside += k != k0;
        }
    }
    ck_assert_int_ge(inside, 3);
    ck_assert_int_ge(outside, 1); /* 4097 and up: the prompt runs copied */
}
END_TEST

/* The same workload with its quant description, copied into two folders,
 * hashes alike; the description with its expert weights W8A8 instead of
 * W8A8_DYNAMIC (58,368 entries; the workload's text unchanged) does not. */
START_TEST(scenario_hash_reads_the_files_it_names)
{
    static const char yaml[] = "model: glm-5.1\nplatform: ascend-a3-16\n"
                               "precision: {weights: int8, activations: bf16, kv_cache: bf16,\n"
                               "            quant_description: d.json}\n"
                               "parallel: {tp: 16, ep: 16}\nrequests: [{prompt_tokens: 4096}]\n";
    write_file("q1/w.yaml", yaml);
    write_file("q2/x/w.yaml", yaml);
    write_file("q3/w.yaml", yaml);
    char cmd[1024];
    snprintf(
        cmd, sizeof cmd,
        "sh %s/tests/quant/dsa-w8a8-description.sh > %s/q1/d.json && "
        "cp %s/q1/d.json %s/q2/x/d.json && "
        "sed 's/\\(experts\\.[0-9]*\\.[a-z_]*\\.weight\\)\": \"W8A8_DYNAMIC\"/\\1\": \"W8A8\"/'"
        " %s/q1/d.json > %s/q3/d.json",
        CP_SRCDIR, tmpdir, tmpdir, tmpdir, tmpdir, tmpdir);
    ck_assert_int_eq(system(cmd), 0);
    uint64_t a = hash_of("q1/w.yaml", NULL, 0);
    ck_assert(hash_of("q2/x/w.yaml", NULL, 0) == a);
    ck_assert(hash_of("q3/w.yaml", NULL, 0) != a);
}
END_TEST

/* A file's hash from any state is the byte-wise FNV-1a from that state; the
 * file is read once until it changes; every scenario hash after the first
 * reads no file. */
START_TEST(file_hashes_read_each_file_once)
{
    char path[256], text[4096];
    snprintf(path, sizeof path, "%s/f.bin", tmpdir);
    for (int v = 0; v < 2; v++) {
        size_t n = 0;
        for (int i = 0; i < 1000 + 777 * v; i++)
            n += (size_t)snprintf(text + n, sizeof text - n, "%c", (char)(i * 37 + v));
        FILE *f = fopen(path, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(fwrite(text, 1, n, f), n);
        fclose(f);
        long r0 = sweep_file_reads();
        uint64_t h = SWEEP_FNV_INIT;
        for (int k = 0; k < 600; k++) { /* every low byte of the state, and more */
            h = h * 6364136223846793005ULL + 1442695040888963407ULL; /* Knuth's MMIX LCG */
            ck_assert(sweep_file_hash(h, path) == sweep_fnv1a64(h, text, n));
        }
        ck_assert_int_eq(sweep_file_reads() - r0, 1); /* rewritten: read again, once */
    }
    snprintf(path, sizeof path, "%s/none", tmpdir);
    ck_assert(sweep_file_hash(7, path) == sweep_fnv1a64(7, path, strlen(path)));

    write_file("o/w.yaml", base_yaml);
    uint64_t a = hash_of("o/w.yaml", NULL, 0);
    long r1 = sweep_file_reads();
    const char *tp4[] = {"parallel.tp=4"};
    ck_assert(hash_of("o/w.yaml", tp4, 1) != a);
    ck_assert(hash_of("o/w.yaml", NULL, 0) == a);
    ck_assert_int_eq(sweep_file_reads(), r1);
}
END_TEST

/* ---- results, resume, shards, merge ----------------------------------------------------- */

static json_t *line(int index, const char *id, const char *status)
{
    return json_pack("{s:i, s:s, s:{s:i}, s:n, s:s, s:s, s:i}", "index", index, "id", id,
                     "params", "parallel.tp", index, "scenario_hash", "status", status,
                     "error", "x", "exit", 2);
}

static void append_lines(const char *name, int from, int to)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "a");
    ck_assert_ptr_nonnull(f);
    for (int i = from; i < to; i++) {
        char id[17];
        snprintf(id, sizeof id, "%016x", i);
        json_t *j = line(i, id, "failed");
        json_dumpf(j, f, JSON_COMPACT);
        fputc('\n', f);
        json_decref(j);
    }
    fclose(f);
}

START_TEST(a_torn_last_line_is_dropped_and_repaired)
{
    write_file("r/results.jsonl", "");
    append_lines("r/results.jsonl", 0, 3);
    char path[256];
    snprintf(path, sizeof path, "%s/r/results.jsonl", tmpdir);
    FILE *f = fopen(path, "a");
    fputs("{\"index\":3,\"id\":\"00", f);   /* the kill came mid-write */
    fclose(f);
    sweep_lines l = {0};
    cp_err err = {0};
    ck_assert_int_eq(sweep_read_results(path, 0, &l, &err), 0);
    ck_assert_uint_eq(l.n, 3);
    sweep_lines_free(&l);
    ck_assert_int_eq(sweep_read_results(path, 1, &l, &err), 0);
    sweep_lines_free(&l);
    struct stat st;
    stat(path, &st);
    ck_assert_int_eq(slurp("r/results.jsonl")[st.st_size - 1], '\n');
    ck_assert_ptr_null(strstr(slurp("r/results.jsonl"), "\"index\":3"));
    /* a malformed complete line is an error naming it */
    f = fopen(path, "a");
    fputs("{\"index\":\"x\"}\n", f);
    fclose(f);
    ck_assert_int_eq(sweep_read_results(path, 1, &l, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "results.jsonl:4: not a sweep result line"));
    sweep_lines_free(&l);
}
END_TEST

START_TEST(append_writes_whole_lines_and_normalize_dedupes)
{
    char path[256];
    snprintf(path, sizeof path, "%s/out.jsonl", tmpdir);
    FILE *f = fopen(path, "w");
    cp_err err = {0};
    json_t *a = line(5, "aaaaaaaaaaaaaaaa", "failed"), *b = line(1, "bbbbbbbbbbbbbbbb", "failed");
    ck_assert_int_eq(sweep_append(fileno(f), a, &err), 0);
    ck_assert_int_eq(sweep_append(fileno(f), b, &err), 0);
    ck_assert_int_eq(sweep_append(fileno(f), a, &err), 0);
    fclose(f);
    sweep_lines l = {0};
    ck_assert_int_eq(sweep_read_results(path, 0, &l, &err), 0);
    ck_assert_uint_eq(l.n, 3);
    ck_assert_int_eq(sweep_lines_normalize(&l, &err), 0);
    ck_assert_uint_eq(l.n, 2);
    ck_assert_int_eq(json_integer_value(json_object_get(l.line[0], "index")), 1);
    /* one id with two different outcomes is refused */
    json_t *c = line(5, "aaaaaaaaaaaaaaaa", "ok");
    sweep_lines_add(&l, c);
    ck_assert_int_eq(sweep_lines_normalize(&l, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "two different results"));
    sweep_lines_free(&l);
    json_decref(a);
    json_decref(b);
}
END_TEST

START_TEST(shards_partition_the_points)
{
    int i, n;
    cp_err err = {0};
    ck_assert_int_eq(sweep_parse_shard("2/5", &i, &n, &err), 0);
    ck_assert_int_eq(i, 2);
    ck_assert_int_eq(n, 5);
    ck_assert_int_eq(sweep_parse_shard("5/5", &i, &n, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "I must be in [0, 4]"));
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(sweep_parse_shard("1-4", &i, &n, &err), -1);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(sweep_parse_shard("0/0", &i, &n, &err), -1);
    for (int p = 0; p < 103; p++) {
        int owners = 0;
        for (int s = 0; s < 4; s++)
            owners += sweep_in_shard(p, s, 4);
        ck_assert_int_eq(owners, 1);
    }
    int per[4] = {0};
    for (int p = 0; p < 103; p++)
        for (int s = 0; s < 4; s++)
            per[s] += sweep_in_shard(p, s, 4);
    ck_assert_int_eq(per[0], 26);
    ck_assert_int_eq(per[3], 25);
}
END_TEST

static void shard_dir(const char *dir, const char *spec_hash, int from, int to, int step)
{
    char name[128];
    snprintf(name, sizeof name, "%s/sweep.json", dir);
    char meta[256];
    snprintf(meta, sizeof meta, "{\"schema\": \"cpsim.sweep/1\", \"points\": 10, "
             "\"spec_hash\": \"%s\"}\n", spec_hash);
    write_file(name, meta);
    snprintf(name, sizeof name, "%s/results.jsonl", dir);
    write_file(name, "");
    for (int i = from; i < to; i += step)
        append_lines(name, i, i + 1);
}

START_TEST(merge_joins_shards_in_index_order)
{
    shard_dir("s0", "h1", 0, 10, 2);
    shard_dir("s1", "h1", 1, 10, 2);
    char d0[128], d1[128], out[128];
    snprintf(d0, sizeof d0, "%s/s0", tmpdir);
    snprintf(d1, sizeof d1, "%s/s1", tmpdir);
    snprintf(out, sizeof out, "%s/m", tmpdir);
    char *dirs[] = {d1, d0, d0};   /* order and repeats do not matter */
    cp_err err = {0};
    ck_assert_msg(sweep_merge(dirs, 3, out, NULL, &err) == 0, "%s", err.msg);
    sweep_lines l = {0};
    char path[256];
    snprintf(path, sizeof path, "%s/results.jsonl", out);
    ck_assert_int_eq(sweep_read_results(path, 0, &l, &err), 0);
    ck_assert_uint_eq(l.n, 10);
    for (size_t i = 0; i < l.n; i++)
        ck_assert_int_eq(json_integer_value(json_object_get(l.line[i], "index")), (int)i);
    sweep_lines_free(&l);
    ck_assert_ptr_nonnull(strstr(slurp("m/sweep.json"), "\"shard\": \"merged\""));
    ck_assert_ptr_nonnull(strstr(slurp("m/results.csv"), "\n9,0000000000000009,9,failed,2,"));
    /* another sweep's folder is refused */
    shard_dir("other", "h2", 0, 1, 1);
    char d2[128];
    snprintf(d2, sizeof d2, "%s/other", tmpdir);
    char *bad[] = {d0, d2};
    ck_assert_int_eq(sweep_merge(bad, 2, out, NULL, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "another sweep"));
}
END_TEST

/* ---- tables ------------------------------------------------------------------------------ */

/* An ok line as the runner writes it, with the fields tables read. */
static json_t *result(int index, int tp, int sp, const char *exchange, long long min_tokens,
                      long long prompt, double ttft, int oom)
{
    char id[17];
    snprintf(id, sizeof id, "%016x", index);
    /* what the plan records for a prefill of `prompt` tokens (summary
     * requests[].split): an SP exchange that splits, min_tokens reached */
    int split = sp > 1 && strcmp(exchange, "none") != 0 && prompt >= min_tokens;
    return json_pack("{s:i, s:s, s:{s:i, s:i, s:s, s:I, s:I}, s:s, s:s, s:{s:{s:{s:i, s:i, s:s,"
                     " s:s, s:I}}, s:f, s:[{s:I, s:b}], s:f, s:f, s:f, s:b}}",
                     "index", index, "id", id, "params", "parallel.tp", tp, "parallel.sp", sp,
                     "parallel.exchange", exchange, "parallel.min_tokens", (json_int_t)min_tokens,
                     "requests.0.prompt_tokens", (json_int_t)prompt, "scenario_hash", "h", "status",
                     "ok", "summary", "scenario", "parallel", "tp", tp, "sp", sp, "exchange",
                     exchange, "kv_storage", "by_position", "min_tokens", (json_int_t)min_tokens,
                     "ttft_s", ttft, "requests", "prompt_tokens", (json_int_t)prompt, "split",
                     split, "overlap_fraction", 0.25, "peak_bytes_max", 5e10, "capacity_bytes",
                     8e10, "oom", oom);
}

/* Synthetic sweep: ring on TP4 x SP2 splits (min_tokens 0) or copies
 * (min_tokens 1M); the split step costs 1.0 + L/8192 against the copied
 * 0.5 + L/4096 (times in arbitrary seconds), so split wins from 8192 on.
 * TP8 x SP1 points never split and all_gather never wins. */
static void synthetic(sweep_lines *l)
{
    static const long long L[] = {2048, 4096, 16384, 65536};
    int k = 0;
    for (int q = 0; q < 4; q++) {
        double x = (double)L[q];
        sweep_lines_add(l, result(k++, 4, 2, "ring", 0, L[q], 1.0 + x / 8192, 0));
        sweep_lines_add(l, result(k++, 4, 2, "ring", 1 << 20, L[q], 0.5 + x / 4096, 0));
        sweep_lines_add(l, result(k++, 4, 2, "all_gather", 0, L[q], 9.0 + x, 0));
        sweep_lines_add(l, result(k++, 4, 2, "all_gather", 1 << 20, L[q], 0.5 + x / 4096, 0));
        /* TP8: fastest, but out of memory from 65536 on */
        sweep_lines_add(l, result(k++, 8, 1, "none", 0, L[q], 0.1, L[q] >= 65536));
    }
    json_t *failed = json_pack("{s:i, s:s, s:{s:i, s:i, s:s, s:I}, s:n, s:s, s:s, s:i}", "index",
                               k, "id", "ffffffffffffffff", "params", "parallel.tp", 2,
                               "parallel.sp", 4, "parallel.exchange", "ring",
                               "requests.0.prompt_tokens", (json_int_t)2048, "scenario_hash",
                               "status", "failed", "error", "not available", "exit", 2);
    sweep_lines_add(l, failed);
}

/* The tables of result lines as a folder's conclusion writes them, the
 * lines' objectives and rankings as they hold them: results.csv a row per
 * line, then the tables of their records. */
static int tables(json_t *const *lines, size_t n, const char *dir, FILE *out, cp_err *err)
{
    plot_points s;
    plot_points_init(&s);
    for (size_t i = 0; i < n; i++)
        plot_points_add(&s, lines[i], 1);
    char path[256];
    snprintf(path, sizeof path, "%s/results.csv", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    json_t *keys = rep_results_csv_keys(&s);
    rep_results_csv_header(f, keys);
    for (size_t i = 0; i < n; i++)
        rep_results_csv_row(f, keys, lines[i], &s.p[i]);
    json_decref(keys);
    fclose(f);
    int rc = rep_sweep_tables(&s, dir, out, err);
    plot_points_free(&s);
    return rc;
}

START_TEST(points_classify_split_and_copied_steps)
{
    sweep_lines l = {0};
    synthetic(&l);
    plot_points s;
    plot_points_init(&s);
    for (size_t i = 0; i < l.n; i++)
        plot_points_add(&s, l.line[i], 1);
    ck_assert_int_eq(s.p[0].split, 1);
    ck_assert_str_eq(s.p[0].label, "tp=4 sp=2 exchange=ring");
    ck_assert_str_eq(s.p[0].shape, "tp=4 sp=2");
    /* interned: one string per text */
    ck_assert_ptr_eq(s.p[0].label, s.p[5].label);
    ck_assert_int_eq(s.p[1].split, 0);
    ck_assert_int_eq(s.p[4].split, -1);
    const plot_point *p = &s.p[l.n - 1];
    ck_assert_int_eq(p->ok, 0);
    ck_assert_int_eq(p->tp, 2);
    ck_assert_int_eq(p->sp, 4);
    ck_assert_int_eq(p->prompt, 2048);
    ck_assert_str_eq(p->error, "not available");
    plot_points_free(&s);
    sweep_lines_free(&l);
}
END_TEST

START_TEST(tables_pick_the_best_fit_and_the_crossing)
{
    sweep_lines l = {0};
    synthetic(&l);
    char dir[128];
    snprintf(dir, sizeof dir, "%s", tmpdir);
    cp_err err = {0};
    FILE *out = tmpfile();
    ck_assert_msg(tables(l.line, l.n, dir, out, &err) == 0, "%s", err.msg);
    fclose(out);
    const char *best = slurp("best.csv");
    /* TP8 wins where it fits; at 65536 the best fitting one is ring split
     * (1 + 8 = 9 s against copied 16.5 s) */
    ck_assert_ptr_nonnull(strstr(best, "\n2048,4,tp=8 sp=1 exchange=none,0,0.1,"));
    ck_assert_ptr_nonnull(strstr(best, "\n65536,15,tp=4 sp=2 exchange=ring,0,9,"));
    /* (lines not ranked here: no margin) */
    ck_assert_ptr_nonnull(
        strstr(best, "\n2048,4,tp=8 sp=1 exchange=none,0,0.1,5e+10,8e+10,5,6,,,,,ttft_s,min,"
                                   "0.1\n"));
    /* ring: copied wins at 2048 (1.25 > 1.0) and 4096 (1.5 = 1.5: a tie is
     * no win), split from 16384 (3 < 4.5).  Interpolated on log L between
     * the ratios 1.0 at 4096 and 3/4.5 at 16384: 4096 itself */
    const char *split = slurp("split.csv");
    ck_assert_ptr_nonnull(strstr(split, "\nring,tp=4 sp=2,16384,4096,4,"));
    ck_assert_ptr_nonnull(strstr(split, "\nall_gather,tp=4 sp=2,-1,-1,4,"));
    const char *csv = slurp("results.csv");
    ck_assert_ptr_nonnull(strstr(csv, "index,id,parallel.tp,parallel.sp,parallel.exchange,"
                                      "parallel.min_tokens,requests.0.prompt_tokens,status,"));
    ck_assert_ptr_nonnull(strstr(csv, "\n20,ffffffffffffffff,2,4,ring,,2048,failed,2,2048,"
                                      ",,,,,,,,,,,not available\n"));
    sweep_lines_free(&l);
}
END_TEST

/* A serving point's result line: goodput g, TTFT p99 t and TPOT p99 u. */
static json_t *serving_result(int index, int tp, double g, double t, double u)
{
    json_t *j = result(index, tp, 1, "none", 0, 4096, t, 0);
    json_t *s = json_object_get(j, "summary");
    json_object_set_new(s, "mode", json_string("serving"));
    json_object_set_new(s, "serving", json_pack("{s:f, s:f, s:f, s:{s:{s:f}}}", "goodput_per_s",
                                                g, "ttft_p99_s", t, "tpot_p99_s", u, "by_name",
                                                "short", "tpot_p99_s", u));
    return j;
}

/* Serving points rank by goodput unless the sweep names another objective;
 * best.csv and the ranking follow it, pareto.csv marks the front of the
 * two chosen metrics (issue 28 part 2). */
START_TEST(objective_ranks_serving_points)
{
    sweep_lines l = {0};
    /* TP1 the most goodput; TP2 the best TTFT; TP4 the best TPOT; TP8
     * dominated by TP4 (worse TTFT and TPOT) */
    sweep_lines_add(&l, serving_result(0, 1, 3.0, 0.9, 0.030));
    sweep_lines_add(&l, serving_result(1, 2, 2.0, 0.3, 0.040));
    sweep_lines_add(&l, serving_result(2, 4, 1.0, 0.5, 0.010));
    sweep_lines_add(&l, serving_result(3, 8, 0.5, 0.6, 0.020));
    rep_sweep_objective(l.line, l.n, NULL);
    rep_sweep_rank(l.line, l.n, NULL);
    json_t *r0 = json_object_get(l.line[0], "ranking");
    ck_assert_int_eq(json_integer_value(json_object_get(r0, "place")), 1);
    ck_assert(fabs(json_number_value(json_object_get(r0, "margin")) - 0.5) < 1e-12);
    ck_assert_int_eq(json_integer_value(json_object_get(
                         json_object_get(l.line[3], "ranking"), "place")), 4);
    cp_err err = {0};
    ck_assert_msg(tables(l.line, l.n, tmpdir, NULL, &err) == 0, "%s", err.msg);
    const char *best = slurp("best.csv");
    ck_assert_ptr_nonnull(strstr(best, "\n4096,0,tp=1 sp=1 exchange=none,"));
    ck_assert_ptr_nonnull(strstr(best, ",serving.goodput_per_s,max,3\n"));
    const char *par = slurp("pareto.csv");
    ck_assert_ptr_nonnull(strstr(par, "\n4096,1,tp=2 sp=1 exchange=none,serving.ttft_p99_s,min,"
                                      "0.3,serving.tpot_p99_s,min,0.04,1\n"));
    ck_assert_ptr_nonnull(strstr(par, ",0.5,serving.tpot_p99_s,min,0.01,1\n"));
    ck_assert_ptr_nonnull(strstr(par, ",0.6,serving.tpot_p99_s,min,0.02,0\n"));
    ck_assert_ptr_nonnull(strstr(par, ",0.9,serving.tpot_p99_s,min,0.03,0\n"));
    /* a named objective: the short class's TPOT p99, lower is better */
    json_t *obj = json_pack("{s:s, s:s}", "metric", "serving.by_name.short.tpot_p99_s", "goal",
                            "min");
    rep_sweep_objective(l.line, l.n, obj);
    rep_sweep_rank(l.line, l.n, NULL);
    ck_assert_int_eq(json_integer_value(json_object_get(
                         json_object_get(l.line[2], "ranking"), "place")), 1);
    ck_assert(tables(l.line, l.n, tmpdir, NULL, &err) == 0);
    ck_assert_ptr_nonnull(strstr(slurp("best.csv"), "\n4096,2,tp=4 sp=1 exchange=none,"));
    /* a metric no summary has: nothing ranked, best.csv says none */
    json_object_set_new(obj, "metric", json_string("serving.by_name.long.tpot_p99_s"));
    rep_sweep_objective(l.line, l.n, obj);
    rep_sweep_rank(l.line, l.n, NULL);
    ck_assert_ptr_null(json_object_get(l.line[0], "ranking"));
    ck_assert(tables(l.line, l.n, tmpdir, NULL, &err) == 0);
    ck_assert_ptr_nonnull(strstr(slurp("best.csv"), "\n4096,,,,,,,4,4,"));
    json_decref(obj);
    sweep_lines_free(&l);
}
END_TEST

/* objective: and pareto: are checked at load, with their place. */
START_TEST(objective_keys_are_checked_at_load)
{
    const char *g = "base: base.yaml\ngrid: {parallel.tp: [1]}\n";
    char t[512];
    snprintf(t, sizeof t, "%sobjective: serving.goodput\n", g);
    ck_assert_ptr_nonnull(strstr(refusal(t), "bad.yaml:3:12: objective: goodput: not a serving "
                                             "figure"));
    snprintf(t, sizeof t, "%sobjective: {metric: ttft, goal: min}\n", g);
    ck_assert_ptr_nonnull(strstr(refusal(t), "objective.metric: ttft: not a summary figure"));
    snprintf(t, sizeof t, "%sobjective: {metric: ttft_s, goal: least}\n", g);
    ck_assert_ptr_nonnull(strstr(refusal(t), "objective.goal"));
    snprintf(t, sizeof t, "%spareto: [ttft_s]\n", g);
    ck_assert_ptr_nonnull(strstr(refusal(t), "pareto: give two metrics, got 1"));
    snprintf(t, sizeof t, "%spareto: [ttft_s, requests.0.nope]\n", g);
    ck_assert_ptr_nonnull(strstr(refusal(t), "pareto.1: requests.0.nope: not a request figure"));
    sweep_spec sp;
    cp_err err = {0};
    snprintf(t, sizeof t, "%sobjective: serving.by_name.short.tpot_p99_s\n"
             "pareto: [serving.by_name.long.ttft_p99_s, {metric: serving.goodput_per_s}]\n", g);
    ck_assert_msg(load("ok.yaml", t, &sp, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(json_string_value(json_object_get(sp.objective, "goal")), "min");
    json_t *p1 = json_array_get(json_object_get(sp.objective, "pareto"), 1);
    ck_assert_str_eq(json_string_value(json_object_get(p1, "goal")), "max");
    sweep_free(&sp);
}
END_TEST

/* A ranked line of the contract below: prompt L, TTFT t, its critical
 * rank's compute a s of GEMMs and b s of attention, priced by the roofline
 * (whose accuracy every profile has), on h100-sxm-8. */
static json_t *ranked_line(int index, long long L, double t, double a, double b, int oom)
{
    char id[17];
    snprintf(id, sizeof id, "%016x", index);
    return json_pack("{s:i, s:s, s:{s:i, s:I}, s:s, s:s, s:{s:{s:s, s:s, s:s, s:{s:i, s:i}}, "
                     "s:f, s:f, s:[{s:I}], s:f, s:f, s:f, s:f, s:b, s:{s:f, s:{s:{s:{s:f}}, "
                     "s:{s:{s:f}}}}}}",
                     "index", index, "id", id, "params", "parallel.tp", 8,
                     "requests.0.prompt_tokens", (json_int_t)L, "scenario_hash", "5ca1ab1e",
                     "status", "ok", "summary", "scenario", "workload", "/w/base.yaml", "model",
                     "m", "platform", "h100-sxm-8", "parallel", "tp", 8, "sp", 1, "ttft_s", t,
                     "makespan_s", t, "requests", "prompt_tokens", (json_int_t)L,
                     "compute_s_max", a + b, "overlap_fraction", 0.0, "peak_bytes_max", 1e9,
                     "capacity_bytes", 8e10, "oom", oom, "cost_sources", "compute_s",
                     8 * (a + b), "by_class", "gemm", "sources", "roofline:gemm", 8 * a,
                     "attention", "sources", "roofline:attention", 8 * b);
}

/* The tree path the last phase replaced, as the reference: every line
 * loaded, normalized, given its objective and ranking, written whole. */
static void conclude_by_trees(const char *src, const char *dir)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s/results.jsonl", tmpdir, src);
    sweep_lines l = {0};
    cp_err err = {0};
    ck_assert_int_eq(sweep_read_results(path, 0, &l, &err), 0);
    ck_assert_int_eq(sweep_lines_normalize(&l, &err), 0);
    /* the accuracies as the ranking had them (source_errors.json rounds) */
    platform plat;
    ck_assert_int_eq(plat_load("h100-sxm-8", NULL, NULL, &plat, &err), 0);
    json_t *errs = cost_source_errors(&plat, &err);
    ck_assert_ptr_nonnull(errs);
    rep_sweep_objective(l.line, l.n, NULL);
    rep_sweep_rank(l.line, l.n, errs);
    json_decref(errs);
    snprintf(path, sizeof path, "%s/%s/results.jsonl", tmpdir, dir);
    FILE *f = fopen(path, "w");
    for (size_t i = 0; i < l.n; i++) {
        json_dumpf(l.line[i], f, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        fputc('\n', f);
    }
    fclose(f);
    snprintf(path, sizeof path, "%s/%s", tmpdir, dir);
    FILE *out = fopen(strcat(path, "/out.txt"), "w");
    path[strlen(path) - strlen("/out.txt")] = '\0';
    ck_assert_int_eq(tables(l.line, l.n, path, out, &err), 0);
    fclose(out);
    sweep_lines_free(&l);
}

/* The last phase keeps a record per point and rewrites results.jsonl a
 * line at a time, read back by offset (issue 31 part 4): its files are
 * those of the tree path, byte for byte, on a sweep with a tie, an OOM
 * point, a failed and a refused point, lines out of order, a repeated line
 * and lines that hold an earlier conclusion's objective and ranking. */
START_TEST(line_by_line_conclusion_equals_the_tree_path)
{
    json_t *l[9];
    /* 1,024 tokens: 0 the fastest, 1 within its kernels' accuracy of it (a
     * tie), 2 20 % slower, 3 out of memory */
    l[0] = ranked_line(0, 1024, 1.00, 0.5, 0.3, 0);
    l[1] = ranked_line(1, 1024, 1.01, 0.3, 0.6, 0);
    l[2] = ranked_line(2, 1024, 1.20, 0.5, 0.3, 0);
    l[3] = ranked_line(3, 1024, 0.90, 0.5, 0.3, 1);
    l[4] = json_pack("{s:i, s:s, s:{s:i, s:I}, s:s, s:s, s:s, s:i}", "index", 4, "id",
                     "0000000000000004", "params", "parallel.tp", 8, "requests.0.prompt_tokens",
                     (json_int_t)2048, "scenario_hash", "5ca1ab1e", "status", "failed", "error",
                     "the simulation failed", "exit", 1);
    l[5] = json_pack("{s:i, s:s, s:{s:i, s:I}, s:n, s:s, s:s, s:i}", "index", 5, "id",
                     "0000000000000005", "params", "parallel.tp", 8, "requests.0.prompt_tokens",
                     (json_int_t)2048, "scenario_hash", "status", "failed", "error",
                     "does not load: parallel.tp", "exit", 2);
    /* 2,048 tokens: 6 holds a stale conclusion, 7 alone with it */
    l[6] = ranked_line(6, 2048, 2.00, 1.0, 0.5, 0);
    json_object_set_new(l[6], "objective", json_pack("{s:s}", "metric", "stale"));
    json_object_set_new(l[6], "ranking", json_pack("{s:i}", "place", 9));
    l[7] = ranked_line(7, 2048, 2.50, 1.0, 1.0, 0);
    l[8] = json_incref(l[0]);                   /* a point recorded twice */
    write_file("a/sweep.json", "{\"schema\": \"cpsim.sweep/1\", \"points\": 8, "
               "\"spec_hash\": \"h\"}\n");
    char path[256];
    snprintf(path, sizeof path, "%s/a/results.jsonl", tmpdir);
    FILE *f = fopen(path, "w");
    cp_err err = {0};
    static const int order[] = {3, 0, 6, 5, 1, 7, 2, 4, 8};
    for (int i = 0; i < 9; i++)
        ck_assert_int_eq(sweep_append(fileno(f), l[order[i]], &err), 0);
    fclose(f);
    sweep_recs r;
    char dir[128];
    snprintf(dir, sizeof dir, "%s/a", tmpdir);
    ck_assert_msg(sweep_recs_load_dir(dir, 0, &r, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(r.pts.n, 8);
    snprintf(path, sizeof path, "%s/a/out.txt", tmpdir);
    FILE *out = fopen(path, "w");
    ck_assert_msg(sweep_recs_conclude(&r, dir, out, &err) == 0, "%s", err.msg);
    fclose(out);
    /* the tie and the refused point are there to compare */
    ck_assert_int_eq(r.pts.p[1].tie, 1);
    ck_assert_int_eq(r.pts.p[0].tie, 1);
    ck_assert_int_eq(r.pts.p[2].tie, 0);
    ck_assert_int_eq(r.pts.p[3].ranked, 0);
    sweep_recs_free(&r);
    write_file("b/.keep", "");
    conclude_by_trees("a", "b");
    static const char *const files[] = {"results.jsonl", "results.csv", "best.csv",
                                        "pareto.csv", "split.csv", "out.txt"};
    for (int k = 0; k < 6; k++) {
        char a[256], b[256];
        snprintf(a, sizeof a, "a/%s", files[k]);
        snprintf(b, sizeof b, "b/%s", files[k]);
        char *ta = strdup(slurp(a));
        const char *tb = slurp(b);
        size_t at = 0;
        while (ta[at] && ta[at] == tb[at])
            at++;
        ck_assert_msg(ta[at] == tb[at], "%s differs at byte %zu: %.60s | %.60s", files[k], at,
                      ta + at, tb + at);
        free(ta);
    }
    ck_assert_ptr_nonnull(strstr(slurp("a/results.jsonl"), "\"tie\":true"));
    ck_assert_ptr_null(strstr(slurp("a/results.jsonl"), "stale"));
    /* a second conclusion of the folder changes nothing */
    char *once = strdup(slurp("a/results.jsonl"));
    ck_assert_int_eq(sweep_recs_load_dir(dir, 0, &r, &err), 0);
    ck_assert_int_eq(sweep_recs_conclude(&r, dir, NULL, &err), 0);
    sweep_recs_free(&r);
    ck_assert_str_eq(once, slurp("a/results.jsonl"));
    free(once);
    for (int i = 0; i < 9; i++)
        json_decref(l[i]);
}
END_TEST

START_TEST(crossing_interpolates_between_lengths)
{
    /* split/copied ratios 2 at 1024 and 0.5 at 4096: log-linear crossing at
     * sqrt(1024 * 4096) = 2048 */
    sweep_lines l = {0};
    sweep_lines_add(&l, result(0, 2, 4, "ring", 0, 1024, 2.0, 0));
    sweep_lines_add(&l, result(1, 2, 4, "ring", 1 << 20, 1024, 1.0, 0));
    sweep_lines_add(&l, result(2, 2, 4, "ring", 0, 4096, 1.0, 0));
    sweep_lines_add(&l, result(3, 2, 4, "ring", 1 << 20, 4096, 2.0, 0));
    cp_err err = {0};
    ck_assert_int_eq(tables(l.line, l.n, tmpdir, NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(slurp("split.csv"), "\nring,tp=2 sp=4,4096,2048,2,"));
    sweep_lines_free(&l);
    /* split wins everywhere: the shortest length compared */
    sweep_lines_add(&l, result(0, 2, 4, "ring", 0, 1024, 0.5, 0));
    sweep_lines_add(&l, result(1, 2, 4, "none", 0, 1024, 1.0, 0));
    ck_assert_int_eq(tables(l.line, l.n, tmpdir, NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(slurp("split.csv"),
                                 "\nring,tp=2 sp=4,1024,1024,1,split wins at every length"));
    sweep_lines_free(&l);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("sweep");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    /* the quant-description hash reads 58,368 tensor entries: seconds under
     * ASan (make check-asan), above check's default 4 s */
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, expressions_evaluate);
    tcase_add_test(tc, expression_errors_name_the_place);
    tcase_add_test(tc, expression_depth_is_bounded);
    tcase_add_test(tc, grid_expands_in_order_with_where);
    tcase_add_test(tc, values_keep_their_yaml_types);
    tcase_add_test(tc, where_reads_workload_and_resolved_keys);
    tcase_add_test(tc, where_compares_two_keys);
    tcase_add_test(tc, bad_sweep_files_are_refused_with_their_place);
    tcase_add_test(tc, sweeps_are_checked_whole_at_load);
    tcase_add_test(tc, all_gather_tensors_default_passes_beside_a_ring);
    tcase_add_test(tc, fnv1a_matches_its_reference_values);
    tcase_add_test(tc, scenario_hash_follows_content_not_place);
    tcase_add_test(tc, scenario_hash_reads_the_files_it_names);
    tcase_add_test(tc, file_hashes_read_each_file_once);
    tcase_add_test(tc, a_torn_last_line_is_dropped_and_repaired);
    tcase_add_test(tc, append_writes_whole_lines_and_normalize_dedupes);
    tcase_add_test(tc, shards_partition_the_points);
    tcase_add_test(tc, merge_joins_shards_in_index_order);
    tcase_add_test(tc, points_classify_split_and_copied_steps);
    tcase_add_test(tc, tables_pick_the_best_fit_and_the_crossing);
    tcase_add_test(tc, crossing_interpolates_between_lengths);
    tcase_add_test(tc, line_by_line_conclusion_equals_the_tree_path);
    tcase_add_test(tc, objective_ranks_serving_points);
    tcase_add_test(tc, objective_keys_are_checked_at_load);
    tcase_add_test(tc, split_probe_bounds_the_min_tokens_of_one_plan);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
