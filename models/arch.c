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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/datadir.h"

const char *const arch_bundled[] = {
    "qwen3-omni-30b-a3b-thinker", "qwen3-32b", "qwen3-30b-a3b", "llama-3.1-70b", "llama-3.1-405b",
    "deepseek-v3", "deepseek-v3.2-exp", "glm-5", "glm-5.1", "deepseek-r1", "qwen3-235b-a22b",
    NULL,
};

#include "models/arch_int.h"


/* Integer `key` into *out when present.  Returns 1 when read, 0 when absent
 * (*out untouched), -1 when not an integer in [lo, hi]. */
static int opt_int(const cfg *c, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    char qname[160];
    const json_t *v = arch_lookup(c, key, qname, sizeof qname);
    if (!v)
        return 0;
    return arch_want_int(c, v, qname, lo, hi, out) < 0 ? -1 : 1;
}

/* Like opt_int, but absence is an error; `why` (may be "") explains when the
 * field is only conditionally required.  Returns 0 or -1. */
static int req_int(const cfg *c, const char *key, int64_t lo, int64_t hi, int64_t *out,
                   const char *why)
{
    int r = opt_int(c, key, lo, hi, out);
    if (r == 0)
        return cp_fail_at(c->err, arch_at(c), "missing required field \"%s\"%s", key, why);
    return r < 0 ? -1 : 0;
}

/* Boolean `key` (true/false, or 0/1 as in hand-written configs) into *out
 * when present.  Returns 1 when read, 0 when absent (*out untouched), -1. */
static int opt_bool(const cfg *c, const char *key, int *out)
{
    char qname[160];
    const json_t *v = arch_lookup(c, key, qname, sizeof qname);
    if (!v)
        return 0;
    return arch_want_bool(c, v, qname, out) < 0 ? -1 : 1;
}

/* Checkpoint dtype: "torch_dtype", or "dtype" as newer transformers write it. */
static int opt_dtype(const cfg *c, arch *a)
{
    char qname[160], got[64];
    const json_t *v = arch_lookup(c, "torch_dtype", qname, sizeof qname);
    if (!v)
        v = arch_lookup(c, "dtype", qname, sizeof qname);
    if (!v)
        return 0;
    if (json_is_string(v) && json_string_length(v) < sizeof a->torch_dtype) {
        snprintf(a->torch_dtype, sizeof a->torch_dtype, "%s", json_string_value(v));
        return 0;
    }
    return cp_fail_at(c->err, arch_at(c),
                      "field \"%s\" must be a dtype name such as \"bfloat16\", got %s", qname,
                      arch_show(v, got, sizeof got));
}

/* Model families: what no field of their configs states, from transformers
 * (src/transformers/models/<dir>/).  A family is named by an architectures[]
 * class (cls: exact, or a prefix when it ends in '*') or, failing that, by
 * model_type (types).
 *   qk:   the attention class's __init__ in modeling_<dir>.py builds q_norm
 *         and k_norm: qwen3 Qwen3Attention, qwen3_moe Qwen3MoeAttention,
 *         qwen3_next Qwen3NextAttention (full-attention layers), qwen3_vl
 *         Qwen3VLTextAttention, qwen3_vl_moe Qwen3VLMoeTextAttention,
 *         qwen3_omni_moe Qwen3OmniMoeThinkerTextAttention: RMSNorm(head_dim)
 *         per head; gemma3 Gemma3Attention: Gemma3RMSNorm(dim=head_dim);
 *         olmo2 Olmo2Attention: Olmo2RMSNorm(heads * head_dim) and
 *         (kv_heads * head_dim); olmoe OlmoeAttention: OlmoeRMSNorm(hidden)
 *         and (kv_heads * head_dim).  The two OLMo families normalise the
 *         whole projection rather than each head: the same work, but
 *         (heads + kv_heads) * head_dim weights where gqa_params counts
 *         2 * head_dim (< 0.01 % of those models).
 *   sig:  the router scores by sigmoid with a correction bias (noaux_tc):
 *         deepseek_v3 DeepseekV3Config scoring_func default "sigmoid"
 *         (DeepseekV3TopkRouter), deepseek_v32 likewise, glm4_moe
 *         Glm4MoeTopkRouter and glm_moe_dsa (sigmoid +
 *         e_score_correction_bias); every other router: softmax.
 *   tied: the tie_word_embeddings default of configuration_<dir>.py's
 *         config class __init__: True for GemmaConfig, Gemma2Config,
 *         Gemma3TextConfig (and Gemma3Config, a PretrainedConfig, whose
 *         default is True); False for every other family here. */
typedef struct family {
    const char *name;     /* for messages */
    const char *cls;
    const char *types[4]; /* model_type values, NULL-terminated */
    uint8_t qk, sig, tied;
    uint8_t audio;        /* its audio_config is the encoder of arch_audio */
} family;

