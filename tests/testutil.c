/* testutil: helpers shared by the scenario-level check programs. */
#include "tests/testutil.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/build.h"
#include "models/cost.h"
#include "sim/driver/driver.h"

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
    cost_price_plan(cm, p, s->graph == GRAPH_CAPTURED);
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

json_t *tu_fold_identical(const char *workload, const char *const *sets, int nsets)
{
    json_t *a = NULL, *b = NULL;
    cp_err err = {0};
    drv_req rq = {.workload = workload, .sets = sets, .nsets = nsets};
    ck_assert_msg(drv_child_run(&rq, &a, &err) == 0, "%s", err.msg);
    rq.fold_layers = 1;
    ck_assert_msg(drv_child_run(&rq, &b, &err) == 0, "%s", err.msg);
    char *ta = json_dumps(a, JSON_SORT_KEYS), *tb = json_dumps(b, JSON_SORT_KEYS);
    ck_assert_msg(strcmp(ta, tb) == 0, "folded and expanded summaries differ");
    free(ta);
    free(tb);
    json_decref(b);
    return a;
}

int tu_main(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
