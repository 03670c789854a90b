/* workload_view: the resolved scenario as JSON (cpsim validate, the
 * summary's scenario), as YAML, and the files it read (see workload.h). */
#include "workloads/workload_int.h"

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "base/datadir.h"
#include "models/encoder/encoder.h"
#include "platforms/platform_xml.h"

static json_t *model_json(const arch *m)
{
    json_t *j = json_object();
    json_object_set_new(j, "name", json_string(m->name));
    json_object_set_new(j, "config", json_string(m->path));
    json_object_set_new(j, "hidden", json_integer(m->hidden));
    json_object_set_new(j, "layers", json_integer(m->layers));
    json_object_set_new(j, "attention", json_string(m->attn == ATTN_MLA ? "mla" : "gqa"));
    json_object_set_new(j, "heads", json_integer(m->heads));
    json_object_set_new(j, "kv_heads", json_integer(m->kv_heads));
    json_object_set_new(j, "head_dim", json_integer(m->head_dim));
    json_object_set_new(j, "qk_norm", json_boolean(m->qk_norm));
    json_object_set_new(j, "moe", json_boolean(m->has_moe));
    if (m->has_moe) {
        json_object_set_new(j, "experts", json_integer(m->experts));
        json_object_set_new(j, "top_k", json_integer(m->top_k));
        json_object_set_new(j, "moe_intermediate", json_integer(m->moe_intermediate));
        json_object_set_new(j, "router", json_string(m->router_sigmoid ? "sigmoid" : "softmax"));
    }
    json_object_set_new(j, "mla", json_boolean(m->attn == ATTN_MLA));
    json_object_set_new(j, "dsa", json_boolean(m->has_dsa));
    if (m->sliding_window > 0) {
        json_object_set_new(j, "sliding_window", json_integer(m->sliding_window));
        json_object_set_new(j, "window_layers", json_integer(m->window_layers));
    }
    json_object_set_new(j, "max_position", json_integer(m->max_position));
    return j;
}

static json_t *section_json(const scenario *s, const wl_section *sec)
{
    json_t *j = json_object();
    for (size_t i = 0; i < sec->n; i++) {
        const wl_field *f = &sec->fields[i];
        long long v = wl_field_get(s, f);
        if (f->type == F_DOUBLE)
            json_object_set_new(j, f->key, json_real(wl_field_getd(s, f)));
        else if (f->type == F_ENUM)
            json_object_set_new(j, f->key, json_string(wl_field_name(f, v)));
        else if (f->type == F_BOOL)
            json_object_set_new(j, f->key, json_boolean(v));
        else
            json_object_set_new(j, f->key, json_integer(v));
    }
    if (strcmp(sec->key, "parallel") == 0) {
        json_t *a = json_array();
        for (int i = 0; i < s->par.n_layer_sharding; i++)
            json_array_append_new(a, json_string(s->par.layer_sharding[i]));
        json_object_set_new(j, "layer_sharding", a);
    }
    if (strcmp(sec->key, "engine") == 0) {
        json_t *m = json_object();
        json_object_set_new(m, "reserved_bytes", json_real(s->mem.reserved_bytes));
        json_object_set_new(m, "workspace_bytes", json_real(s->mem.workspace_bytes));
        json_object_set_new(m, "kv_pool", json_string(wl_kv_pool_names[s->mem.kv_pool]));
        if (s->mem.kv_pool == KVP_PREALLOCATE)
            json_object_set_new(m, "gpu_memory_utilization",
                                json_real(s->mem.gpu_memory_utilization));
        json_object_set_new(j, "memory", m);
    }
    if (strcmp(sec->key, "simulation") == 0) {
        json_object_set_new(j, "decode_reuse", json_real(s->decode_reuse));
        json_object_set_new(j, "replay_tolerance_s", json_real(s->replay_tol_s));
    }
    return j;
}