static const family families[] = {
    {"Qwen3", "Qwen3ForCausalLM", {"qwen3"}, 1, 0, 0, 0},
    {"Qwen3-MoE", "Qwen3MoeForCausalLM", {"qwen3_moe"}, 1, 0, 0, 0},
    {"Qwen3-Next", "Qwen3NextForCausalLM", {"qwen3_next"}, 1, 0, 0, 0},
    {"Qwen3-Omni", "Qwen3OmniMoe*", /* ...ForConditionalGeneration, ...ThinkerFor... */
     {"qwen3_omni_moe", "qwen3_omni_moe_thinker", "qwen3_omni_moe_text"}, 1, 0, 0, 1},
    {"Qwen3-VL", "Qwen3VLForConditionalGeneration", {"qwen3_vl", "qwen3_vl_text"}, 1, 0, 0, 0},
    {"Qwen3-VL-MoE", "Qwen3VLMoeForConditionalGeneration", {"qwen3_vl_moe",
     "qwen3_vl_moe_text"}, 1, 0, 0, 0},
    {"Gemma3", "Gemma3ForCausalLM", {"gemma3_text"}, 1, 0, 1, 0},
    {"Gemma3", "Gemma3ForConditionalGeneration", {"gemma3"}, 1, 0, 1, 0},
    {"Gemma2", "Gemma2ForCausalLM", {"gemma2"}, 0, 0, 1, 0},
    {"Gemma", "GemmaForCausalLM", {"gemma"}, 0, 0, 1, 0},
    {"OLMo2", "Olmo2ForCausalLM", {"olmo2"}, 1, 0, 0, 0},
    {"OLMoE", "OlmoeForCausalLM", {"olmoe"}, 1, 0, 0, 0},
    {"DeepSeek-V3", "DeepseekV3*", {"deepseek_v3"}, 0, 1, 0, 0},
    {"DeepSeek-V3.2", "DeepseekV32*", {"deepseek_v32"}, 0, 1, 0, 0},
    {"GLM-4-MoE", "Glm4Moe*", {"glm4_moe"}, 0, 1, 0, 0},
    {"GLM-MoE-DSA", "GlmMoeDsa*", {"glm_moe_dsa"}, 0, 1, 0, 0},
    {"Llama", "LlamaForCausalLM", {"llama"}, 0, 0, 0, 0},
    {"Llama-4", "Llama4*", {"llama4", "llama4_text"}, 0, 0, 0, 0},
    {"Mistral", "MistralForCausalLM", {"mistral"}, 0, 0, 0, 0},
    {"Mixtral", "MixtralForCausalLM", {"mixtral"}, 0, 0, 0, 0},
    {"Qwen2", "Qwen2ForCausalLM", {"qwen2"}, 0, 0, 0, 0},
    {"Qwen2-MoE", "Qwen2MoeForCausalLM", {"qwen2_moe"}, 0, 0, 0, 0},
    {"GPT-OSS", "GptOssForCausalLM", {"gpt_oss"}, 0, 0, 0, 0},
};

static const family *family_of_class(const char *name)
{
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        const char *k = families[i].cls;
        size_t n = strlen(k);
        if (k[n - 1] == '*' ? strncmp(name, k, n - 1) == 0 : strcmp(name, k) == 0)
            return &families[i];
    }
    return NULL;
}

static const family *family_of_type(const char *type)
{
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        for (int t = 0; families[i].types[t]; t++)
            if (strcmp(families[i].types[t], type) == 0)
                return &families[i];
    return NULL;
}

/* One architectures[] list v, named qname: class names shorter than
 * arch_class.  The first class of a known family (the first list read
 * first) names c->fam; when `top`, a->arch_class is the first entry. */
static int class_list(cfg *c, const json_t *v, const char *qname, arch *a, int top)
{
    char got[64];
    size_t i;
    const json_t *e;
    if (!v || json_is_null(v))
        return 0;
    arch_note(c, qname, 0);
    int ok = json_is_array(v);
    json_array_foreach(v, i, e) {
        if (!json_is_string(e) || json_string_length(e) >= sizeof a->arch_class) {
            ok = 0;
            break;
        }
        if (top && i == 0)
            snprintf(a->arch_class, sizeof a->arch_class, "%s", json_string_value(e));
        if (!c->fam && (c->fam = family_of_class(json_string_value(e)))) {
            c->fam_by_class = 1;
            snprintf(c->fam_via, sizeof c->fam_via, "%s \"%.40s\"", qname,
                     json_string_value(e));
        }
    }
    if (ok)
        return 0;
    return cp_fail_at(c->err, arch_at(c),
                      "field \"%s\" must be a list of class names shorter than %zu characters, "
                      "got %s", qname, sizeof a->arch_class, arch_show(v, got, sizeof got));
}

/* model_type, read where lookup finds it and then at the other levels
 * (the top level, thinker_config): the first of a known family names c->fam
 * when no class did. */
