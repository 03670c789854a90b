/* arch: reading a model's structure from a Hugging Face config.json and
 * counting its parameters (see arch.h).
 *
 * Values are looked up in the nested text config first (thinker_config.
 * text_config or text_config), then at the top level.  A JSON null counts as
 * absent, as transformers treats it (e.g. "q_lora_rank": null). */
#include "models/arch.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/datadir.h"

const char *const arch_bundled[] = {
    "qwen3-omni-30b-a3b-thinker", "qwen3-32b", "qwen3-30b-a3b", "llama-3.1-70b",
    "deepseek-v3", "deepseek-v3.2-exp", "glm-5", "glm-5.1", NULL,
};

/* Sanity bounds on config values, chosen here: orders of magnitude above any
 * published model (largest in models-hardware.md section 2.1: hidden 8192,
 * vocab 154880, 256 experts, FFN 28672) yet tight enough to catch garbage. */
#define MAX_HIDDEN INT64_C(1000000)     /* hidden_size */
#define MAX_HEADS INT64_C(65536)        /* attention and indexer heads */
#define MAX_DIM INT64_C(65536)          /* per-head dimensions */
#define MAX_VOCAB INT64_C(100000000)    /* vocab_size */
#define MAX_WIDTH INT64_C(10000000)     /* FFN widths and LoRA ranks */
#define MAX_EXPERTS INT64_C(65536)      /* routed or shared experts */
#define MAX_POSITION (INT64_C(1) << 40) /* max_position_embeddings, index_topk */
/* Whole-model parameter bound, chosen here: ~1300x GLM-5's 743.9 B and below
 * 2^53, so every count computed in double below is an exact integer. */
#define MAX_PARAMS 1e15

/* The JSON being read and where to report problems. */
typedef struct cfg {
    const char *path;
    const json_t *top;
    const json_t *text;    /* nested text config, NULL when none */
    const char *text_name; /* its dotted name, for messages */
    cp_err *err;
} cfg;

static cp_loc at(const cfg *c)
{
    return (cp_loc){c->path, 0, 0};
}

/* The value of `key` (nested text config first, then top level) and, in
 * qname, the dotted name it was found under; NULL when absent or null. */
static const json_t *lookup(const cfg *c, const char *key, char *qname, size_t n)
{
    const json_t *v = c->text ? json_object_get(c->text, key) : NULL;
    if (v && !json_is_null(v)) {
        snprintf(qname, n, "%s.%s", c->text_name, key);
        return v;
    }
    snprintf(qname, n, "%s", key);
    v = json_object_get(c->top, key);
    return json_is_null(v) ? NULL : v;
}

/* Compact JSON text of v for messages, cut to fit buf. */
static char *show(const json_t *v, char *buf, size_t n)
{
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    snprintf(buf, n, "%s", s ? s : "?");
    free(s);
    return buf;
}

/* Integer `key` into *out when present.  Returns 1 when read, 0 when absent
 * (*out untouched), -1 when not an integer in [lo, hi]. */
static int opt_int(const cfg *c, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    char qname[160], got[64];
    const json_t *v = lookup(c, key, qname, sizeof qname);
    if (!v)
        return 0;
    if (json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi) {
        *out = json_integer_value(v);
        return 1;
    }
    return cp_fail_at(c->err, at(c),
                      "field \"%s\" must be an integer in [%" PRId64 ", %" PRId64 "], got %s",
                      qname, lo, hi, show(v, got, sizeof got));
}

/* Like opt_int, but absence is an error; `why` (may be "") explains when the
 * field is only conditionally required.  Returns 0 or -1. */
static int req_int(const cfg *c, const char *key, int64_t lo, int64_t hi, int64_t *out,
                   const char *why)
{
    int r = opt_int(c, key, lo, hi, out);
    if (r == 0)
        return cp_fail_at(c->err, at(c), "missing required field \"%s\"%s", key, why);
    return r < 0 ? -1 : 0;
}

/* Boolean `key` (true/false, or 0/1 as in hand-written configs) into *out
 * when present; 0 or -1. */
static int opt_bool(const cfg *c, const char *key, int *out)
{
    char qname[160], got[64];
    const json_t *v = lookup(c, key, qname, sizeof qname);
    if (!v)
        return 0;
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return 0;
    }
    if (json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1)) {
        *out = (int)json_integer_value(v);
        return 0;
    }
    return cp_fail_at(c->err, at(c), "field \"%s\" must be true or false, got %s", qname,
                      show(v, got, sizeof got));
}