json_t *wl_resolved(const scenario *s)
{
    json_t *j = json_object();
    json_object_set_new(j, "workload", json_string(s->path));
    json_object_set_new(j, "model", model_json(&s->model));
    json_object_set_new(j, "platform", plat_json(&s->plat));
    json_t *pr = json_object();
    json_object_set_new(pr, "weights", json_string(wl_weights_name(s)));
    /* only where it differs: the same scenario as one that does not write it
     * (and the same sweep hash) */
    if (s->mlp_dtype != s->w_dtype || s->mlp_qscale != s->w_qscale)
        json_object_set_new(pr, "mlp_weights", json_string(wl_mlp_weights_name(s)));
    json_object_set_new(pr, "activations", json_string(dtype_name(s->a_dtype)));
    json_object_set_new(pr, "kv_cache", json_string(dtype_name(s->kv_dtype)));
    if (s->w_dtype == DT_FP8 || s->w_dtype == DT_INT8 || s->mlp_dtype == DT_FP8 ||
        s->mlp_dtype == DT_INT8)
        json_object_set_new(pr, "activation_quant", json_string(wl_act_quant_names[s->act_quant]));
    if (s->quant)
        json_object_set_new(pr, "quant_description", json_string(s->quant_path));
    json_object_set_new(j, "precision", pr);
    for (size_t i = 0; i < wl_nsections; i++)
        json_object_set_new(j, wl_sections[i].key, section_json(s, &wl_sections[i]));
    json_t *ks = json_object();
    json_object_set_new(ks, "name", json_string(s->kernels.name));
    for (int k = 0; k < KS_COUNT; k++)
        json_object_set_new(ks, ks_slot_key((ks_slot)k),
                            json_string(plan_impl_name((plan_impl)s->kernels.impl[k])));
    json_object_set_new(ks, "varlen", json_boolean(s->kernels.varlen));
    json_object_set_new(ks, "eager_locals", json_boolean(s->kernels.eager_locals));
    json_object_set_new(json_object_get(j, "engine"), "kernels", ks);
    json_t *rq = json_array();
    for (int i = 0; i < s->nreqs; i++) {
        const wl_request *r = &s->reqs[i];
        json_t *o = json_pack("{s:I, s:f, s:I, s:I}", "prompt_tokens",
                              (json_int_t)r->prompt_tokens, "arrival_s", r->arrival_s,
                              "decode_tokens", (json_int_t)r->decode_tokens, "cached_tokens",
                              (json_int_t)r->cached_tokens);
        if (r->audio_frames > 0)
            json_object_set_new(o, "audio_s", json_real((double)r->audio_frames /
                                                        ENC_FRAMES_PER_S));
        if (r->cls >= 0)
            json_object_set_new(o, "name", json_string(s->classes[r->cls]));
        json_array_append_new(rq, o);
    }
    json_object_set_new(j, "requests", rq);
    json_t *st = json_array();
    for (int i = 0; i < s->nstreams; i++) {
        const wl_streams *c = &s->streams[i];
        json_t *o = json_pack("{s:i, s:I, s:I, s:I, s:f, s:f, s:I}", "streams", c->streams,
                              "prompt_tokens", (json_int_t)c->prompt_tokens, "decode_tokens",
                              (json_int_t)c->decode_tokens, "cached_tokens",
                              (json_int_t)c->cached_tokens, "start_s", c->start_s, "think_s",
                              c->think_s, "count", (json_int_t)c->count);
        if (c->audio_frames > 0)
            json_object_set_new(o, "audio_s", json_real((double)c->audio_frames /
                                                        ENC_FRAMES_PER_S));
        if (c->cls >= 0)
            json_object_set_new(o, "name", json_string(s->classes[c->cls]));
        json_array_append_new(st, o);
    }
    json_object_set_new(j, "streams", st);
    json_object_set_new(j, "serving", json_boolean(s->serving));
    return j;
}

int wl_files(const scenario *s, char (*paths)[1024], int cap)
{
    int n = 0;
    if (n < cap)
        snprintf(paths[n++], sizeof paths[0], "%s", s->model.path);
    if (n < cap)
        snprintf(paths[n++], sizeof paths[0], "%s", s->plat.source);
    if (s->quant && n < cap)
        snprintf(paths[n++], sizeof paths[0], "%s", s->quant_path);
    if (s->kernels.path[0] && n < cap)
        snprintf(paths[n++], sizeof paths[0], "%s", s->kernels.path);
    /* the trace files of requests: (entries with a trace key) */
    const ynode *rq = yio_key(yio_root(s->doc), "requests");
    for (size_t i = 0; rq && rq->kind == YN_SEQ && i < rq->n; i++) {
        const ynode *t = yio_key(rq->kids[i], "trace");
        if (t && t->kind == YN_SCALAR && n < cap)
            wl_trace_path(paths[n++], sizeof paths[0], s, t->str);
    }
    if (!s->plat.calibration[0])
        return n;
    /* the profile's tables (its .csv and .json files, in name order) */
    char dir[1024];
    cp_calib_dir(dir, sizeof dir, s->plat.calibration);
    struct dirent **names = NULL;
    int k = scandir(dir, &names, NULL, alphasort);
    for (int i = 0; i < k; i++) {
        const char *dot = strrchr(names[i]->d_name, '.');
        int table = dot && (strcmp(dot, ".csv") == 0 || strcmp(dot, ".json") == 0);
        if (table && names[i]->d_name[0] != '.' && n < cap) {
            int w = snprintf(paths[n], sizeof paths[0], "%s/%s", dir, names[i]->d_name);
            if (w > 0 && (size_t)w < sizeof paths[0])
                n++; /* a longer path than a buffer holds is not hashed */
        }
        free(names[i]);
    }
    free(names);
    return n;
}