static int parse_type(cfg *c)
{
    char qname[160], got[64];
    const json_t *thinker = json_object_get(c->top, "thinker_config");
    const json_t *v[3] = {arch_lookup(c, "model_type", qname, sizeof qname),
                          json_object_get(c->top, "model_type"),
                          json_is_object(thinker) ? json_object_get(thinker, "model_type") : NULL};
    const char *name[3] = {qname, "model_type", "thinker_config.model_type"};
    for (int i = 0; i < 3; i++) {
        if (!v[i] || json_is_null(v[i]))
            continue;
        if (!json_is_string(v[i]))
            return cp_fail_at(c->err, arch_at(c), "field \"%s\" must be a string, got %s", name[i],
                              arch_show(v[i], got, sizeof got));
        arch_note(c, name[i], 0);
        if (!c->fam && (c->fam = family_of_type(json_string_value(v[i]))))
            snprintf(c->fam_via, sizeof c->fam_via, "%s \"%.40s\"", name[i],
                     json_string_value(v[i]));
    }
    return 0;
}

/* The family: architectures[] at the top level and in thinker_config
 * (Qwen3-Omni), else model_type. */
static int parse_class(cfg *c, arch *a)
{
    const json_t *thinker = json_object_get(c->top, "thinker_config");
    if (class_list(c, json_object_get(c->top, "architectures"), "architectures", a, 1) < 0)
        return -1;
    if (json_is_object(thinker) && class_list(c, json_object_get(thinker, "architectures"),
                                              "thinker_config.architectures", a, 0) < 0)
        return -1;
    return parse_type(c);
}

/* A choice no field states, taken from the family found by model_type or,
 * with no family, assumed: warned (one found by class is not: the class is
 * the checkpoint's own statement of its model). */
static void warn_assumed(const cfg *c, arch *a, const char *what, const char *chosen)
{
    if (c->fam && c->fam_by_class)
        return;
    if (c->fam)
        arch_warn(a, "%s: %s: %s, the transformers default of the %s family, named by %s "
                  "(no architectures[] class cpsim knows)", arch_base_name(c->path), what, chosen,
                  c->fam->name, c->fam_via);
    else
        arch_warn(a, "%s: %s: %s assumed (no architectures[] class or model_type cpsim knows "
                  "the family of)", arch_base_name(c->path), what, chosen);
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
        return cp_fail_at(c->err, arch_at(c), "field \"%s\" must be an object, got %s",
                          c->text_name, arch_show(t, got, sizeof got));
    }
    c->text = json_is_object(t) ? t : NULL;
    if (json_is_object(thinker))
        arch_note(c, "thinker_config", 0);
    if (c->text)
        arch_note(c, c->text_name, 0);
    return 0;
}

/* The positions the model is built for (arch.max_context), as vLLM derives
 * max_model_len from the config (vllm/config.py _get_and_verify_max_len):
 * max_position_embeddings, or, when rope_scaling (rope_parameters in newer
 * transformers) has a factor and its rope_type (or type) is not "llama3",
 * "longrope" or "su" (whose max_position_embeddings already states the
 * extended length), factor x original_max_position_embeddings for "yarn"
 * and factor x max_position_embeddings for the others; the larger of the
 * two.  A rope_scaling without a type that gives
 * original_max_position_embeddings (the bundled DeepSeek abridgements of
 * "type": "yarn") is yarn. */
