/* sweep_points: the records of a sweep's result lines (see plot.h,
 * plot_point): what the ranking, the tables and the plots read of each
 * line, its strings interned once per sweep, so that a sweep's last phase
 * holds a few hundred bytes per point instead of the line's JSON tree. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "reports/plot.h"
#include "reports/report.h"

/* ---- interned strings ------------------------------------------------------------- */

/* Open addressing on FNV-1a 64 of the text; the table doubles at half
 * full.  Texts are few per sweep (strategies, shapes, sources, reasons). */
struct plot_strs {
    char **slot;
    size_t cap, n;
};

/* FNV-1a 64's offset basis and prime (the FNV reference, isthe.com/chongo) */
#define STRS_FNV_INIT 0xcbf29ce484222325ULL
#define STRS_FNV_PRIME 0x100000001b3ULL

static unsigned long long text_hash(const char *t)
{
    unsigned long long h = STRS_FNV_INIT;
    for (; *t; t++)
        h = (h ^ (unsigned char)*t) * STRS_FNV_PRIME;
    return h;
}

static char **strs_find(struct plot_strs *t, const char *text)
{
    size_t j = (size_t)text_hash(text) & (t->cap - 1);
    while (t->slot[j] && strcmp(t->slot[j], text) != 0)
        j = (j + 1) & (t->cap - 1);
    return &t->slot[j];
}

const char *plot_intern(plot_points *s, const char *text)
{
    struct plot_strs *t = s->strs;
    if (2 * (t->n + 1) > t->cap) {
        struct plot_strs g = {cp_xcalloc(t->cap ? 2 * t->cap : 64, sizeof *g.slot),
                              t->cap ? 2 * t->cap : 64, t->n};
        for (size_t i = 0; i < t->cap; i++)
            if (t->slot[i])
                *strs_find(&g, t->slot[i]) = t->slot[i];
        free(t->slot);
        *t = g;
    }
    char **at = strs_find(t, text);
    if (!*at) {
        *at = strdup(text);
        if (!*at)
            abort();
        t->n++;
    }
    return *at;
}

void plot_points_init(plot_points *s)
{
    memset(s, 0, sizeof *s);
    s->strs = cp_xcalloc(1, sizeof *s->strs);
}

void plot_points_free(plot_points *s)
{
    if (s->strs) {
        for (size_t i = 0; i < s->strs->cap; i++)
            free(s->strs->slot[i]);
        free(s->strs->slot);
        free(s->strs);
    }
    free(s->p);
    free(s->src);
    memset(s, 0, sizeof *s);
}

/* ---- a line's record -------------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* A parameter as a label shows it: strings bare, lists as [a,b] (caller
 * frees). */
static char *label_value(json_t *v)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m)
        abort();
    if (json_is_array(v)) {
        size_t i;
        json_t *item;
        fputc('[', m);
        json_array_foreach(v, i, item) {
            char *t = label_value(item);
            fprintf(m, "%s%s", i ? "," : "", t);
            free(t);
        }
        fputc(']', m);
    } else if (json_is_string(v)) {
        fputs(json_string_value(v), m);
    } else {
        char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        fputs(t ? t : "?", m);
        free(t);
    }
    fclose(m);
    return text;
}

/* The bound of a label and its parts (the width the records had when they
 * held them as arrays: what a label of the sweep's keys shows) */
#define LABEL_MAX 256
/* the bound of an exchange's name as a label part */
#define XKEY_MAX 32

/* label, shape, rest, mkey and xkey from the parameters, keys shortened to
 * their last part, and the parameters' names */