/* Checkpoint dtype: "torch_dtype", or "dtype" as newer transformers write it. */
static int opt_dtype(const cfg *c, arch *a)
{
    char qname[160], got[64];
    const json_t *v = lookup(c, "torch_dtype", qname, sizeof qname);
    if (!v)
        v = lookup(c, "dtype", qname, sizeof qname);
    if (!v)
        return 0;
    if (json_is_string(v) && json_string_length(v) < sizeof a->torch_dtype) {
        snprintf(a->torch_dtype, sizeof a->torch_dtype, "%s", json_string_value(v));
        return 0;
    }
    return cp_fail_at(c->err, at(c), "field \"%s\" must be a dtype name such as \"bfloat16\", got %s",
                      qname, show(v, got, sizeof got));
}

/* Follow thinker_config.text_config, else text_config, when present. */
static int pick_text(cfg *c)
{
    const json_t *thinker = json_object_get(c->top, "thinker_config");
    const json_t *t = json_is_object(thinker) ? json_object_get(thinker, "text_config") : NULL;
    c->text_name = "thinker_config.text_config";
    if (!t || json_is_null(t)) {
        t = json_object_get(c->top, "text_config");
        c->text_name = "text_config";
    }
    if (t && !json_is_null(t) && !json_is_object(t)) {
        char got[64];
        return cp_fail_at(c->err, at(c), "field \"%s\" must be an object, got %s", c->text_name,
                          show(t, got, sizeof got));
    }
    c->text = json_is_object(t) ? t : NULL;
    return 0;
}

static int parse_common(const cfg *c, arch *a)
{
    if (req_int(c, "hidden_size", 1, MAX_HIDDEN, &a->hidden, "") < 0 ||
        req_int(c, "num_hidden_layers", 1, ARCH_MAX_LAYERS, &a->layers, "") < 0 ||
        req_int(c, "vocab_size", 1, MAX_VOCAB, &a->vocab, "") < 0 ||
        opt_int(c, "max_position_embeddings", 1, MAX_POSITION, &a->max_position) < 0 ||
        opt_int(c, "num_nextn_predict_layers", 0, ARCH_MAX_LAYERS, &a->mtp_layers) < 0)
        return -1;
    /* Absent tie_word_embeddings: untied, the default of the transformers
     * config classes of every bundled family (Llama, Qwen3, DeepseekV3). */
    if (opt_bool(c, "tie_word_embeddings", &a->tie_embeddings) < 0)
        return -1;
    return opt_dtype(c, a);
}

/* Grouped-query (or multi-head) attention: kv heads default to the query
 * heads, head_dim to hidden / heads. */
static int parse_gqa(const cfg *c, arch *a)
{
    a->attn = ATTN_GQA;
    a->kv_heads = a->heads;
    if (opt_int(c, "num_key_value_heads", 1, a->heads, &a->kv_heads) < 0)
        return -1;
    if (a->heads % a->kv_heads != 0)
        return cp_fail_at(c->err, at(c),
                          "field \"num_key_value_heads\" (%" PRId64 ") must divide "
                          "num_attention_heads (%" PRId64 ")", a->kv_heads, a->heads);
    int r = opt_int(c, "head_dim", 1, MAX_DIM, &a->head_dim);
    if (r != 0)
        return r < 0 ? -1 : 0;
    if (a->hidden % a->heads != 0)
        return cp_fail_at(c->err, at(c),
                          "missing field \"head_dim\", and hidden_size (%" PRId64 ") is not a "
                          "multiple of num_attention_heads (%" PRId64 ")", a->hidden, a->heads);
    a->head_dim = a->hidden / a->heads;
    return 0;
}

/* Multi-head latent attention.  Every head has its own k/v after kv_b, so
 * kv_heads = heads; head_dim is the q/k width qk_nope + qk_rope (GLM-5's
 * config also carries an unrelated "head_dim": 64, ignored here). */
static int parse_mla(const cfg *c, arch *a)
{
    const char *why = " (required when kv_lora_rank > 0)";
    a->attn = ATTN_MLA;
    a->kv_heads = a->heads;
    if (opt_int(c, "q_lora_rank", 0, MAX_WIDTH, &a->q_lora_rank) < 0 ||
        req_int(c, "qk_nope_head_dim", 1, MAX_DIM, &a->qk_nope_dim, why) < 0 ||
        req_int(c, "qk_rope_head_dim", 1, MAX_DIM, &a->qk_rope_dim, why) < 0 ||
        req_int(c, "v_head_dim", 1, MAX_DIM, &a->v_head_dim, why) < 0)
        return -1;
    a->head_dim = a->qk_nope_dim + a->qk_rope_dim;
    return 0;
}