static int context_of(const cfg *c, arch *a)
{
    char rn[160], qname[224], got[64], type[32] = "";
    const json_t *rs = arch_lookup(c, "rope_scaling", rn, sizeof rn), *v;
    if (!rs)
        rs = arch_lookup(c, "rope_parameters", rn, sizeof rn);
    a->max_context = a->max_position;
    if (!rs)
        return 0;
    if (!json_is_object(rs))
        return cp_fail_at(c->err, arch_at(c), "field \"%s\" must be an object, got %s", rn,
                          arch_show(rs, got, sizeof got));
    if (((v = arch_field(c, rs, rn, "rope_type", qname, sizeof qname)) ||
         (v = arch_field(c, rs, rn, "type", qname, sizeof qname))) &&
        arch_want_str(c, v, qname, type, sizeof type, "a RoPE type such as \"yarn\"") < 0)
        return -1;
    int64_t orig = 0;
    if ((v = arch_field(c, rs, rn, "original_max_position_embeddings", qname, sizeof qname)) &&
        arch_want_int(c, v, qname, 1, MAX_POSITION, &orig) < 0)
        return -1;
    v = arch_field(c, rs, rn, "factor", qname, sizeof qname);
    if (v && (!json_is_number(v) || json_number_value(v) <= 0 || json_number_value(v) > 1e6))
        return cp_fail_at(c->err, arch_at(c), "field \"%s\" must be a number in (0, 1e6], got %s",
                          qname, arch_show(v, got, sizeof got));
    if (!v || !strcmp(type, "llama3") || !strcmp(type, "longrope") || !strcmp(type, "su"))
        return 0;
    int yarn = !strcmp(type, "yarn") || (!type[0] && orig > 0);
    double ext = json_number_value(v) * (double)(yarn ? orig : a->max_position);
    if (ext > (double)a->max_context)
        a->max_context = (int64_t)ext;
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
    /* Absent tie_word_embeddings: the family's transformers default
     * (families), untied for an unknown family; warned either way. */
    int r = opt_bool(c, "tie_word_embeddings", &a->tie_embeddings);
    if (r < 0)
        return -1;
    if (r == 0) {
        a->tie_embeddings = c->fam && c->fam->tied;
        if (c->fam)
            arch_warn(a, "%s: field \"tie_word_embeddings\" is absent: %s embeddings, the "
                      "transformers default of the %s family (named by %s)",
                      arch_base_name(c->path), a->tie_embeddings ? "tied" : "untied",
                      c->fam->name, c->fam_via);
        else
            arch_warn(a, "%s: field \"tie_word_embeddings\" is absent: untied embeddings "
                      "assumed (no architectures[] class or model_type cpsim knows the family "
                      "of)", arch_base_name(c->path));
    }
    return opt_dtype(c, a) < 0 || context_of(c, a) < 0 ? -1 : 0;
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
        return cp_fail_at(c->err, arch_at(c),
                          "field \"num_key_value_heads\" (%" PRId64 ") must divide "
                          "num_attention_heads (%" PRId64 ")", a->kv_heads, a->heads);
    int r = opt_int(c, "head_dim", 1, MAX_DIM, &a->head_dim);
    if (r != 0)
        return r < 0 ? -1 : 0;
    if (a->hidden % a->heads != 0)
        return cp_fail_at(c->err, arch_at(c),
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
        return cp_fail_at(c->err, arch_at(c),
                          "field \"index_topk\" needs MLA attention: \"kv_lora_rank\" must be > 0");
    if (a->q_lora_rank == 0)
        return cp_fail_at(c->err, arch_at(c),
                          "field \"index_topk\" needs a query latent: \"q_lora_rank\" must be > 0");
    if (req_int(c, "index_n_heads", 1, MAX_HEADS, &a->index_heads, why) < 0 ||
        req_int(c, "index_head_dim", 1, MAX_DIM, &a->index_head_dim, why) < 0)
        return -1;
    a->has_dsa = 1;
    return 0;
}

/* qk_norm is use_qk_norm when present (true or false wins), else the
 * family's (families), else 0.  Only the presence of q/k norms is taken
 * from the family; every size still comes from fields. */
static int parse_attention(const cfg *c, arch *a)
{
    int r = 0;
    if (req_int(c, "num_attention_heads", 1, MAX_HEADS, &a->heads, "") < 0 ||
        (r = opt_bool(c, "use_qk_norm", &a->qk_norm)) < 0 ||
        opt_bool(c, "attention_bias", &a->attention_bias) < 0 ||
        opt_int(c, "kv_lora_rank", 0, MAX_WIDTH, &a->kv_lora_rank) < 0)
        return -1;
    if (r == 0) {
        a->qk_norm = c->fam && c->fam->qk;
        warn_assumed(c, a, "no use_qk_norm", a->qk_norm ? "q/k normalised" : "no q/k norm");
    }
    int rc = a->kv_lora_rank > 0 ? parse_mla(c, a) : parse_gqa(c, a);
    return rc < 0 ? -1 : parse_dsa(c, a);
}

/* Attention fields that change the work but are not modelled, in this
 * order: partial_rotary_factor < 1 (also under rope_parameters, as newer
 * transformers write it), attn_output_gate, attention_chunk_size,
 * no_rope_layers with NoPE layers. */
static int warn_attention(const cfg *c, arch *a)
{
    char qname[224], rp_name[160], got[64], val[64];
    const json_t *v = arch_lookup(c, "partial_rotary_factor", qname, sizeof qname);
    const json_t *rp = arch_lookup(c, "rope_parameters", rp_name, sizeof rp_name);
    if (!v && json_is_object(rp))
        v = arch_field(c, rp, rp_name, "partial_rotary_factor", qname, sizeof qname);
    if (v && (!json_is_number(v) || json_number_value(v) <= 0 || json_number_value(v) > 1))
        return cp_fail_at(c->err, arch_at(c), "field \"%s\" must be a number in (0, 1], got %s",
                          qname, arch_show(v, got, sizeof got));
    if (v && json_number_value(v) < 1)
        arch_warn_field(c, a, qname, arch_show(v, got, sizeof got), "RoPE on part of each head",
                        "RoPE", "RoPE is simulated on the whole head");

    int gate = 0;
    int64_t chunk = 0;
    if (opt_bool(c, "attn_output_gate", &gate) < 0 ||
        opt_int(c, "attention_chunk_size", 1, MAX_POSITION, &chunk) < 0)
        return -1;
    if (gate) {
        arch_lookup(c, "attn_output_gate", qname, sizeof qname);
        arch_warn_field(c, a, qname, "true", "a sigmoid gate on the attention output", "attention",
                   "no output gate is simulated");
    }
    if (chunk > 0) {
        arch_lookup(c, "attention_chunk_size", qname, sizeof qname);
        snprintf(val, sizeof val, "%" PRId64, chunk);
        arch_warn_field(c, a, qname, val, "chunked local attention", "attention",
                   "attention is simulated as full causal");
    }

    /* no_rope_layers (Llama4TextConfig, SmolLM3Config): 1 = the layer uses
     * RoPE, 0 = NoPE; an empty list makes transformers build its default,
     * a NoPE layer every no_rope_layer_interval layers. */
    v = arch_lookup(c, "no_rope_layers", qname, sizeof qname);
    if (!v)
        return 0;
    size_t i;
    const json_t *e;
    int64_t nope = 0;
    int ok = json_is_array(v) && (json_array_size(v) == 0 ||
                                  (int64_t)json_array_size(v) >= a->layers);
    json_array_foreach(v, i, e) {
        if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) > 1) {
            ok = 0;
            break;
        }
        nope += (int64_t)i < a->layers && json_integer_value(e) == 0;
    }
    if (!ok)
        return cp_fail_at(c->err, arch_at(c),
                          "field \"%s\" must be a list of 0 or 1 for each of the %" PRId64
                          " layers, got %s", qname, a->layers, arch_show(v, got, sizeof got));
    if (json_array_size(v) == 0)
        arch_warn_field(c, a, qname, "[]", "NoPE every no_rope_layer_interval-th layer by default",
                   "RoPE", "RoPE is simulated on every layer");
    else if (nope > 0) {
        snprintf(val, sizeof val, "0 on %" PRId64 " of %" PRId64 " layers", nope, a->layers);
        arch_warn_field(c, a, qname, val, "layers without RoPE", "RoPE",
                   "RoPE is simulated on every layer");
    }
    return 0;
}

