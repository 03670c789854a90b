/* testutil: helpers shared by the scenario-level check programs. */
#include "tests/testutil.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/build/build.h"
#include "models/cost.h"
#include "sim/driver/driver.h"
#include "sim/engine/events.h"

#ifndef CP_SRCDIR
#define CP_SRCDIR "."
#endif

void tu_setup(void)
{
    setenv("CPSIM_DATADIR", CP_SRCDIR, 1);
}

int tu_try_load(scenario *s, const char *yaml, const char *const *sets, int nsets, cp_err *err)
{
    char path[] = "/tmp/cpsim-test-XXXXXX.yaml";
    int fd = mkstemps(path, 5);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    ck_assert_ptr_nonnull(f);
    fputs(yaml, f);
    fclose(f);
    int rc = wl_load(path, sets, nsets, NULL, s, err);
    unlink(path);
    return rc;
}

void tu_load(scenario *s, const char *yaml, const char *const *sets, int nsets)
{
    cp_err err = {0};
    int rc = tu_try_load(s, yaml, sets, nsets, &err);
    ck_assert_msg(rc == 0, "load failed: %s", err.msg);
}

void tu_plan(scenario *s, plan *p, const char *yaml, const char *const *sets, int nsets)
{
    cp_err err = {0};
    tu_load(s, yaml, sets, nsets);
    build_plan(s, p);
    cost_model *cm = cost_new(&s->plat, &err);
    ck_assert_msg(cm != NULL, "cost model: %s", err.msg);
    cost_price_plan(cm, p, s->graph != GRAPH_EAGER);
    cost_free(cm);
}

int tu_count(const plan *p, int g, const char *name, int layer)
{
    int n = 0;
    const plan_prog *pg = &p->progs[g];
    for (uint32_t i = 0; i < pg->nops; i++)
        if (strcmp(pg->ops[i].name, name) == 0 && (layer == -2 || pg->ops[i].layer == layer))
            n++;
    return n;
}

const plan_op *tu_find(const plan *p, int g, const char *name, int layer)
{
    const plan_prog *pg = &p->progs[g];
    for (uint32_t i = 0; i < pg->nops; i++)
        if (strcmp(pg->ops[i].name, name) == 0 && (layer == -2 || pg->ops[i].layer == layer))
            return &pg->ops[i];
    return NULL;
}

static json_t *child_summary(const char *workload, const char *const *sets, int nsets,
                            const char *extra)
{
    const char **all = calloc((size_t)nsets + 2, sizeof *all);
    ck_assert_ptr_nonnull(all);
    for (int i = 0; i < nsets; i++)
        all[i] = sets[i];
    if (extra)
        all[nsets++] = extra;
    json_t *j = NULL;
    cp_err err = {0};
    drv_req rq = {.workload = workload, .sets = all, .nsets = nsets};
    ck_assert_msg(drv_child_run(&rq, &j, &err) == 0, "%s", err.msg);
    free(all);
    return j;
}

/* A copy of the summary without simulation.iterations_* (caller decrefs). */
static json_t *without_iterations(const json_t *j)
{
    json_t *c = json_deep_copy(j);
    json_t *sim = json_object_get(c, "simulation");
    json_object_del(sim, "iterations_simulated");
    json_object_del(sim, "iterations_replayed");
    return c;
}

json_t *tu_fold_identical(const char *workload, const char *const *sets, int nsets)
{
    json_t *a = child_summary(workload, sets, nsets, "simulation.fold_layers=false");
    json_t *b = child_summary(workload, sets, nsets, "simulation.replay=false");
    json_t *c = child_summary(workload, sets, nsets, NULL);
    json_t *sa = without_iterations(a), *sb = without_iterations(b), *sc = without_iterations(c);
    char *ta = json_dumps(sa, JSON_SORT_KEYS), *tb = json_dumps(sb, JSON_SORT_KEYS);
    ck_assert_msg(strcmp(ta, tb) == 0, "folded and expanded summaries differ");
    free(ta);
    free(tb);
    const char *why = tu_json_close(sa, sc, 1e-9, 1e-12);
    ck_assert_msg(why == NULL, "replayed and expanded summaries differ at %s", why);
    json_decref(sa);
    json_decref(sb);
    json_decref(sc);
    json_decref(a);
    json_decref(b);
    return c;
}

static int close_at(const json_t *a, const json_t *b, double rel, double abs, char *path,
                    size_t len)
{
    size_t at = strlen(path);
    if (json_is_number(a) && json_is_number(b) && (json_is_real(a) || json_is_real(b))) {
        double x = json_number_value(a), y = json_number_value(b);
        double m = fabs(x) > fabs(y) ? fabs(x) : fabs(y);
        if (fabs(x - y) <= rel * m + abs)
            return 1;
        snprintf(path + at, len - at, ": %.17g vs %.17g", x, y);
        return 0;
    }
    if (json_typeof(a) != json_typeof(b)) {
        snprintf(path + at, len - at, ": types differ");
        return 0;
    }
    if (json_is_object(a)) {
        if (json_object_size(a) != json_object_size(b)) {
            snprintf(path + at, len - at, ": %zu keys vs %zu", json_object_size(a),
                     json_object_size(b));
            return 0;
        }
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v) {
            snprintf(path + at, len - at, ".%s", k);
            const json_t *w = json_object_get(b, k);
            if (!w) {
                snprintf(path + strlen(path), len - strlen(path), ": missing");
                return 0;
            }
            if (!close_at(v, w, rel, abs, path, len))
                return 0;
        }
        path[at] = '\0';
        return 1;
    }
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b)) {
            snprintf(path + at, len - at, ": %zu items vs %zu", json_array_size(a),
                     json_array_size(b));
            return 0;
        }
        for (size_t i = 0; i < json_array_size(a); i++) {
            snprintf(path + at, len - at, "[%zu]", i);
            if (!close_at(json_array_get(a, i), json_array_get(b, i), rel, abs, path, len))
                return 0;
        }
        path[at] = '\0';
        return 1;
    }
    if (json_equal((json_t *)a, (json_t *)b))
        return 1;
    snprintf(path + at, len - at, ": values differ");
    return 0;
}

const char *tu_json_close(const json_t *a, const json_t *b, double rel, double abs)
{
    static char path[1024];
    path[0] = '\0';
    return close_at(a, b, rel, abs, path, sizeof path) ? NULL : path;
}

int tu_main(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int tu_ev_key_cmp(const void *x, const void *y)
{
    const eng_event *a = x, *b = y;
    if (a->rank != b->rank)
        return a->rank - b->rank;
    if (a->op != b->op)
        return a->op < b->op ? -1 : 1;
    return a->layer - b->layer;
}