/* DeepSeek sparse attention: a lightning indexer on top of MLA whose query
 * is projected from the q latent (wq_b), hence q_lora_rank > 0. */
static int parse_dsa(const cfg *c, arch *a)
{
    const char *why = " (required when index_topk > 0)";
    if (opt_int(c, "index_topk", 0, MAX_POSITION, &a->index_topk) < 0)
        return -1;
    if (a->index_topk == 0)
        return 0;
    if (a->attn != ATTN_MLA)
        return cp_fail_at(c->err, at(c),
                          "field \"index_topk\" needs MLA attention: \"kv_lora_rank\" must be > 0");
    if (a->q_lora_rank == 0)
        return cp_fail_at(c->err, at(c),
                          "field \"index_topk\" needs a query latent: \"q_lora_rank\" must be > 0");
    if (req_int(c, "index_n_heads", 1, MAX_HEADS, &a->index_heads, why) < 0 ||
        req_int(c, "index_head_dim", 1, MAX_DIM, &a->index_head_dim, why) < 0)
        return -1;
    a->has_dsa = 1;
    return 0;
}

/* qk_norm is use_qk_norm when given, else 0: the kind of model is never
 * guessed, so Qwen3 configs that omit the field (qwen3-32b.json) count no
 * q/k-norm weights (2 * head_dim elements per layer, < 0.001 % of the model). */
static int parse_attention(const cfg *c, arch *a)
{
    if (req_int(c, "num_attention_heads", 1, MAX_HEADS, &a->heads, "") < 0 ||
        opt_bool(c, "use_qk_norm", &a->qk_norm) < 0 ||
        opt_bool(c, "attention_bias", &a->attention_bias) < 0 ||
        opt_int(c, "kv_lora_rank", 0, MAX_WIDTH, &a->kv_lora_rank) < 0)
        return -1;
    int rc = a->kv_lora_rank > 0 ? parse_mla(c, a) : parse_gqa(c, a);
    return rc < 0 ? -1 : parse_dsa(c, a);
}

/* Routing and expert widths; shared experts as n_shared_experts (DeepSeek,
 * each moe_intermediate wide) or one shared_expert_intermediate_size wide
 * MLP (Qwen-MoE; 0 means none). */
static int parse_moe(const cfg *c, arch *a)
{
    const char *why = " (required when the model has routed experts)";
    int64_t width = 0;
    if (req_int(c, "num_experts_per_tok", 1, a->experts, &a->top_k, why) < 0 ||
        req_int(c, "moe_intermediate_size", 1, MAX_WIDTH, &a->moe_intermediate, why) < 0)
        return -1;
    int r = opt_int(c, "n_shared_experts", 0, MAX_EXPERTS, &a->shared_experts);
    if (r != 0) {
        a->shared_intermediate = a->shared_experts * a->moe_intermediate;
        return r < 0 ? -1 : 0;
    }
    if (opt_int(c, "shared_expert_intermediate_size", 0, MAX_WIDTH, &width) < 0)
        return -1;
    a->shared_experts = width > 0;
    a->shared_intermediate = width;
    return 0;
}

/* mlp_only_layers: indices of layers kept dense in a Qwen-MoE model. */
static int dense_list(const cfg *c, arch *a)
{
    char qname[160], got[64];
    const json_t *v = lookup(c, "mlp_only_layers", qname, sizeof qname);
    if (!v)
        return 0;
    size_t i;
    const json_t *e;
    int ok = json_is_array(v);
    json_array_foreach(v, i, e) {
        if (!json_is_integer(e) || json_integer_value(e) < 0 ||
            json_integer_value(e) >= a->layers) {
            ok = 0;
            break;
        }
        a->layer_moe[json_integer_value(e)] = 0;
    }
    if (ok)
        return 0;
    return cp_fail_at(c->err, at(c),
                      "field \"%s\" must be a list of layer indices in [0, %" PRId64 "], got %s",
                      qname, a->layers - 1, show(v, got, sizeof got));
}

/* Which layers carry a MoE FFN.  DeepSeek/GLM (transformers
 * DeepseekV3DecoderLayer): i >= first_k_dense_replace and
 * i % moe_layer_freq == 0.  Qwen-MoE (Qwen3MoeDecoderLayer): i not in
 * mlp_only_layers and (i + 1) % decoder_sparse_step == 0.  Absent fields take
 * the neutral values 0, 1, 1, [], so both rules apply together. */