/* --- sliding windows ----------------------------------------------------- */

enum { LT_FULL, LT_SLIDING, LT_OTHER };

/* layer_types (newer transformers): one name per layer, exactly
 * num_hidden_layers of them as transformers' layer_type_validation demands.
 * kind[i] is LT_FULL for "full_attention", LT_SLIDING for
 * "sliding_attention", LT_OTHER for anything else ("linear_attention",
 * "chunked_attention", ...), which is warned once per name, in order of first
 * appearance.  *present says whether the field is there. */
static int layer_types(const cfg *c, arch *a, uint8_t *kind, int *present)
{
    char qname[160], got[64], val[96];
    const json_t *v = arch_lookup(c, "layer_types", qname, sizeof qname);
    *present = v != NULL;
    if (!v)
        return 0;
    int ok = json_is_array(v) && (int64_t)json_array_size(v) == a->layers;
    for (int64_t i = 0; ok && i < a->layers; i++) {
        const json_t *e = json_array_get(v, (size_t)i);
        ok = json_is_string(e);
        if (ok)
            kind[i] = strcmp(json_string_value(e), "full_attention") == 0      ? LT_FULL
                      : strcmp(json_string_value(e), "sliding_attention") == 0 ? LT_SLIDING
                                                                               : LT_OTHER;
    }
    if (!ok)
        return cp_fail_at(c->err, arch_at(c),
                          "field \"%s\" must be a list of %" PRId64 " attention kinds, one per "
                          "layer, got %s", qname, a->layers, arch_show(v, got, sizeof got));
    for (int64_t i = 0; i < a->layers; i++) {
        const char *name = json_string_value(json_array_get(v, (size_t)i));
        int64_t n = 0;
        int first = 1;
        for (int64_t j = 0; kind[i] == LT_OTHER && j < a->layers; j++) {
            int same = strcmp(json_string_value(json_array_get(v, (size_t)j)), name) == 0;
            first &= !(same && j < i);
            n += same;
        }
        if (kind[i] != LT_OTHER || !first)
            continue;
        snprintf(val, sizeof val, "\"%.40s\" on %" PRId64 " of %" PRId64 " layers", name, n,
                 a->layers);
        arch_warn_field(c, a, qname, val, "neither full nor sliding", "attention",
                   "simulated as full causal");
    }
    return 0;
}

/* Which layers attend within sliding_window (int, or null = none), in this
 * order of precedence:
 *   1. use_sliding_window present and false: no layer (Qwen2Config sets
 *      sliding_window = None unless use_sliding_window);
 *   2. layer_types present: the "sliding_attention" layers;
 *   3. max_window_layers or use_sliding_window present (Qwen2/Qwen3): layer i
 *      when use_sliding_window is true and i >= max_window_layers
 *      (transformers Qwen2Config/Qwen3Config build layer_types so; absent
 *      use_sliding_window is their default False, absent max_window_layers
 *      their default 28);
 *   4. sliding_window_pattern present (Gemma3 configs before layer_types):
 *      layer i when (i + 1) % pattern != 0 (Gemma3Attention is_sliding);
 *   5. otherwise (Mistral): every layer.
 * A config without sliding_window has no window (the config classes'
 * default of 4096 is not assumed); one whose layer_types name sliding
 * layers must give it.  A window wider than the context is kept
 * as written.  Qwen3-Next-style full_attention_interval (linear attention
 * on the other layers) without layer_types is warned here. */