/* A scalar as YAML, no newline: strings double-quoted as JSON writes them
 * (a JSON string is a YAML double-quoted scalar), numbers in their
 * shortest exact text. */
static void put_scalar(const json_t *v, FILE *out)
{
    char num[32];
    if (json_is_string(v)) {
        json_dumpf(v, out, JSON_ENCODE_ANY);
    } else if (json_is_integer(v)) {
        fprintf(out, "%lld", (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        fputs(plat_num(num, sizeof num, json_real_value(v)), out);
    } else if (json_is_boolean(v)) {
        fputs(json_is_true(v) ? "true" : "false", out);
    } else {
        fputs("null", out);
    }
}

static int flat(const json_t *v)
{
    if (!json_is_object(v) && !json_is_array(v))
        return 1;
    const char *k;
    const json_t *x;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, x)
            if (json_is_object(x) || json_is_array(x))
                return 0;
    } else {
        json_array_foreach(v, i, x)
            if (json_is_object(x) || json_is_array(x))
                return 0;
    }
    return 1;
}

/* A flat mapping or sequence on one line: {a: 1, b: "x"} or ["x", "y"]. */
static void put_flow(const json_t *v, FILE *out)
{
    const char *k;
    json_t *x;
    size_t i;
    if (json_is_object(v)) {
        const char *sep = "";
        fputc('{', out);
        json_object_foreach((json_t *)v, k, x) {
            fprintf(out, "%s%s: ", sep, k);
            put_scalar(x, out);
            sep = ", ";
        }
        fputs("}\n", out);
        return;
    }
    fputc('[', out);
    json_array_foreach(v, i, x) {
        fputs(i ? ", " : "", out);
        put_scalar(x, out);
    }
    fputs("]\n", out);
}

static void put_yaml(const json_t *v, int indent, FILE *out);

/* The value after "key:" or "-": a nested block on the lines below, a flat
 * sequence (or, in a sequence, a flat mapping) in flow style, or a scalar. */
static void put_value(const json_t *x, int in_seq, int indent, FILE *out)
{
    int nested = json_is_object(x) || json_is_array(x);
    int block = nested && (!flat(x) || (!in_seq && json_is_object(x) && json_object_size(x) > 0));
    if (block) {
        fputc('\n', out);
        put_yaml(x, indent + 2, out);
        return;
    }
    fputc(' ', out);
    if (nested) {
        put_flow(x, out);
    } else {
        put_scalar(x, out);
        fputc('\n', out);
    }
}

/* v as YAML under `indent` spaces: block mappings and sequences; flow
 * style for a sequence of scalars and for a flat mapping in a sequence. */
static void put_yaml(const json_t *v, int indent, FILE *out)
{
    const char *k;
    json_t *x;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, x) {
            fprintf(out, "%*s%s:", indent, "", k);
            put_value(x, 0, indent, out);
        }
        return;
    }
    json_array_foreach(v, i, x) {
        fprintf(out, "%*s-", indent, "");
        put_value(x, 1, indent, out);
    }
}

/* The workload as written (after --set), then a `resolved:` section with
 * what the loaders made of it, every default filled in (wl_resolved). */
void wl_dump(const scenario *s, FILE *out)
{
    yio_dump(yio_root(s->doc), out, 0);
    fputs("resolved:\n", out);
    json_t *r = wl_resolved(s);
    put_yaml(r, 2, out);
    json_decref(r);
}