static int place_moe(const cfg *c, arch *a)
{
    int64_t first_dense = 0, freq = 1, step = 1;
    if (opt_int(c, "first_k_dense_replace", 0, a->layers, &first_dense) < 0 ||
        opt_int(c, "moe_layer_freq", 1, ARCH_MAX_LAYERS, &freq) < 0 ||
        opt_int(c, "decoder_sparse_step", 1, ARCH_MAX_LAYERS, &step) < 0)
        return -1;
    for (int64_t i = 0; i < a->layers; i++)
        a->layer_moe[i] = i >= first_dense && i % freq == 0 && (i + 1) % step == 0;
    return dense_list(c, a);
}

/* FFN kind of every layer; MoE when num_experts or n_routed_experts > 0. */
static int parse_ffn(const cfg *c, arch *a)
{
    int64_t num_experts = 0, n_routed = 0;
    if (opt_int(c, "intermediate_size", 1, MAX_WIDTH, &a->intermediate) < 0 ||
        opt_int(c, "num_experts", 0, MAX_EXPERTS, &num_experts) < 0 ||
        opt_int(c, "n_routed_experts", 0, MAX_EXPERTS, &n_routed) < 0)
        return -1;
    a->experts = n_routed > 0 ? n_routed : num_experts;
    a->has_moe = a->experts > 0;
    if (a->has_moe && (parse_moe(c, a) < 0 || place_moe(c, a) < 0))
        return -1;
    for (int64_t i = 0; i < a->layers; i++)
        a->dense_layers += !a->layer_moe[i];
    if (a->dense_layers > 0 && a->intermediate == 0)
        return cp_fail_at(c->err, at(c),
                          "missing required field \"intermediate_size\" (%" PRId64
                          " of %" PRId64 " layers have a dense FFN)", a->dense_layers, a->layers);
    return 0;
}

/* --- parameter counts (elements), in double: exact below 2^53 ----------- */

/* q/k/v/o projections, optional per-head q/k RMSNorm, optional biases
 * (transformers LlamaAttention / Qwen3Attention: bias=attention_bias on all
 * four projections). */
static double gqa_params(const arch *a)
{
    double h = (double)a->hidden;
    double q = (double)a->heads * (double)a->head_dim;
    double kv = (double)a->kv_heads * (double)a->head_dim;
    double w = h * q + 2 * h * kv + q * h;
    if (a->qk_norm)
        w += 2 * (double)a->head_dim;
    if (a->attention_bias)
        w += q + 2 * kv + h;
    return w;
}

/* MLA projections as stored by transformers DeepseekV3Attention: q_a_proj,
 * q_a_layernorm, q_b_proj (or q_proj without a q latent), kv_a_proj_with_mqa,
 * kv_a_layernorm, kv_b_proj, o_proj; attention_bias adds biases to q_a_proj,
 * kv_a_proj_with_mqa and o_proj. */
static double mla_params(const arch *a)
{
    double h = (double)a->hidden, heads = (double)a->heads;
    double ql = (double)a->q_lora_rank, kl = (double)a->kv_lora_rank;
    double qk = (double)(a->qk_nope_dim + a->qk_rope_dim);
    double rope = (double)a->qk_rope_dim;
    double w = ql > 0 ? ql * h + ql + heads * qk * ql : heads * qk * h;
    w += (kl + rope) * h + kl;
    w += heads * (double)(a->qk_nope_dim + a->v_head_dim) * kl;
    w += heads * (double)a->v_head_dim * h;
    if (a->attention_bias)
        w += ql + kl + rope + h;
    return w;
}

/* Lightning indexer (deepseek-ai/DeepSeek-V3.2-Exp inference/model.py):
 * wq_b [n*d, q_lora], wk [d, hidden], k_norm LayerNorm(d) weight + bias,
 * weights_proj [n, hidden]. */
static double indexer_params(const arch *a)
{
    double h = (double)a->hidden, n = (double)a->index_heads, d = (double)a->index_head_dim;
    return n * d * (double)a->q_lora_rank + d * h + 2 * d + n * h;
}

/* Attention of one layer, with the layer's two RMSNorm weights
 * (input_layernorm, post_attention_layernorm). */
static double attn_params(const arch *a)
{
    double w = 2 * (double)a->hidden;
    w += a->attn == ATTN_MLA ? mla_params(a) : gqa_params(a);
    return a->has_dsa ? w + indexer_params(a) : w;
}

/* Dense: gate, up, down projections.  MoE: router weight, routed experts
 * (gate, up, down each), shared-expert MLP. */
static double ffn_params(const arch *a, int64_t layer)
{
    double h = (double)a->hidden, e = (double)a->experts;
    if (layer < 0 || layer >= a->layers)
        return 0;
    if (!a->layer_moe[layer])
        return 3 * h * (double)a->intermediate;
    return e * h + e * 3 * h * (double)a->moe_intermediate + 3 * h * (double)a->shared_intermediate;
}