static int parse_window(const cfg *c, arch *a)
{
    char qname[160], val[32];
    int64_t sw = 0, max_window = 28, pattern = 0, full_every = 0; /* 28: Qwen2Config default */
    int use = -1, types = 0, r_max = 0, r_use = 0, r_pat = 0;
    uint8_t kind[ARCH_MAX_LAYERS] = {0};
    if (opt_int(c, "sliding_window", 0, MAX_POSITION, &sw) < 0 ||
        (r_use = opt_bool(c, "use_sliding_window", &use)) < 0 ||
        (r_max = opt_int(c, "max_window_layers", 0, ARCH_MAX_LAYERS, &max_window)) < 0 ||
        (r_pat = opt_int(c, "sliding_window_pattern", 1, ARCH_MAX_LAYERS, &pattern)) < 0 ||
        opt_int(c, "full_attention_interval", 1, ARCH_MAX_LAYERS, &full_every) < 0 ||
        layer_types(c, a, kind, &types) < 0)
        return -1;
    if (!types && full_every > 1) {
        arch_lookup(c, "full_attention_interval", qname, sizeof qname);
        snprintf(val, sizeof val, "%" PRId64, full_every);
        arch_warn_field(c, a, qname, val, "linear attention on the other layers", "attention",
                   "every layer is simulated as full causal attention");
    }
    for (int64_t i = 0; i < a->layers; i++) {
        if (types)
            a->layer_window[i] = kind[i] == LT_SLIDING;
        else if (r_max || r_use)
            a->layer_window[i] = use == 1 && i >= max_window;
        else if (r_pat)
            a->layer_window[i] = (i + 1) % pattern != 0;
        else
            a->layer_window[i] = 1;
        if (use == 0)
            a->layer_window[i] = 0;
        if (a->layer_window[i] && sw == 0 && types) {
            arch_lookup(c, "layer_types", qname, sizeof qname);
            return cp_fail_at(c->err, arch_at(c),
                              "field \"%s\" marks layer %" PRId64 " as \"sliding_attention\" "
                              "but \"sliding_window\" is missing", qname, i);
        }
        a->layer_window[i] &= sw > 0;
        a->window_layers += a->layer_window[i];
    }
    a->sliding_window = a->window_layers > 0 ? sw : 0;
    return 0;
}

/* --- FFN ------------------------------------------------------------------ */

/* The expert layouts, told apart by fields:
 *   EXPERTS_SIZED: num_experts or n_routed_experts (Qwen-MoE, DeepSeek, GLM):
 *     experts moe_intermediate_size wide, shared experts as configured,
 *     dense layers intermediate_size wide;
 *   EXPERTS_LOCAL: num_local_experts only (Mixtral, GPT-OSS; transformers
 *     MixtralExperts/GptOssExperts are intermediate_size wide):
 *     intermediate_size is the expert width, every layer is MoE unless
 *     placement fields say otherwise, no shared expert, no dense MLP;
 *   EXPERTS_LLAMA4: num_local_experts with intermediate_size_mlp or
 *     interleave_moe_layer_step, fields only Llama4TextConfig has
 *     (transformers models/llama4/modeling_llama4.py): Llama4TextMoe builds
 *     num_local_experts experts and always one shared_expert =
 *     Llama4TextMLP(config), both intermediate_size wide, and a router
 *     Linear(hidden, num_local_experts, bias=False); a layer not in
 *     config.moe_layers gets Llama4TextMLP(intermediate_size_mlp).
 * moe_intermediate_size, when given, is the expert width in every layout. */
enum { EXPERTS_SIZED, EXPERTS_LOCAL, EXPERTS_LLAMA4 };

/* Routing and expert widths; shared experts as n_shared_experts (DeepSeek,
 * each moe_intermediate wide) or one shared_expert_intermediate_size wide
 * MLP (Qwen-MoE; 0 means none), or Llama-4's one shared expert. */
/* The router's scoring: scoring_func when present, else the family's
 * (families: sigmoid with a correction bias for DeepSeek-V3 and GLM-MoE),
 * else softmax. */
static int parse_router(const cfg *c, arch *a)
{
    char qname[160], got[64];
    const json_t *v = arch_lookup(c, "scoring_func", qname, sizeof qname);
    if (v) {
        if (json_is_string(v) && (!strcmp(json_string_value(v), "sigmoid") ||
                                  !strcmp(json_string_value(v), "softmax"))) {
            a->router_sigmoid = !strcmp(json_string_value(v), "sigmoid");
            return 0;
        }
        return cp_fail_at(c->err, arch_at(c),
                          "field \"%s\" must be \"softmax\" or \"sigmoid\", got %s", qname,
                          arch_show(v, got, sizeof got));
    }
    a->router_sigmoid = c->fam && c->fam->sig;
    warn_assumed(c, a, "no scoring_func", a->router_sigmoid ? "sigmoid router" : "softmax router");
    return 0;
}

