/* memory_report: one rank's static weights by tensor family and category
 * and the steps from the plain estimate to the materialized weights
 * (cpsim memory; models/quant.h accounts them), as text or JSON. */
#include <jansson.h>
#include <stdio.h>

#include "base/dtype.h"
#include "models/build/build.h"
#include "models/quant.h"
#include "models/seqpar/seqpar.h"
#include "reports/report.h"

static const char *scheme_name(const scenario *s)
{
    const layer_scheme *sc = seqpar_scheme(s);
    return sc ? sc->name : "tp";
}

static double gb(double bytes)
{
    return bytes / 1e9;
}


void rep_memory_text(const scenario *s, const quant_desc *d, const quant_report *r, FILE *out)
{
    fprintf(out, "%s on %s: TP%d", s->model.name, s->plat.name, s->par.tp);
    if (s->par.ep > 1)
        fprintf(out, " EP%d", s->par.ep);
    if (s->par.dp > 1)
        fprintf(out, " DP%d", s->par.dp);
    fprintf(out, ", scheme %s, weights %s, params %s\n", scheme_name(s), dtype_name(s->w_dtype),
           dtype_name(s->a_dtype));
    if (d)
        fprintf(out, "quant description %s: %d W8A8, %d W8A8_DYNAMIC, %d FLOAT linear weights\n",
               quant_desc_path(d), r->ntype[QT_W8A8], r->ntype[QT_W8A8_DYNAMIC],
               r->ntype[QT_FLOAT]);
    fprintf(out, "static weights of rank 0, GB (1e9 bytes)\n\n%-15s %9s", "family", "plain");
    for (int c = 0; c < QC_COUNT; c++)
        fprintf(out, " %11s", quant_cat_name((quant_cat)c));
    fprintf(out, " %9s\n", "total");
    double plain = 0;
    for (int f = 0; f < WF_COUNT; f++) {
        plain += r->plain[f];
        fprintf(out, "%-15s %9.3f", mem_wfamily_name((mem_wfamily)f), gb(r->plain[f]));
        for (int c = 0; c < QC_COUNT; c++)
            fprintf(out, " %11.3f", gb(r->bytes[f][c]));
        fprintf(out, " %9.3f\n", gb(r->fam_total[f]));
    }
    fprintf(out, "%-15s %9.3f", "total", gb(plain));
    for (int c = 0; c < QC_COUNT; c++)
        fprintf(out, " %11.3f", gb(r->cat_total[c]));
    fprintf(out, " %9.3f\n\nfrom the plain estimate to the materialized weights:\n", gb(r->total));
    for (int st = 0; st < QS_COUNT; st++) {
        double delta = st ? r->step_total[st] - r->step_total[st - 1] : r->step_total[st];
        fprintf(out, "  %-76s %+8.3f  = %8.3f GB\n", quant_step_name((quant_step)st), gb(delta),
               gb(r->step_total[st]));
    }
    fprintf(out, "materialized (resident on rank 0): %.3f GB; plain estimate: %.3f GB\n",
           gb(r->total), gb(r->step_total[QS_PLAIN]));
    double enc = build_encoder_weight_bytes(s);
    if (enc > 0) /* beside the text model, in the activation dtype */
        fprintf(out, "and the audio encoder (a request carries audio_s): %.3f GB, %s, heads "
                "over TP%d: %.3f GB in all\n", gb(enc), dtype_name(s->a_dtype), s->par.tp,
                gb(r->total + enc));
    if (r->shard_k > 1) {
        fprintf(out, "layer sharding over %d ranks:", r->shard_k);
        for (int p = MP_Q_A; p < MP_COUNT; p++)
            if (r->sharded & (1u << p))
                fprintf(out, " %s", mem_proj_name((mem_proj)p));
        fprintf(out, " (rank 0 keeps %d of %lld layers); window of two layers in flight: %.3f GB\n",
               r->shard_layers, (long long)s->model.layers, gb(r->window));
    }
    fprintf(out, "not resident: largest tensor transposed while loading %.3f GB\n",
           gb(r->load_transient));
}

json_t *rep_memory_json(const scenario *s, const quant_desc *d, const quant_report *r)
{
    json_t *j = json_object();
    json_object_set_new(j, "schema", json_string("cpsim.memory/1"));
    json_object_set_new(j, "model", json_string(s->model.name));
    json_object_set_new(j, "platform", json_string(s->plat.name));
    json_object_set_new(j, "scheme", json_string(scheme_name(s)));
    json_object_set_new(j, "rank", json_integer(0));
    json_object_set_new(j, "quant_description", d ? json_string(quant_desc_path(d)) : json_null());
    json_t *types = json_object();
    for (int t = 0; t < QT_COUNT; t++)
        json_object_set_new(types, quant_type_name((quant_type)t), json_integer(r->ntype[t]));
    json_object_set_new(j, "linear_weights_by_type", types);
    json_t *fams = json_object();
    for (int f = 0; f < WF_COUNT; f++) {
        json_t *o = json_object();
        json_object_set_new(o, "plain", json_real(r->plain[f]));
        for (int c = 0; c < QC_COUNT; c++)
            json_object_set_new(o, quant_cat_name((quant_cat)c), json_real(r->bytes[f][c]));
        json_object_set_new(o, "total", json_real(r->fam_total[f]));
        json_object_set_new(fams, mem_wfamily_name((mem_wfamily)f), o);
    }
    json_object_set_new(j, "families_bytes", fams);
    json_t *cats = json_object();
    for (int c = 0; c < QC_COUNT; c++)
        json_object_set_new(cats, quant_cat_name((quant_cat)c), json_real(r->cat_total[c]));
    json_object_set_new(j, "categories_bytes", cats);
    json_t *steps = json_array();
    for (int st = 0; st < QS_COUNT; st++) {
        json_t *o = json_object();
        json_object_set_new(o, "step", json_string(quant_step_name((quant_step)st)));
        json_object_set_new(o, "total_bytes", json_real(r->step_total[st]));
        json_array_append_new(steps, o);
    }
    json_object_set_new(j, "steps", steps);
    json_object_set_new(j, "plain_bytes", json_real(r->step_total[QS_PLAIN]));
    json_object_set_new(j, "materialized_bytes", json_real(r->total));
    json_t *ls = json_array();
    for (int p = MP_Q_A; p < MP_COUNT; p++)
        if (r->sharded & (1u << p))
            json_array_append_new(ls, json_string(mem_proj_name((mem_proj)p)));
    json_object_set_new(j, "layer_sharding", ls);
    json_object_set_new(j, "layer_sharding_group", json_integer(r->shard_k));
    json_object_set_new(j, "sharded_layers_on_rank", json_integer(r->shard_layers));
    json_object_set_new(j, "window_bytes", json_real(r->window));
    json_object_set_new(j, "load_transient_bytes", json_real(r->load_transient));
    /* the audio encoder's (0 without audio requests): resident_bytes is the
     * run's MC_WEIGHTS on rank 0 */
    double enc = build_encoder_weight_bytes(s);
    json_object_set_new(j, "audio_encoder_bytes", json_real(enc));
    json_object_set_new(j, "resident_bytes", json_real(r->total + enc));
    return j;
}

