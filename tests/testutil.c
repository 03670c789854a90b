/* testutil: helpers shared by the scenario-level check programs. */
#include "tests/testutil.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/build.h"
#include "models/cost.h"

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
    int rc = build_plan(s, p, &err);
    ck_assert_msg(rc == 0, "build failed: %s", err.msg);
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