static int parse_moe(const cfg *c, arch *a, int layout, int64_t inter)
{
    const char *why = " (required when the model has routed experts)";
    int64_t width = 0;
    if (req_int(c, "num_experts_per_tok", 1, a->experts, &a->top_k, why) < 0 ||
        parse_router(c, a) < 0)
        return -1;
    int r = opt_int(c, "moe_intermediate_size", 1, MAX_WIDTH, &a->moe_intermediate);
    if (r < 0)
        return -1;
    if (r == 0 && layout == EXPERTS_SIZED)
        return cp_fail_at(c->err, arch_at(c), "missing required field \"moe_intermediate_size\"%s",
                          why);
    if (r == 0 && inter == 0)
        return cp_fail_at(c->err, arch_at(c),
                          "missing required field \"intermediate_size\" (the expert width when "
                          "the experts are given as num_local_experts)");
    if (r == 0)
        a->moe_intermediate = inter;
    if (layout == EXPERTS_LLAMA4) {
        a->shared_experts = 1;
        a->shared_intermediate = inter > 0 ? inter : a->moe_intermediate;
        return 0;
    }
    r = opt_int(c, "n_shared_experts", 0, MAX_EXPERTS, &a->shared_experts);
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

/* A list of layer indices in [0, layers) named `key`: layer_moe[i] = set for
 * each.  Returns 1 when read, 0 when absent, -1. */
static int layer_list(const cfg *c, arch *a, const char *key, uint8_t set)
{
    char qname[160], got[64];
    const json_t *v = arch_lookup(c, key, qname, sizeof qname);
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
        a->layer_moe[json_integer_value(e)] = set;
    }
    if (ok)
        return 1;
    return cp_fail_at(c->err, arch_at(c),
                      "field \"%s\" must be a list of layer indices in [0, %" PRId64 "], got %s",
                      qname, a->layers - 1, arch_show(v, got, sizeof got));
}

/* Which layers carry a MoE FFN.  DeepSeek/GLM (transformers
 * DeepseekV3DecoderLayer): i >= first_k_dense_replace and
 * i % moe_layer_freq == 0.  Qwen-MoE (Qwen3MoeDecoderLayer): i not in
 * mlp_only_layers and (i + 1) % decoder_sparse_step == 0.  Llama-4
 * (Llama4TextConfig): moe_layers when given (it overrides the step), else
 * range(interleave_moe_layer_step - 1, layers, step), i.e.
 * (i + 1) % interleave_moe_layer_step == 0.  Absent fields take the neutral
 * values 0, 1, 1, 1, [], so the rules apply together. */
static int place_moe(const cfg *c, arch *a)
{
    int64_t first_dense = 0, freq = 1, step = 1, interleave = 1;
    if (opt_int(c, "first_k_dense_replace", 0, a->layers, &first_dense) < 0 ||
        opt_int(c, "moe_layer_freq", 1, ARCH_MAX_LAYERS, &freq) < 0 ||
        opt_int(c, "decoder_sparse_step", 1, ARCH_MAX_LAYERS, &step) < 0 ||
        opt_int(c, "interleave_moe_layer_step", 1, ARCH_MAX_LAYERS, &interleave) < 0)
        return -1;
    for (int64_t i = 0; i < a->layers; i++)
        a->layer_moe[i] = i >= first_dense && i % freq == 0 && (i + 1) % step == 0 &&
                          (i + 1) % interleave == 0;
    char qname[160];
    if (arch_lookup(c, "moe_layers", qname, sizeof qname)) {
        memset(a->layer_moe, 0, sizeof a->layer_moe);
        if (layer_list(c, a, "moe_layers", 1) < 0)
            return -1;
    }
    return layer_list(c, a, "mlp_only_layers", 0) < 0 ? -1 : 0;
}

/* FFN kind of every layer; MoE when num_experts, n_routed_experts or
 * num_local_experts > 0 (the first of them that is, in that order). */
