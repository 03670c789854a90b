/* cli_memory: `cpsim memory WORKLOAD.yaml [--set k=v]... [--platform P]
 * [--quant FILE] [--json]`: the static weight accounting of rank 0
 * (models/quant.h) by tensor family and category, the plain TP-sharded
 * estimate, and the steps from one to the other. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/quant.h"
#include "reports/report.h"
#include "sim/cli/cli.h"
#include "sim/cli/cli_commands.h"
#include "workloads/workload.h"

/* Load the scenario and the description to account (--quant or the
 * workload's own); *own set when the caller must free *d. */
static int prepare(const cli_opts *o, scenario *s, quant_desc **d, int *own, cp_err *err)
{
    *d = NULL;
    *own = 0;
    if (wl_load(o->workload, o->sets, o->nsets, o->platform, s, err) != 0)
        return -1;
    if (!o->quant) {
        *d = s->quant;
        return 0;
    }
    cp_err in = {0};
    *d = quant_desc_load(o->quant, &in);
    if (*d && quant_desc_check(*d, &s->model, &in) != 0) {
        quant_desc_free(*d);
        *d = NULL;
    }
    if (!*d)
        return cp_fail(err, in.code, "--quant %s", in.msg);
    *own = 1;
    return 0;
}

int cli_memory_cmd(const cli_opts *o)
{
    cp_err err = {0};
    scenario s;
    quant_desc *d;
    int own;
    if (prepare(o, &s, &d, &own, &err) != 0) {
        fprintf(stderr, "cpsim: %s\n", err.msg);
        wl_free(&s);
        return err.code ? err.code : CP_EXIT_INTERNAL;
    }
    quant_report r;
    quant_account(&s, d, &r);
    int rc = CP_EXIT_OK;
    if (o->json) {
        json_t *j = rep_memory_json(&s, d, &r);
        if (json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0) {
            fprintf(stderr, "cpsim: cannot write the JSON report\n");
            rc = CP_EXIT_INTERNAL;
        }
        fputc('\n', stdout);
        json_decref(j);
    } else {
        rep_memory_text(&s, d, &r, stdout);
    }
    if (own)
        quant_desc_free(d);
    wl_free(&s);
    return rc;
}

int cli_memory(int argc, char **argv)
{
    char **v = calloc((size_t)argc + 2, sizeof *v);
    if (!v)
        abort();
    static char prog[] = "cpsim";
    v[0] = prog;
    memcpy(v + 1, argv, (size_t)argc * sizeof *v);
    int rc = cli_main(argc + 1, v);
    free(v);
    return rc;
}
