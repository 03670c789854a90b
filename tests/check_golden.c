/* check_golden: the bundled workloads still give the answers they gave.
 *
 * For each workload of GOLDEN below, `cpsim run` writes summary.json,
 * trace.json and memory.csv into a temporary folder; the test reduces them
 * to a digest (tests/golden/NAME.json) and compares it with the stored one:
 *   summary  the whole summary.json except what names paths (warnings[],
 *            scenario.workload)
 *   trace    per event category (trace.c's `cat`): count and summed
 *            duration of the complete ("X") events; counter ("C") and
 *            metadata ("M") event counts; the latest end
 *   memory   memory.csv's rows, and per column its sum and maximum
 * Numbers agree within a relative 1e-9 (the outputs are byte-identical on
 * one machine, tests/determinism.sh; the tolerance lets another libm round
 * its last bits differently), strings and structure exactly.  A change that
 * moves an answer on purpose regenerates the digests (`make golden-update`,
 * which runs this program with CPSIM_GOLDEN_UPDATE=1) and says so in its
 * commit. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

typedef struct golden {
    const char *name;        /* digest file tests/golden/NAME.json */
    const char *workload;    /* under workloads/ */
    const char *sets;        /* extra --set options, keeping the outputs small */
} golden;

static const golden GOLDEN[] = {
    {"default", "default.yaml", ""},
    {"dsa-cp", "examples/dsa-cp.yaml", ""},
    {"glm5-dsa-cp", "examples/glm5-dsa-cp.yaml", ""},
    {"sp-all-gather", "examples/sp-all-gather.yaml", "--set requests.1.decode_tokens=4"},
    {"sp-ring", "examples/sp-ring.yaml",
     "--set requests.0.prompt_tokens=32768 --set requests.1.decode_tokens=4"},
    {"sp-ulysses", "examples/sp-ulysses.yaml", "--set requests.0.decode_tokens=4"},
    {"ascend-a3-pcp", "examples/ascend-a3-pcp.yaml", ""},
};

#define REL_TOL 1e-9
#define ABS_TOL 1e-12

/* ---- digests ----------------------------------------------------------------------- */

static void add_num(json_t *o, const char *key, double v)
{
    json_t *old = json_object_get(o, key);
    json_object_set_new(o, key, json_real((old ? json_number_value(old) : 0) + v));
}

static json_t *trace_digest(const char *path)
{
    json_error_t je;
    json_t *t = json_load_file(path, 0, &je);
    ck_assert_msg(t != NULL, "%s:%d: %s", path, je.line, je.text);
    json_t *d = json_object(), *cats = json_object();
    double end = 0;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(t, "traceEvents"), i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        ck_assert_ptr_nonnull(ph);
        if (strcmp(ph, "X") != 0) {
            add_num(d, strcmp(ph, "C") == 0 ? "counter_events" : "other_events", 1);
            continue;
        }
        const char *cat = json_string_value(json_object_get(e, "cat"));
        double ts = json_number_value(json_object_get(e, "ts"));
        double dur = json_number_value(json_object_get(e, "dur"));
        json_t *c = json_object_get(cats, cat ? cat : "");
        if (!c) {
            c = json_object();
            json_object_set_new(cats, cat ? cat : "", c);
        }
        add_num(c, "count", 1);
        add_num(c, "dur_us", dur);
        if (ts + dur > end)
            end = ts + dur;
    }
    json_object_set_new(d, "categories", cats);
    json_object_set_new(d, "end_us", json_real(end));
    json_decref(t);
    return d;
}

static json_t *memory_digest(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s missing", path);
    char line[4096];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    line[strcspn(line, "\n")] = '\0';
    /* the last column `ranks` (memcsv.c: a row shared by ranks a-b) is
     * digested as the rows it stands for, one per rank, so that the digest
     * is the per-rank timeline's however the file shares its rows */
    json_t *cols = json_array();
    for (char *c = strtok(line, ","); c; c = strtok(NULL, ","))
        if (strcmp(c, "ranks") != 0)
            json_array_append_new(cols, json_string(c));
    size_t nc = json_array_size(cols), rows = 0;
    double *sum = calloc(nc, sizeof *sum), *max = calloc(nc, sizeof *max);
    ck_assert(sum && max);
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        double first = 0;
        size_t nrows = 1;
        for (size_t k = 0; k < nc; k++) {
            double v = strtod(p, &p);
            if (k == 0)
                first = v;
            p += *p == ',';
        }
        char *dash = strchr(p, '-');
        if (*p && dash)
            nrows = (size_t)(strtol(dash + 1, NULL, 10) - (long)first) + 1;
        p = line;
        for (size_t k = 0; k < nc; k++) {
            double v = strtod(p, &p);
            for (size_t r = 0; r < nrows; r++) {
                double x = k == 0 ? v + (double)r : v; /* column 0: the rank */
                sum[k] += x;
                if (rows + r == 0 || x > max[k])
                    max[k] = x;
            }
            p += *p == ',';
        }
        rows += nrows;
    }
    fclose(f);
    json_t *d = json_object(), *s = json_array(), *m = json_array();
    for (size_t k = 0; k < nc; k++) {
        json_array_append_new(s, json_real(sum[k]));
        json_array_append_new(m, json_real(max[k]));
    }
    free(sum);
    free(max);
    json_object_set_new(d, "columns", cols);
    json_object_set_new(d, "rows", json_integer((json_int_t)rows));
    json_object_set_new(d, "sum", s);
    json_object_set_new(d, "max", m);
    return d;
}