static void point_labels(plot_points *s, json_t *params, plot_point *pt)
{
    char label[LABEL_MAX] = "", shape[LABEL_MAX] = "", rest_[LABEL_MAX] = "";
    char mkey[LABEL_MAX] = "", xkey[XKEY_MAX] = "";
    size_t ol = 0, os = 0, orr = 0, om = 0;
    char *keys = NULL;
    size_t klen = 0;
    FILE *kf = open_memstream(&keys, &klen);
    if (!kf)
        abort();
    const char *k;
    json_t *v;
    json_object_foreach(params, k, v) {
        fprintf(kf, "%s\n", k);
        if (ends_with(k, "prompt_tokens") || ends_with(k, "min_tokens"))
            continue;
        const char *short_k = strrchr(k, '.') ? strrchr(k, '.') + 1 : k;
        char *text = label_value(v);
        if (ol < sizeof label)
            ol += (size_t)snprintf(label + ol, sizeof label - ol, "%s%s=%s", ol ? " " : "",
                                   short_k, text);
        int rest = ends_with(k, "exchange") || ends_with(k, "kv_storage");
        if (strcmp(k, "parallel.exchange") == 0)
            snprintf(xkey, sizeof xkey, "%s", text);
        else if (om < sizeof mkey)
            om += (size_t)snprintf(mkey + om, sizeof mkey - om, "%s%s=%s", om ? " " : "",
                                   short_k, text);
        if (!rest && os < sizeof shape)
            os += (size_t)snprintf(shape + os, sizeof shape - os, "%s%s=%s", os ? " " : "",
                                   short_k, text);
        if (rest && orr < sizeof rest_)
            orr += (size_t)snprintf(rest_ + orr, sizeof rest_ - orr, "%s%s=%s", orr ? " " : "",
                                    short_k, text);
        free(text);
    }
    fclose(kf);
    pt->keys = plot_intern(s, keys);
    free(keys);
    pt->label = plot_intern(s, ol ? label : "all");
    pt->shape = plot_intern(s, os ? shape : "all");
    pt->rest = plot_intern(s, orr ? rest_ : "all");
    pt->mkey = plot_intern(s, om ? mkey : "all");
    pt->xkey = plot_intern(s, xkey);
}

static long long param_int(json_t *params, const char *key, long long dflt)
{
    json_t *v = json_object_get(params, key);
    return json_is_number(v) ? (long long)json_number_value(v) : dflt;
}

/* A string field as the records held it: at most XKEY_MAX - 1 bytes. */
static const char *param_str(plot_points *s, json_t *obj, const char *key)
{
    char buf[XKEY_MAX];
    const char *v = json_string_value(json_object_get(obj, key));
    snprintf(buf, sizeof buf, "%s", v ? v : "");
    return plot_intern(s, buf);
}

static const char *str_or_null(plot_points *s, json_t *v)
{
    return json_is_string(v) ? plot_intern(s, json_string_value(v)) : NULL;
}

/* Compute seconds per cost source of a summary, scaled to the busiest
 * rank (the summary adds every rank's), in the order the summary names
 * them first. */
static void sources_of(plot_points *s, plot_point *pt, json_t *summary)
{
    json_t *cs = json_object_get(summary, "cost_sources");
    double total = json_number_value(json_object_get(cs, "compute_s"));
    double most = json_number_value(json_object_get(summary, "compute_s_max"));
    double scale = total > 0 ? most / total : 0;
    pt->src_first = (uint32_t)s->nsrc;
    const char *cls, *src;
    json_t *c, *t;
    json_object_foreach(json_object_get(cs, "by_class"), cls, c)
        json_object_foreach(json_object_get(c, "sources"), src, t) {
            const char *name = plot_intern(s, src);
            plot_src *e = s->src + pt->src_first, *end = s->src + s->nsrc;
            while (e < end && e->name != name)
                e++;
            if (e == end) {
                s->src = cp_grow(s->src, &s->srccap, s->nsrc + 1, sizeof *s->src);
                e = &s->src[s->nsrc++];
                *e = (plot_src){name, 0};
            }
            e->s = e->s + scale * json_number_value(t);
        }
    pt->nsrc = (uint32_t)(s->nsrc - pt->src_first);
}

/* The objective and ranking a concluded line holds. */
static void as_written(plot_points *s, json_t *line, plot_point *pt)
{
    json_t *ob = json_object_get(line, "objective"), *ov = json_object_get(ob, "value");
    const char *goal = json_string_value(json_object_get(ob, "goal"));
    pt->has_obj = ob != NULL;
    pt->obj_metric = str_or_null(s, json_object_get(ob, "metric"));
    pt->obj_goal_name = str_or_null(s, json_object_get(ob, "goal"));
    pt->obj_known = ob ? json_is_number(ov) : 1;
    pt->obj = ob ? json_number_value(ov) : pt->ttft_s;
    pt->obj_goal = goal && strcmp(goal, "max") == 0 ? REP_GOAL_MAX : REP_GOAL_MIN;
    for (int k = 0; k < 2; k++) {
        json_t *m = json_array_get(json_object_get(ob, "pareto"), (size_t)k);
        json_t *v = json_object_get(m, "value");
        const char *g = json_string_value(json_object_get(m, "goal"));
        pt->pareto_metric[k] = str_or_null(s, json_object_get(m, "metric"));
        pt->pareto_max[k] = g && strcmp(g, "max") == 0;
        pt->pareto[k] = json_is_number(v) ? json_number_value(v) : NAN;
    }
    json_t *r = json_object_get(line, "ranking");
    pt->ranked = r != NULL;
    pt->place = (int)json_integer_value(json_object_get(r, "place"));
    pt->of = (int)json_integer_value(json_object_get(r, "of"));
    pt->against = (int)json_integer_value(json_object_get(r, "against_index"));
    json_t *m = json_object_get(r, "margin"), *u = json_object_get(r, "uncertainty");
    json_t *tie = json_object_get(r, "tie");
    pt->margin_kind = !m ? 0 : json_is_number(m) ? 2 : 1;
    pt->margin = json_number_value(m);
    pt->unc = json_is_number(u) ? json_number_value(u) : NAN;
    pt->tie = json_is_boolean(tie) ? json_is_true(tie) : -1;
}