static int parse_ffn(const cfg *c, arch *a)
{
    int64_t num_experts = 0, n_routed = 0, n_local = 0, inter = 0, inter_mlp = 0, step = 0;
    int r_mlp, mlp_bias = 0;
    char qname[160];
    if (opt_int(c, "intermediate_size", 1, MAX_WIDTH, &inter) < 0 ||
        (r_mlp = opt_int(c, "intermediate_size_mlp", 1, MAX_WIDTH, &inter_mlp)) < 0 ||
        opt_int(c, "interleave_moe_layer_step", 1, ARCH_MAX_LAYERS, &step) < 0 ||
        opt_int(c, "num_experts", 0, MAX_EXPERTS, &num_experts) < 0 ||
        opt_int(c, "n_routed_experts", 0, MAX_EXPERTS, &n_routed) < 0 ||
        opt_int(c, "num_local_experts", 0, MAX_EXPERTS, &n_local) < 0 ||
        opt_bool(c, "mlp_bias", &mlp_bias) < 0)
        return -1;
    a->experts = n_routed > 0 ? n_routed : num_experts > 0 ? num_experts : n_local;
    a->has_moe = a->experts > 0;
    int layout = n_routed > 0 || num_experts > 0 ? EXPERTS_SIZED
                 : r_mlp || step > 0             ? EXPERTS_LLAMA4
                                                 : EXPERTS_LOCAL;
    if (!a->has_moe)
        layout = EXPERTS_SIZED;
    a->intermediate = layout == EXPERTS_SIZED ? inter : layout == EXPERTS_LLAMA4 ? inter_mlp : 0;
    if (a->has_moe && (parse_moe(c, a, layout, inter) < 0 || place_moe(c, a) < 0))
        return -1;
    for (int64_t i = 0; i < a->layers; i++)
        a->dense_layers += !a->layer_moe[i];
    if (a->dense_layers > 0 && a->intermediate == 0)
        return cp_fail_at(c->err, arch_at(c),
                          layout == EXPERTS_LOCAL
                              ? "field \"intermediate_size\" is the expert width when the "
                                "experts are given as num_local_experts, so the %" PRId64
                                " of %" PRId64 " layers with a dense FFN have no width"
                          : layout == EXPERTS_LLAMA4
                              ? "missing required field \"intermediate_size_mlp\" (%" PRId64
                                " of %" PRId64 " layers have a dense FFN)"
                              : "missing required field \"intermediate_size\" (%" PRId64
                                " of %" PRId64 " layers have a dense FFN)",
                          a->dense_layers, a->layers);
    if (mlp_bias) {
        arch_lookup(c, "mlp_bias", qname, sizeof qname);
        arch_warn_field(c, a, qname, "true", "biases on the MLP projections", "MLP",
                   "no MLP biases are counted or simulated");
    }
    return 0;
}

/* --- encoders and aliases ------------------------------------------------ */

/* Whether the model's family has Qwen3-Omni's audio encoder (arch_towers.c). */
int arch_family_audio(const cfg *c)
{
    return c->fam && c->fam->audio;
}

/* Fields another field states too, read to check they agree: gpt-oss's
 * experts_per_token (its original checkpoint's name of num_experts_per_tok)
 * and MLA's qk_head_dim (= qk_nope_head_dim + qk_rope_head_dim,
 * DeepseekV3Config). */
static int check_aliases(const cfg *c, const arch *a)
{
    char qname[160];
    int64_t v = 0;
    int r = opt_int(c, "experts_per_token", 1, MAX_EXPERTS, &v);
    if (r < 0)
        return -1;
    if (r > 0 && v != a->top_k)
        return cp_fail_at(c->err, arch_at(c), "field \"%s\" (%" PRId64 ") differs from "
                          "num_experts_per_tok (%" PRId64 ")",
                          (arch_lookup(c, "experts_per_token", qname, sizeof qname), qname), v,
                          a->top_k);
    if (a->attn != ATTN_MLA)
        return 0;
    r = opt_int(c, "qk_head_dim", 1, MAX_DIM, &v);
    if (r < 0)
        return -1;
    if (r > 0 && v != a->qk_nope_dim + a->qk_rope_dim)
        return cp_fail_at(c->err, arch_at(c), "field \"qk_head_dim\" (%" PRId64 ") must be "
                          "qk_nope_head_dim + qk_rope_head_dim (%" PRId64 ")", v,
                          a->qk_nope_dim + a->qk_rope_dim);
    return 0;
}

/* --- loading ------------------------------------------------------------- */

/* Warnings come in this order: attention (warn_attention), windows and
 * layer kinds (parse_window), FFN (parse_ffn), quantization (parse_quant). */
static int parse(cfg *c, arch *a)
{
    if (pick_text(c) < 0 || parse_class(c, a) < 0 || parse_common(c, a) < 0 ||
        parse_attention(c, a) < 0 || warn_attention(c, a) < 0 || parse_window(c, a) < 0 ||
        parse_ffn(c, a) < 0 || arch_parse_quant(c, a) < 0 || check_aliases(c, a) < 0 ||
        arch_parse_towers(c, a) < 0)
        return -1;
    double n = arch_params_exact(a);
    if (n > MAX_PARAMS)
        return cp_fail_at(c->err, arch_at(c),
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
    struct stat st = {0};
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        cp_fail_at(err, (cp_loc){path, 0, 0}, "a model config is a JSON file (config.json); "
                   "this is %s", S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
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

int arch_load_fields(const char *spec, const char *base_dir, arch *out, arch_fields *fields,
                     cp_err *err)
{
    memset(out, 0, sizeof *out);
    if (locate(spec, base_dir, out, err) < 0)
        return -1;
    json_t *root = load_json(out->path, err);
    if (!root)
        return -1;
    seen *sn = calloc(1, sizeof *sn);
    if (!sn) {
        json_decref(root);
        return cp_fail(err, CP_EXIT_INTERNAL, "out of memory reading %s", out->path);
    }
    cfg c = {.path = out->path, .top = root, .seen = sn, .err = err};
    int rc = parse(&c, out);
    if (rc == 0)
        arch_warn_unread(&c, out, fields);
    free(sn);
    json_decref(root);
    return rc;
}

int arch_load(const char *spec, const char *base_dir, arch *out, cp_err *err)
{
    return arch_load_fields(spec, base_dir, out, NULL, err);
}