/* Run the workload into a fresh folder and digest its outputs. */
static json_t *digest_of(const golden *g)
{
    const char *top = getenv("top_builddir");
    char dir[] = "/tmp/cpsim-golden-XXXXXX", cmd[2048], path[1100];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "'%s/cpsim' run '%s/workloads/%s' %s --quiet --out '%s/out'",
             top ? top : ".", CP_SRCDIR, g->workload, g->sets, dir);
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
    json_t *d = json_object();
    json_error_t je;
    snprintf(path, sizeof path, "%s/out/summary.json", dir);
    json_t *sm = json_load_file(path, 0, &je);
    ck_assert_msg(sm != NULL, "%s: %s", path, je.text);
    json_object_del(sm, "warnings");
    json_object_del(json_object_get(sm, "scenario"), "workload");
    json_object_set_new(d, "summary", sm);
    snprintf(path, sizeof path, "%s/out/trace.json", dir);
    json_object_set_new(d, "trace", trace_digest(path));
    snprintf(path, sizeof path, "%s/out/memory.csv", dir);
    json_object_set_new(d, "memory", memory_digest(path));
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    return d;
}

/* ---- comparison ------------------------------------------------------------------------ */

/* The first difference between want and got under `at`, into why; 0 when
 * they agree. */
static int differs(const json_t *want, const json_t *got, const char *at, char *why, size_t len)
{
    char sub[512];
    if (json_is_number(want) && json_is_number(got)) {
        double a = json_number_value(want), b = json_number_value(got);
        double tol = REL_TOL * fmax(fabs(a), fabs(b)) + ABS_TOL;
        if (fabs(a - b) <= tol)
            return 0;
        snprintf(why, len, "%s: %.17g, was %.17g", at, b, a);
        return 1;
    }
    if (json_typeof(want) != json_typeof(got)) {
        snprintf(why, len, "%s: the type changed", at);
        return 1;
    }
    if (json_is_object(want)) {
        const char *k;
        json_t *v;
        if (json_object_size(want) != json_object_size(got)) {
            snprintf(why, len, "%s: %zu keys, were %zu", at, json_object_size(got),
                     json_object_size(want));
            return 1;
        }
        json_object_foreach((json_t *)want, k, v) {
            json_t *w = json_object_get(got, k);
            snprintf(sub, sizeof sub, "%s.%s", at, k);
            if (!w) {
                snprintf(why, len, "%s: missing", sub);
                return 1;
            }
            if (differs(v, w, sub, why, len))
                return 1;
        }
        return 0;
    }
    if (json_is_array(want)) {
        if (json_array_size(want) != json_array_size(got)) {
            snprintf(why, len, "%s: %zu items, were %zu", at, json_array_size(got),
                     json_array_size(want));
            return 1;
        }
        for (size_t i = 0; i < json_array_size(want); i++) {
            snprintf(sub, sizeof sub, "%s[%zu]", at, i);
            if (differs(json_array_get(want, i), json_array_get(got, i), sub, why, len))
                return 1;
        }
        return 0;
    }
    if (!json_equal((json_t *)want, (json_t *)got)) {
        snprintf(why, len, "%s: changed", at);
        return 1;
    }
    return 0;
}

START_TEST(bundled_workload_answers)
{
    const golden *g = &GOLDEN[_i];
    json_t *now = digest_of(g);
    char path[1100];
    snprintf(path, sizeof path, "%s/tests/golden/%s.json", CP_SRCDIR, g->name);
    const char *update = getenv("CPSIM_GOLDEN_UPDATE");
    if (update && strcmp(update, "1") == 0) {
        ck_assert_int_eq(json_dump_file(now, path, JSON_INDENT(1) | JSON_SORT_KEYS |
                                                       JSON_REAL_PRECISION(17)),
                         0);
        json_decref(now);
        return;
    }
    json_error_t je;
    json_t *want = json_load_file(path, 0, &je);
    ck_assert_msg(want != NULL, "%s: %s (make golden-update writes it)", path, je.text);
    char why[1024] = "";
    int d = differs(want, now, g->name, why, sizeof why);
    ck_assert_msg(!d, "%s: the answer moved: %s (on purpose? make golden-update)", path, why);
    json_decref(want);
    json_decref(now);
}
END_TEST

/* The comparison catches a moved number and tolerates the last bits. */
START_TEST(comparison_has_teeth)
{
    json_t *a = json_pack("{s:f, s:[i, s], s:{s:b}}", "ttft_s", 0.5, "x", 1, "y", "z", "b", 1);
    json_t *b = json_deep_copy(a);
    char why[256];
    ck_assert(!differs(a, b, "t", why, sizeof why));
    json_object_set_new(b, "ttft_s", json_real(0.5 * (1 + 1e-12)));
    ck_assert(!differs(a, b, "t", why, sizeof why));
    json_object_set_new(b, "ttft_s", json_real(0.5 * (1 + 1e-6)));
    ck_assert(differs(a, b, "t", why, sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "t.ttft_s"));
    json_object_set_new(b, "ttft_s", json_real(0.5));
    json_array_set_new(json_object_get(b, "x"), 1, json_string("w"));
    ck_assert(differs(a, b, "t", why, sizeof why));
    json_array_append_new(json_object_get(b, "x"), json_integer(3));
    ck_assert(differs(a, b, "t", why, sizeof why));
    json_decref(a);
    json_decref(b);
}
END_TEST

static Suite *golden_suite(void)
{
    Suite *s = suite_create("golden");
    TCase *tc = tcase_create("Core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, comparison_has_teeth);
    tcase_add_loop_test(tc, bundled_workload_answers, 0, (int)(sizeof GOLDEN / sizeof *GOLDEN));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(golden_suite());
}