plot_point *plot_points_add(plot_points *s, json_t *line, int written)
{
    s->p = cp_grow(s->p, &s->cap, s->n + 1, sizeof *s->p);
    plot_point *pt = &s->p[s->n++];
    memset(pt, 0, sizeof *pt);
    json_t *params = json_object_get(line, "params");
    json_t *sm = json_object_get(line, "summary");
    pt->index = (int)json_integer_value(json_object_get(line, "index"));
    snprintf(pt->id, sizeof pt->id, "%s", json_string_value(json_object_get(line, "id")));
    const char *st = json_string_value(json_object_get(line, "status"));
    pt->status_ok = st && strcmp(st, "ok") == 0;
    pt->ok = pt->status_ok && json_is_object(sm);
    pt->error = str_or_null(s, json_object_get(line, "error"));
    point_labels(s, params, pt);
    pt->prompt = -1;
    pt->split = -1;
    for (int k = 0; k < 2; k++)
        pt->pareto[k] = NAN;
    const char *k;
    json_t *v;
    json_object_foreach(params, k, v)
        if (ends_with(k, "prompt_tokens") && strncmp(k, "requests.0.", 11) == 0)
            pt->prompt = (long long)json_number_value(v);
    pt->tp = (int)param_int(params, "parallel.tp", 0);
    pt->sp = (int)param_int(params, "parallel.sp", 0);
    pt->min_tokens = param_int(params, "parallel.min_tokens", -1);
    pt->exchange = param_str(s, params, "parallel.exchange");
    pt->kv_storage = param_str(s, params, "parallel.kv_storage");
    const char *mode = json_string_value(json_object_get(sm, "mode"));
    pt->serving = mode && strcmp(mode, "serving") == 0;
    s->serving |= pt->serving;
    for (int i = 0; i < s->npaths; i++)
        pt->mv[i] = sm ? rep_metric_value(sm, s->paths[i]) : NAN;
    if (!pt->ok)
        return pt;
    json_t *sc = json_object_get(sm, "scenario"), *par = json_object_get(sc, "parallel");
    pt->model = str_or_null(s, json_object_get(sc, "model"));
    pt->workload = str_or_null(s, json_object_get(sc, "workload"));
    pt->platform = str_or_null(s, json_object_get(sc, "platform"));
    pt->oom = json_is_true(json_object_get(sm, "oom"));
    pt->ttft_s = json_number_value(json_object_get(sm, "ttft_s"));
    pt->overlap = json_number_value(json_object_get(sm, "overlap_fraction"));
    pt->peak_bytes = json_number_value(json_object_get(sm, "peak_bytes_max"));
    pt->capacity_bytes = json_number_value(json_object_get(sm, "capacity_bytes"));
    json_t *rq = json_array_get(json_object_get(sm, "requests"), 0);
    if (rq)
        pt->prompt = (long long)json_integer_value(json_object_get(rq, "prompt_tokens"));
    pt->tp = (int)json_integer_value(json_object_get(par, "tp"));
    pt->sp = (int)json_integer_value(json_object_get(par, "sp"));
    pt->min_tokens = (long long)json_integer_value(json_object_get(par, "min_tokens"));
    pt->exchange = param_str(s, par, "exchange");
    pt->kv_storage = param_str(s, par, "kv_storage");
    json_t *split = json_object_get(rq, "split");
    if (pt->sp > 1 && json_is_boolean(split))
        pt->split = json_is_true(split);
    sources_of(s, pt, sm);
    if (written) {
        as_written(s, line, pt);
    } else {
        /* until rep_points_objective: TTFT, as a line without an objective */
        pt->obj_known = 1;
        pt->obj = pt->ttft_s;
    }
    return pt;
}