/* Layers, token embedding, LM head unless tied, final norm. */
static double total_params(const arch *a)
{
    double h = (double)a->hidden, sum = h;
    for (int64_t i = 0; i < a->layers; i++)
        sum += attn_params(a) + ffn_params(a, i);
    return sum + (a->tie_embeddings ? 1 : 2) * (double)a->vocab * h;
}

int64_t arch_attn_params_per_layer(const arch *a)
{
    return (int64_t)attn_params(a);
}

/* 0 for a layer index outside [0, layers). */
int64_t arch_ffn_params(const arch *a, int layer)
{
    return (int64_t)ffn_params(a, layer);
}

int64_t arch_total_params(const arch *a)
{
    return (int64_t)total_params(a);
}

int64_t arch_kv_elems_per_token_layer(const arch *a)
{
    if (a->attn == ATTN_MLA)
        return a->kv_lora_rank + a->qk_rope_dim;
    return 2 * a->kv_heads * a->head_dim;
}

/* --- loading ------------------------------------------------------------- */

static int parse(cfg *c, arch *a)
{
    if (pick_text(c) < 0 || parse_common(c, a) < 0 || parse_attention(c, a) < 0 ||
        parse_ffn(c, a) < 0)
        return -1;
    double n = total_params(a);
    if (n > MAX_PARAMS)
        return cp_fail_at(c->err, at(c),
                          "model would have %.3g parameters, more than the sanity bound of %.0e; "
                          "check its sizes", n, MAX_PARAMS);
    return 0;
}

/* The parsed root object of the file at path, or NULL after cp_fail. */
static json_t *load_json(const char *path, cp_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        cp_fail_at(err, (cp_loc){path, 0, 0}, "cannot open model config: %s", strerror(errno));
        return NULL;
    }
    json_error_t je;
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!root) {
        cp_fail_at(err, (cp_loc){path, je.line, je.column}, "%s", je.text);
        return NULL;
    }
    if (!json_is_object(root)) {
        cp_fail_at(err, (cp_loc){path, 0, 0}, "a model config must be a JSON object");
        json_decref(root);
        return NULL;
    }
    return root;
}

static int is_bundled(const char *name)
{
    for (const char *const *m = arch_bundled; *m; m++)
        if (strcmp(*m, name) == 0)
            return 1;
    return 0;
}

static int unknown_model(const char *name, cp_err *err)
{
    char hint[192], list[512] = "";
    size_t off = 0;
    for (const char *const *m = arch_bundled; *m && off < sizeof list; m++)
        off += (size_t)snprintf(list + off, sizeof list - off, "%s%s", off ? ", " : "", *m);
    return cp_fail(err, CP_EXIT_INPUT, "unknown model \"%s\"%s; bundled models: %s", name,
                   cp_suggest(hint, sizeof hint, name, arch_bundled), list);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Fill a->path and a->name from spec. */
static int locate(const char *spec, const char *base_dir, arch *a, cp_err *err)
{
    char path[sizeof a->path + 1];
    if (strchr(spec, '/') || ends_with(spec, ".json")) {
        const char *slash = strrchr(spec, '/');
        const char *base = slash ? slash + 1 : spec;
        size_t n = strlen(base) - (ends_with(base, ".json") ? strlen(".json") : 0);
        if (n >= sizeof a->name)
            return cp_fail(err, CP_EXIT_INPUT, "%s: model config file name too long", spec);
        snprintf(a->name, sizeof a->name, "%.*s", (int)n, base);
        cp_resolve(path, sizeof path, base_dir, spec);
    } else {
        char rel[sizeof a->name + 32];
        if (!is_bundled(spec))
            return unknown_model(spec, err);
        snprintf(a->name, sizeof a->name, "%s", spec);
        snprintf(rel, sizeof rel, "models/configs/%s.json", spec);
        cp_data_path(path, sizeof path, rel);
    }
    if (strlen(path) >= sizeof a->path)
        return cp_fail(err, CP_EXIT_INPUT, "%.200s...: model config path too long", path);
    memcpy(a->path, path, strlen(path) + 1);
    return 0;
}

int arch_load(const char *spec, const char *base_dir, arch *out, cp_err *err)
{
    memset(out, 0, sizeof *out);
    if (locate(spec, base_dir, out, err) < 0)
        return -1;
    json_t *root = load_json(out->path, err);
    if (!root)
        return -1;
    cfg c = {.path = out->path, .top = root, .err = err};
    int rc = parse(&c, out);
    json_decref(root);
    return rc;
}
