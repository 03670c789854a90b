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

/* The dotted names of the fields the loader read and of those it warned,
 * for arch_fields and the warning on fields not read. */
#define SEEN_MAX 1024
typedef struct seen {
    int n;
    char name[SEEN_MAX][ARCH_FIELD_LEN];
    uint8_t warned[SEEN_MAX]; /* 1: warned (a field warned as a whole covers
                                 its members) */
} seen;

struct family;

/* The JSON being read and where to report problems. */
typedef struct cfg {
    const char *path;
    const json_t *top;
    const json_t *text;    /* nested text config, NULL when none */
    const char *text_name; /* its dotted name, for messages */
    const struct family *fam; /* the model family (families), NULL if unknown */
    int fam_by_class;      /* fam was named by an architectures[] class, not
                              by model_type */
    char fam_via[96];      /* how fam was found, for warnings */
    seen *seen;            /* fields read and warned, NULL: not recorded */
    cp_err *err;
} cfg;

static cp_loc at(const cfg *c)
{
    return (cp_loc){c->path, 0, 0};
}

/* Record the field named qname as read (warned = 0) or warned (1). */
static void note(const cfg *c, const char *qname, int warned)
{
    seen *s = c->seen;
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->name[i], qname) == 0) {
            s->warned[i] |= (uint8_t)warned;
            return;
        }
    if (s->n == SEEN_MAX)
        return; /* more fields than any config: the rest count as not read */
    snprintf(s->name[s->n], sizeof s->name[0], "%s", qname);
    s->warned[s->n++] = (uint8_t)warned;
}

/* The value of `key` (nested text config first, then top level) and, in
 * qname, the dotted name it was found under; NULL when absent or null.  A
 * value found is recorded as read. */
static const json_t *lookup(const cfg *c, const char *key, char *qname, size_t n)
{
    const json_t *v = c->text ? json_object_get(c->text, key) : NULL;
    if (v && !json_is_null(v)) {
        snprintf(qname, n, "%s.%s", c->text_name, key);
        note(c, qname, 0);
        return v;
    }
    snprintf(qname, n, "%s", key);
    v = json_object_get(c->top, key);
    if (v && !json_is_null(v))
        note(c, qname, 0);
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

/* Member `key` of the object o whose dotted name is oname, with its own
 * dotted name in qname; NULL when absent or null. */
static const json_t *member(const json_t *o, const char *oname, const char *key, char *qname,
                            size_t n)
{
    snprintf(qname, n, "%s.%s", oname, key);
    const json_t *v = json_object_get(o, key);
    return json_is_null(v) ? NULL : v;
}

/* member of the config's object named oname, recorded as read when found. */
static const json_t *field(const cfg *c, const json_t *o, const char *oname, const char *key,
                           char *qname, size_t n)
{
    const json_t *v = member(o, oname, key, qname, n);
    if (v)
        note(c, qname, 0);
    return v;
}

/* The present value v, named qname, as an integer in [lo, hi]; 0 or -1. */
static int want_int(const cfg *c, const json_t *v, const char *qname, int64_t lo, int64_t hi,
                    int64_t *out)
{
    char got[64];
    if (json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi) {
        *out = json_integer_value(v);
        return 0;
    }
    return cp_fail_at(c->err, at(c),
                      "field \"%s\" must be an integer in [%" PRId64 ", %" PRId64 "], got %s",
                      qname, lo, hi, show(v, got, sizeof got));
}

/* The present value v as true/false (or 0/1 as in hand-written configs). */
static int want_bool(const cfg *c, const json_t *v, const char *qname, int *out)
{
    char got[64];
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

/* The present value v as a string shorter than n into buf; `what` says what
 * was expected. */
static int want_str(const cfg *c, const json_t *v, const char *qname, char *buf, size_t n,
                    const char *what)
{
    char got[64];
    if (json_is_string(v) && json_string_length(v) < n) {
        snprintf(buf, n, "%s", json_string_value(v));
        return 0;
    }
    return cp_fail_at(c->err, at(c), "field \"%s\" must be %s, got %s", qname, what,
                      show(v, got, sizeof got));
}

/* Integer `key` into *out when present.  Returns 1 when read, 0 when absent
 * (*out untouched), -1 when not an integer in [lo, hi]. */
static int opt_int(const cfg *c, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    char qname[160];
    const json_t *v = lookup(c, key, qname, sizeof qname);
    if (!v)
        return 0;
    return want_int(c, v, qname, lo, hi, out) < 0 ? -1 : 1;
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
 * when present.  Returns 1 when read, 0 when absent (*out untouched), -1. */
static int opt_bool(const cfg *c, const char *key, int *out)
{
    char qname[160];
    const json_t *v = lookup(c, key, qname, sizeof qname);
    if (!v)
        return 0;
    return want_bool(c, v, qname, out) < 0 ? -1 : 1;
}

/* --- warnings ------------------------------------------------------------ */

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

void arch_warn(arch *a, const char *fmt, ...)
{
    if (a->nwarn == ARCH_MAX_WARN) {
        snprintf(a->warn[ARCH_MAX_WARN - 1], sizeof a->warn[0],
                 "%.120s: further warnings omitted (more than %d)", base_name(a->path),
                 ARCH_MAX_WARN - 1);
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->warn[a->nwarn++], sizeof a->warn[0], fmt, ap);
    va_end(ap);
}

/* A field, shown as `value`, that changes the `work` of the simulated
 * forward pass in a way that is not modelled; `what` says what it does,
 * `how` what is simulated instead. */
static void warn_field(const cfg *c, arch *a, const char *qname, const char *value,
                       const char *what, const char *work, const char *how)
{
    note(c, qname, 1);
    arch_warn(a, "%s: field \"%s\" = %s (%s) changes the %s work and is not modelled: %s",
              base_name(c->path), qname, value, what, work, how);
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
    return cp_fail_at(c->err, at(c),
                      "field \"%s\" must be a dtype name such as \"bfloat16\", got %s", qname,
                      show(v, got, sizeof got));
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
} family;

static const family families[] = {
    {"Qwen3", "Qwen3ForCausalLM", {"qwen3"}, 1, 0, 0},
    {"Qwen3-MoE", "Qwen3MoeForCausalLM", {"qwen3_moe"}, 1, 0, 0},
    {"Qwen3-Next", "Qwen3NextForCausalLM", {"qwen3_next"}, 1, 0, 0},
    {"Qwen3-Omni", "Qwen3OmniMoe*", /* ...ForConditionalGeneration, ...ThinkerFor... */
     {"qwen3_omni_moe", "qwen3_omni_moe_thinker", "qwen3_omni_moe_text"}, 1, 0, 0},
    {"Qwen3-VL", "Qwen3VLForConditionalGeneration", {"qwen3_vl", "qwen3_vl_text"}, 1, 0, 0},
    {"Qwen3-VL-MoE", "Qwen3VLMoeForConditionalGeneration", {"qwen3_vl_moe",
     "qwen3_vl_moe_text"}, 1, 0, 0},
    {"Gemma3", "Gemma3ForCausalLM", {"gemma3_text"}, 1, 0, 1},
    {"Gemma3", "Gemma3ForConditionalGeneration", {"gemma3"}, 1, 0, 1},
    {"Gemma2", "Gemma2ForCausalLM", {"gemma2"}, 0, 0, 1},
    {"Gemma", "GemmaForCausalLM", {"gemma"}, 0, 0, 1},
    {"OLMo2", "Olmo2ForCausalLM", {"olmo2"}, 1, 0, 0},
    {"OLMoE", "OlmoeForCausalLM", {"olmoe"}, 1, 0, 0},
    {"DeepSeek-V3", "DeepseekV3*", {"deepseek_v3"}, 0, 1, 0},
    {"DeepSeek-V3.2", "DeepseekV32*", {"deepseek_v32"}, 0, 1, 0},
    {"GLM-4-MoE", "Glm4Moe*", {"glm4_moe"}, 0, 1, 0},
    {"GLM-MoE-DSA", "GlmMoeDsa*", {"glm_moe_dsa"}, 0, 1, 0},
    {"Llama", "LlamaForCausalLM", {"llama"}, 0, 0, 0},
    {"Llama-4", "Llama4*", {"llama4", "llama4_text"}, 0, 0, 0},
    {"Mistral", "MistralForCausalLM", {"mistral"}, 0, 0, 0},
    {"Mixtral", "MixtralForCausalLM", {"mixtral"}, 0, 0, 0},
    {"Qwen2", "Qwen2ForCausalLM", {"qwen2"}, 0, 0, 0},
    {"Qwen2-MoE", "Qwen2MoeForCausalLM", {"qwen2_moe"}, 0, 0, 0},
    {"GPT-OSS", "GptOssForCausalLM", {"gpt_oss"}, 0, 0, 0},
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
    note(c, qname, 0);
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
    return cp_fail_at(c->err, at(c),
                      "field \"%s\" must be a list of class names shorter than %zu characters, "
                      "got %s", qname, sizeof a->arch_class, show(v, got, sizeof got));
}

/* model_type, read where lookup finds it and then at the other levels
 * (the top level, thinker_config): the first of a known family names c->fam
 * when no class did. */
static int parse_type(cfg *c)
{
    char qname[160], got[64];
    const json_t *thinker = json_object_get(c->top, "thinker_config");
    const json_t *v[3] = {lookup(c, "model_type", qname, sizeof qname),
                          json_object_get(c->top, "model_type"),
                          json_is_object(thinker) ? json_object_get(thinker, "model_type") : NULL};
    const char *name[3] = {qname, "model_type", "thinker_config.model_type"};
    for (int i = 0; i < 3; i++) {
        if (!v[i] || json_is_null(v[i]))
            continue;
        if (!json_is_string(v[i]))
            return cp_fail_at(c->err, at(c), "field \"%s\" must be a string, got %s", name[i],
                              show(v[i], got, sizeof got));
        note(c, name[i], 0);
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
                  "(no architectures[] class cpsim knows)", base_name(c->path), what, chosen,
                  c->fam->name, c->fam_via);
    else
        arch_warn(a, "%s: %s: %s assumed (no architectures[] class or model_type cpsim knows "
                  "the family of)", base_name(c->path), what, chosen);
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
    if (json_is_object(thinker))
        note(c, "thinker_config", 0);
    if (c->text)
        note(c, c->text_name, 0);
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
    const json_t *rs = lookup(c, "rope_scaling", rn, sizeof rn), *v;
    if (!rs)
        rs = lookup(c, "rope_parameters", rn, sizeof rn);
    a->max_context = a->max_position;
    if (!rs)
        return 0;
    if (!json_is_object(rs))
        return cp_fail_at(c->err, at(c), "field \"%s\" must be an object, got %s", rn,
                          show(rs, got, sizeof got));
    if (((v = field(c, rs, rn, "rope_type", qname, sizeof qname)) ||
         (v = field(c, rs, rn, "type", qname, sizeof qname))) &&
        want_str(c, v, qname, type, sizeof type, "a RoPE type such as \"yarn\"") < 0)
        return -1;
    int64_t orig = 0;
    if ((v = field(c, rs, rn, "original_max_position_embeddings", qname, sizeof qname)) &&
        want_int(c, v, qname, 1, MAX_POSITION, &orig) < 0)
        return -1;
    v = field(c, rs, rn, "factor", qname, sizeof qname);
    if (v && (!json_is_number(v) || json_number_value(v) <= 0 || json_number_value(v) > 1e6))
        return cp_fail_at(c->err, at(c), "field \"%s\" must be a number in (0, 1e6], got %s",
                          qname, show(v, got, sizeof got));
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
                      "transformers default of the %s family (named by %s)", base_name(c->path),
                      a->tie_embeddings ? "tied" : "untied", c->fam->name, c->fam_via);
        else
            arch_warn(a, "%s: field \"tie_word_embeddings\" is absent: untied embeddings "
                      "assumed (no architectures[] class or model_type cpsim knows the family "
                      "of)", base_name(c->path));
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
    const json_t *v = lookup(c, "partial_rotary_factor", qname, sizeof qname);
    const json_t *rp = lookup(c, "rope_parameters", rp_name, sizeof rp_name);
    if (!v && json_is_object(rp))
        v = field(c, rp, rp_name, "partial_rotary_factor", qname, sizeof qname);
    if (v && (!json_is_number(v) || json_number_value(v) <= 0 || json_number_value(v) > 1))
        return cp_fail_at(c->err, at(c), "field \"%s\" must be a number in (0, 1], got %s",
                          qname, show(v, got, sizeof got));
    if (v && json_number_value(v) < 1)
        warn_field(c, a, qname, show(v, got, sizeof got), "RoPE on part of each head", "RoPE",
                   "RoPE is simulated on the whole head");

    int gate = 0;
    int64_t chunk = 0;
    if (opt_bool(c, "attn_output_gate", &gate) < 0 ||
        opt_int(c, "attention_chunk_size", 1, MAX_POSITION, &chunk) < 0)
        return -1;
    if (gate) {
        lookup(c, "attn_output_gate", qname, sizeof qname);
        warn_field(c, a, qname, "true", "a sigmoid gate on the attention output", "attention",
                   "no output gate is simulated");
    }
    if (chunk > 0) {
        lookup(c, "attention_chunk_size", qname, sizeof qname);
        snprintf(val, sizeof val, "%" PRId64, chunk);
        warn_field(c, a, qname, val, "chunked local attention", "attention",
                   "attention is simulated as full causal");
    }

    /* no_rope_layers (Llama4TextConfig, SmolLM3Config): 1 = the layer uses
     * RoPE, 0 = NoPE; an empty list makes transformers build its default,
     * a NoPE layer every no_rope_layer_interval layers. */
    v = lookup(c, "no_rope_layers", qname, sizeof qname);
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
        return cp_fail_at(c->err, at(c),
                          "field \"%s\" must be a list of 0 or 1 for each of the %" PRId64
                          " layers, got %s", qname, a->layers, show(v, got, sizeof got));
    if (json_array_size(v) == 0)
        warn_field(c, a, qname, "[]", "NoPE every no_rope_layer_interval-th layer by default",
                   "RoPE", "RoPE is simulated on every layer");
    else if (nope > 0) {
        snprintf(val, sizeof val, "0 on %" PRId64 " of %" PRId64 " layers", nope, a->layers);
        warn_field(c, a, qname, val, "layers without RoPE", "RoPE",
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
    const json_t *v = lookup(c, "layer_types", qname, sizeof qname);
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
        return cp_fail_at(c->err, at(c),
                          "field \"%s\" must be a list of %" PRId64 " attention kinds, one per "
                          "layer, got %s", qname, a->layers, show(v, got, sizeof got));
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
        warn_field(c, a, qname, val, "neither full nor sliding", "attention",
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
        lookup(c, "full_attention_interval", qname, sizeof qname);
        snprintf(val, sizeof val, "%" PRId64, full_every);
        warn_field(c, a, qname, val, "linear attention on the other layers", "attention",
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
            lookup(c, "layer_types", qname, sizeof qname);
            return cp_fail_at(c->err, at(c),
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
    const json_t *v = lookup(c, "scoring_func", qname, sizeof qname);
    if (v) {
        if (json_is_string(v) && (!strcmp(json_string_value(v), "sigmoid") ||
                                  !strcmp(json_string_value(v), "softmax"))) {
            a->router_sigmoid = !strcmp(json_string_value(v), "sigmoid");
            return 0;
        }
        return cp_fail_at(c->err, at(c), "field \"%s\" must be \"softmax\" or \"sigmoid\", got %s",
                          qname, show(v, got, sizeof got));
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
        return cp_fail_at(c->err, at(c), "missing required field \"moe_intermediate_size\"%s",
                          why);
    if (r == 0 && inter == 0)
        return cp_fail_at(c->err, at(c),
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
    const json_t *v = lookup(c, key, qname, sizeof qname);
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
    return cp_fail_at(c->err, at(c),
                      "field \"%s\" must be a list of layer indices in [0, %" PRId64 "], got %s",
                      qname, a->layers - 1, show(v, got, sizeof got));
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
    if (lookup(c, "moe_layers", qname, sizeof qname)) {
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
        return cp_fail_at(c->err, at(c),
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
        lookup(c, "mlp_bias", qname, sizeof qname);
        warn_field(c, a, qname, "true", "biases on the MLP projections", "MLP",
                   "no MLP biases are counted or simulated");
    }
    return 0;
}

/* --- quantization_config -------------------------------------------------- */

/* [rows, cols], two positive integers, into blk. */
static int block_pair(const cfg *c, const json_t *v, const char *qname, int64_t *blk)
{
    char got[64];
    const json_t *r = json_array_get(v, 0), *k = json_array_get(v, 1);
    if (json_is_array(v) && json_array_size(v) == 2 && json_is_integer(r) &&
        json_is_integer(k) && json_integer_value(r) >= 1 && json_integer_value(r) <= MAX_WIDTH &&
        json_integer_value(k) >= 1 && json_integer_value(k) <= MAX_WIDTH) {
        blk[0] = json_integer_value(r);
        blk[1] = json_integer_value(k);
        return 0;
    }
    return cp_fail_at(c->err, at(c),
                      "field \"%s\" must be a block shape [rows, cols] of positive integers, "
                      "got %s", qname, show(v, got, sizeof got));
}

/* Scale granularities of compressed-tensors' QuantizationStrategy that
 * apply to weights (compressed_tensors/quantization/quant_args.py). */
static const char *const weight_strategies[] = {
    "tensor", "channel", "group", "block", "tensor_group", NULL,
};

/* Members `key` of x and y are equal JSON, null counting as absent. */
static int same_member(const json_t *x, const json_t *y, const char *key)
{
    const json_t *u = json_object_get(x, key), *v = json_object_get(y, key);
    u = json_is_null(u) ? NULL : u;
    v = json_is_null(v) ? NULL : v;
    return (!u && !v) || json_equal(u, v);
}

/* compressed-tensors: the scheme of config_groups' first group by name
 * (weights.num_bits / type / strategy / group_size / block_structure /
 * symmetric, input_activations.dynamic; targets other than ["Linear"] are
 * warned).  Groups whose weights or input activations
 * differ from it, a strategy outside weight_strategies, a missing
 * config_groups and a kv_cache_scheme are warned. */
static int parse_compressed(const cfg *c, arch *a, const json_t *q, const char *qn)
{
    /* each dotted name is sized for its parent's plus the longest key */
    char gname[192], sub[240], wname[264], qname[288], got[64], val[64];
    const json_t *groups = field(c, q, qn, "config_groups", gname, sizeof gname), *v;
    const char *key, *first = NULL;
    json_t *g;
    if (groups && !json_is_object(groups))
        return cp_fail_at(c->err, at(c), "field \"%s\" must be an object, got %s", gname,
                          show(groups, got, sizeof got));
    if (groups)
        json_object_foreach((json_t *)groups, key, g)
            if (!first || strcmp(key, first) < 0)
                first = key;
    if (!first) {
        snprintf(qname, sizeof qname, "%s.quant_method", qn);
        warn_field(c, a, qname, "\"compressed-tensors\"", "no config_groups: scheme unknown",
                   "GEMM/memory", "quant_bits is left 0");
    } else {
        const json_t *grp = json_object_get(groups, first), *w, *in;
        snprintf(sub, sizeof sub, "%s.%.40s", gname, first);
        note(c, sub, 0);
        if (!json_is_object(grp))
            return cp_fail_at(c->err, at(c), "field \"%s\" must be an object, got %s", sub,
                              show(grp, got, sizeof got));
        w = field(c, grp, sub, "weights", qname, sizeof qname);
        if (w && !json_is_object(w))
            return cp_fail_at(c->err, at(c), "field \"%s\" must be an object, got %s", qname,
                              show(w, got, sizeof got));
        int64_t bits = 0;
        snprintf(wname, sizeof wname, "%s.weights", sub);
        if (w && (v = field(c, w, wname, "num_bits", qname, sizeof qname)) &&
            want_int(c, v, qname, 1, 64, &bits) < 0)
            return -1;
        a->quant_bits = (int)bits;
        if (w && (v = field(c, w, wname, "type", qname, sizeof qname)) &&
            want_str(c, v, qname, a->quant_type, sizeof a->quant_type,
                     "a number type such as \"float\" or \"int\"") < 0)
            return -1;
        if (w && (v = field(c, w, wname, "group_size", qname, sizeof qname)) &&
            want_int(c, v, qname, 1, MAX_WIDTH, &a->quant_group) < 0)
            return -1;
        if (w && (v = field(c, w, wname, "block_structure", qname, sizeof qname)) &&
            block_pair(c, v, qname, a->quant_block) < 0)
            return -1;
        if (w && (v = field(c, w, wname, "strategy", qname, sizeof qname))) {
            char strategy[32];
            if (want_str(c, v, qname, strategy, sizeof strategy, "a strategy name") < 0)
                return -1;
            int known = 0;
            for (const char *const *k = weight_strategies; *k; k++)
                known |= strcmp(*k, strategy) == 0;
            if (known)
                snprintf(a->quant_strategy, sizeof a->quant_strategy, "%.15s", strategy);
            else
                warn_field(c, a, qname, show(v, got, sizeof got), "unknown weight strategy",
                           "GEMM/memory", "quant_strategy is left empty");
        }
        int sym = 1;
        if (w && (v = field(c, w, wname, "symmetric", qname, sizeof qname)) &&
            want_bool(c, v, qname, &sym) < 0)
            return -1;
        a->quant_zeros = !sym; /* asymmetric: a zero point per scale */
        v = field(c, grp, sub, "targets", qname, sizeof qname);
        if (v && !(json_is_array(v) && json_array_size(v) == 1 &&
                   json_is_string(json_array_get(v, 0)) &&
                   !strcmp(json_string_value(json_array_get(v, 0)), "Linear")))
            warn_field(c, a, qname, show(v, got, sizeof got), "the modules the scheme applies to",
                       "GEMM/memory", "it is applied to every linear but the float exceptions");
        in = field(c, grp, sub, "input_activations", qname, sizeof qname);
        if (in && !json_is_object(in))
            return cp_fail_at(c->err, at(c), "field \"%s\" must be an object, got %s", qname,
                              show(in, got, sizeof got));
        snprintf(wname, sizeof wname, "%s.input_activations", sub);
        v = in ? field(c, in, wname, "dynamic", qname, sizeof qname) : NULL;
        if (v && json_is_boolean(v))
            snprintf(a->quant_act, sizeof a->quant_act, "%s",
                     json_is_true(v) ? "dynamic" : "static");
        else if (v && want_str(c, v, qname, a->quant_act, sizeof a->quant_act,
                               "true, false or a dynamic kind such as \"local\"") < 0)
            return -1;
        int differ = 0;
        json_object_foreach((json_t *)groups, key, g)
            differ += !json_is_object(g) || !same_member(g, grp, "weights") ||
                      !same_member(g, grp, "input_activations");
        if (differ > 0) {
            snprintf(val, sizeof val, "%zu groups", json_object_size(groups));
            snprintf(sub, sizeof sub, "the first, \"%.40s\", is recorded", first);
            warn_field(c, a, gname, val, "mixed weight schemes", "GEMM/memory", sub);
        }
    }
    v = field(c, q, qn, "kv_cache_scheme", qname, sizeof qname);
    if (v)
        warn_field(c, a, qname, json_is_object(v) ? "{...}" : show(v, got, sizeof got),
                   "quantized KV cache", "KV-cache",
                   "the KV cache is simulated at the run's KV dtype");
    return 0;
}

/* GPTQ / AWQ (transformers GPTQConfig, AwqConfig): integer weights of
 * `bits` (AwqConfig default 4; GPTQConfig has no default, so required),
 * scales per group_size input columns (default 128 in both classes; -1: per
 * channel); activations stay unquantized.  Zero points: AWQ stores qzeros
 * when zero_point (default True); GPTQ's QuantLinear stores qzeros whatever
 * `sym` says, and g_idx (models/quant.c prices both). */
static int parse_int_weights(const cfg *c, arch *a, const json_t *q, const char *qn)
{
    char qname[224];
    int awq = strcmp(a->quant_method, "awq") == 0;
    int64_t bits = 4, group = 128; /* AwqConfig bits=4; group_size=128 in both */
    int zeros = 1;                 /* AwqConfig zero_point=True */
    const json_t *v = field(c, q, qn, "bits", qname, sizeof qname);
    if (!v && !awq)
        return cp_fail_at(c->err, at(c), "missing required field \"%s.bits\" (gptq)", qn);
    if (v && want_int(c, v, qname, 1, 16, &bits) < 0)
        return -1;
    if (!v)
        arch_warn(a, "%s: field \"%s\" is absent: 4-bit weights, AwqConfig's default",
                  base_name(c->path), qname);
    a->quant_bits = (int)bits;
    snprintf(a->quant_type, sizeof a->quant_type, "int");
    if (awq && (v = field(c, q, qn, "zero_point", qname, sizeof qname)) &&
        want_bool(c, v, qname, &zeros) < 0)
        return -1;
    a->quant_zeros = zeros;
    v = field(c, q, qn, "group_size", qname, sizeof qname);
    if (!v)
        arch_warn(a, "%s: field \"%s\" is absent: groups of 128 input columns, the "
                  "transformers default", base_name(c->path), qname);
    if (v && json_is_integer(v) && json_integer_value(v) == -1) {
        snprintf(a->quant_strategy, sizeof a->quant_strategy, "channel");
        return 0;
    }
    if (v && want_int(c, v, qname, 1, MAX_WIDTH, &group) < 0)
        return -1;
    snprintf(a->quant_strategy, sizeof a->quant_strategy, "group");
    a->quant_group = group;
    return 0;
}

/* modules_to_not_convert (or ignored_layers, as vLLM's Fp8Config also
 * reads it; compressed-tensors' ignore): modules left unquantized.  A list
 * of only the LM head, the embedding and routers (named by their last
 * component: lm_head, embed_tokens, gate, router), which the float
 * exceptions of models/quant.h keep in floating point anyway, is what cpsim
 * simulates; any other entry is warned (the exceptions apply instead). */
static int warn_not_converted(const cfg *c, arch *a, const json_t *q, const char *qn)
{
    char qname[224], val[32];
    const char *keys[] = {"modules_to_not_convert", "ignored_layers", "ignore"};
    for (int k = 0; k < 3; k++) {
        const json_t *v = field(c, q, qn, keys[k], qname, sizeof qname), *e;
        size_t i, other = 0;
        if (!v)
            continue;
        json_array_foreach(v, i, e) {
            const char *m = json_string_value(e), *dot = m ? strrchr(m, '.') : NULL;
            const char *last = dot ? dot + 1 : m ? m : "";
            other += strcmp(last, "lm_head") && strcmp(last, "embed_tokens") &&
                     strcmp(last, "gate") && strcmp(last, "router");
        }
        if (json_is_array(v) && other == 0)
            continue; /* only modules those rules keep in floating point */
        snprintf(val, sizeof val, "%zu entries", json_is_array(v) ? json_array_size(v) : 1);
        warn_field(c, a, qname, val, "modules kept unquantized", "GEMM/memory",
                   "cpsim's float exceptions apply instead");
    }
    return 0;
}

/* quantization_config, recorded for the precision model; nothing about the
 * run's precision is decided here.  Common fields: quant_method,
 * weight_block_size, fmt, activation_scheme.  A config with only
 * weight_block_size (the bundled DeepSeek-V3 abridgement of {"quant_method":
 * "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size":
 * [128, 128]}) is fp8.  fp8 is 8-bit float, per tensor unless
 * weight_block_size (as vLLM's Fp8Config reads it); compressed-tensors,
 * gptq and awq as above; any other method is warned. */
static int parse_quant(const cfg *c, arch *a)
{
    char qn[160], qname[224], got[64];
    const json_t *q = lookup(c, "quantization_config", qn, sizeof qn), *v;
    if (!q)
        return 0;
    if (!json_is_object(q))
        return cp_fail_at(c->err, at(c), "field \"%s\" must be an object, got %s", qn,
                          show(q, got, sizeof got));
    if (((v = field(c, q, qn, "quant_method", qname, sizeof qname)) &&
         want_str(c, v, qname, a->quant_method, sizeof a->quant_method, "a method name") < 0) ||
        ((v = field(c, q, qn, "weight_block_size", qname, sizeof qname)) &&
         block_pair(c, v, qname, a->quant_block) < 0) ||
        ((v = field(c, q, qn, "fmt", qname, sizeof qname)) &&
         want_str(c, v, qname, a->quant_fmt, sizeof a->quant_fmt,
                  "a format such as \"e4m3\"") < 0) ||
        ((v = field(c, q, qn, "activation_scheme", qname, sizeof qname)) &&
         want_str(c, v, qname, a->quant_act, sizeof a->quant_act,
                  "\"dynamic\" or \"static\"") < 0))
        return -1;
    if (a->quant_method[0] == 0 && a->quant_block[0] > 0)
        snprintf(a->quant_method, sizeof a->quant_method, "fp8");
    const char *m = a->quant_method;
    if (strcmp(m, "fp8") == 0) {
        a->quant_bits = 8; /* float8: e4m3 or e5m2 */
        snprintf(a->quant_type, sizeof a->quant_type, "float");
        snprintf(a->quant_strategy, sizeof a->quant_strategy, "%s",
                 a->quant_block[0] > 0 ? "block" : "tensor");
        return warn_not_converted(c, a, q, qn);
    }
    if (strcmp(m, "compressed-tensors") == 0)
        return parse_compressed(c, a, q, qn) < 0 ? -1 : warn_not_converted(c, a, q, qn);
    if (strcmp(m, "gptq") == 0 || strcmp(m, "awq") == 0) {
        if (parse_int_weights(c, a, q, qn) < 0)
            return -1;
        return warn_not_converted(c, a, q, qn);
    }
    if (m[0] == 0 && json_object_size(q) == 0)
        return 0;
    if (m[0] == 0) {
        warn_field(c, a, qn, "{...}", "no quant_method", "GEMM/memory",
                   "the quantization is not recorded");
        return 0;
    }
    v = field(c, q, qn, "quant_method", qname, sizeof qname);
    note(c, qn, 1); /* the warning covers every member */
    warn_field(c, a, qname, show(v, got, sizeof got), "unknown quantization method",
               "GEMM/memory", "quant_bits is left 0");
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
    double w = h * q + 2 * h * kv + q * h; /* q, k and v, o */
    if (a->qk_norm)
        w += 2 * (double)a->head_dim; /* q_norm, k_norm */
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
    return 2 * a->kv_heads * a->head_dim; /* K and V */
}

/* --- other towers and aliases ------------------------------------------ */

/* Encoders and decoders beside the text model (Llama-4 and Gemma-3
 * vision_config, Qwen3-Omni's thinker_config.audio_config and
 * vision_config, its talker_config): requests are simulated as text, so
 * their work and their weights are not; each is warned as a whole. */
static void warn_towers(const cfg *c, arch *a)
{
    static const char *const towers[][2] = {
        {"vision_config", "an image encoder"},
        {"audio_config", "an audio encoder"},
        {"talker_config", "a speech decoder"},
    };
    const json_t *thinker = json_object_get(c->top, "thinker_config");
    char qname[64];
    for (int lvl = 0; lvl < 2; lvl++)
        for (size_t t = 0; t < sizeof towers / sizeof towers[0]; t++) {
            const json_t *o = lvl ? (json_is_object(thinker) ? thinker : NULL) : c->top;
            const json_t *v = o ? json_object_get(o, towers[t][0]) : NULL;
            if (!v || json_is_null(v))
                continue;
            snprintf(qname, sizeof qname, "%s%s", lvl ? "thinker_config." : "", towers[t][0]);
            warn_field(c, a, qname, "{...}", towers[t][1], "encoder",
                       "its weights and work are not counted");
        }
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
        return cp_fail_at(c->err, at(c), "field \"%s\" (%" PRId64 ") differs from "
                          "num_experts_per_tok (%" PRId64 ")",
                          (lookup(c, "experts_per_token", qname, sizeof qname), qname), v,
                          a->top_k);
    if (a->attn != ATTN_MLA)
        return 0;
    r = opt_int(c, "qk_head_dim", 1, MAX_DIM, &v);
    if (r < 0)
        return -1;
    if (r > 0 && v != a->qk_nope_dim + a->qk_rope_dim)
        return cp_fail_at(c->err, at(c), "field \"qk_head_dim\" (%" PRId64 ") must be "
                          "qk_nope_head_dim + qk_rope_head_dim (%" PRId64 ")", v,
                          a->qk_nope_dim + a->qk_rope_dim);
    return 0;
}

/* --- what became of each field ----------------------------------------- */

/* Fields known not to change the simulated work, by name inside the text
 * config (or at the top level); a name starting with '*' matches any
 * field name ending in the rest, "_*" any starting with '_'.  Only fields
 * the loader did not read are looked up here. */
static const struct {
    const char *name, *why;
} not_work[] = {
    {"_*", "a note for readers (a name starting with '_')"},
    {"*_token_id", "a token id: which token, not how much work"},
    {"*_token_index", "a token id: which token, not how much work"},
    {"transformers_version", "the version of the library that wrote the file"},
    {"rms_norm_eps", "a norm's epsilon: a value, not work"},
    {"layer_norm_eps", "a norm's epsilon: a value, not work"},
    {"rope_theta", "the RoPE base: a value, not work"},
    {"rope_local_base_freq", "the RoPE base of local layers: a value, not work"},
    {"initializer_range", "training-time initialisation"},
    {"use_cache", "generate()'s KV-cache switch; the simulated engine always caches"},
    {"attention_dropout", "dropout: training only"},
    {"hidden_dropout", "dropout: training only"},
    {"router_aux_loss_coef", "a training loss term"},
    {"output_router_logits", "a training output"},
    {"aux_loss_alpha", "a training loss term"},
    {"seq_aux", "a training loss term"},
    {"pretraining_tp", "the TP degree the checkpoint was trained with; parallel.tp is the run's"},
    {"ep_size", "the EP degree the checkpoint was trained with; parallel.ep is the run's"},
    {"norm_topk_prob", "normalises the top-k weights: values, the same work"},
    {"routed_scaling_factor", "scales the routed output: a value, the same work"},
    {"n_group", "group-limited expert choice: which experts, not how many "
                "(simulation.moe_routing decides which)"},
    {"topk_group", "group-limited expert choice: which experts, not how many "
                   "(simulation.moe_routing decides which)"},
    {"topk_method", "how experts are chosen, not how many (simulation.moe_routing decides)"},
    {"hidden_act", "the activation function: one elementwise pass whatever the function"},
    {"hidden_activation", "the activation function: one elementwise pass whatever the function"},
    {"swiglu_limit", "clamps the SwiGLU input: the same elementwise work"},
    {"rope_interleave", "the layout of RoPE's pairs: the same work"},
    {"indexer_rope_interleave", "the layout of the indexer's RoPE pairs: the same work"},
    {"attn_temperature_tuning", "Llama-4's per-position query scale: a value, the same work"},
    {"initial_context_length",
     "gpt-oss's pre-training context; rope_scaling.original_max_position_embeddings is read"},
    {"num_key_value_heads", "MLA: every head has its own k and v after kv_b_proj (read for GQA)"},
    {"head_dim", "MLA: the q/k head width is qk_nope_head_dim + qk_rope_head_dim (read)"},
    {"rope_scaling.beta_fast", "shapes RoPE's frequencies: values, the same work"},
    {"rope_scaling.beta_slow", "shapes RoPE's frequencies: values, the same work"},
    {"rope_scaling.mscale", "YaRN's attention scale: a value, the same work"},
    {"rope_scaling.mscale_all_dim", "YaRN's attention scale: a value, the same work"},
    {"rope_scaling.attention_factor", "YaRN's attention scale: a value, the same work"},
    {"rope_scaling.low_freq_factor", "shapes RoPE's frequencies: values, the same work"},
    {"rope_scaling.high_freq_factor", "shapes RoPE's frequencies: values, the same work"},
    {"rope_scaling.short_factor", "shapes RoPE's frequencies: values, the same work"},
    {"rope_scaling.long_factor", "shapes RoPE's frequencies: values, the same work"},
    {"rope_scaling.truncate", "shapes RoPE's frequencies: values, the same work"},
    {"rope_scaling.mrope_section",
     "multimodal RoPE sections: a text token has one position in every section, the same work"},
    {"rope_scaling.interleaved", "the layout of multimodal RoPE's sections: the same work"},
    {"rope_scaling.mrope_interleaved", "the layout of multimodal RoPE's sections: the same work"},
    {"quantization_config.sym", "GPTQ stores qzeros whether or not (priced either way)"},
    {"quantization_config.desc_act", "act-order: GPTQ stores g_idx either way (priced)"},
    {"quantization_config.damp_percent", "calibration: how the weights were made"},
    {"quantization_config.true_sequential", "calibration: how the weights were made"},
    {"quantization_config.dataset", "calibration: how the weights were made"},
    {"quantization_config.tokenizer", "calibration: how the weights were made"},
    {"quantization_config.model_seqlen", "calibration: how the weights were made"},
    {"quantization_config.batch_size", "calibration: how the weights were made"},
    {"quantization_config.cache_block_outputs", "calibration: how the weights were made"},
    {"quantization_config.version", "AutoAWQ's kernel layout; the serving engine picks its own"},
    {"quantization_config.backend", "the loader's kernel choice; the serving engine picks its own"},
    {"quantization_config.use_exllama", "the loader's kernel choice"},
    {"quantization_config.exllama_config", "the loader's kernel choice"},
    {"quantization_config.use_cuda_fp16", "the loader's kernel choice"},
    {"quantization_config.checkpoint_format", "the file layout of the same tensors"},
    {"quantization_config.format", "compressed-tensors' file layout of the same tensors"},
    {"*observer", "calibration: how the scales were found"},
    {"*observer_kwargs", "calibration: how the scales were found"},
    {"*quantization_status", "compressed-tensors' state of the checkpoint (compressed, frozen)"},
    {"quantization_config.do_fuse", "AutoAWQ's module fusion; the serving engine fuses its own"},
    {"quantization_config.fuse_max_seq_len", "AutoAWQ's module fusion"},
    {"quantization_config.modules_to_fuse", "AutoAWQ's module fusion"},
};

/* The reason name (inside the text config when under it) does not change
 * the work, NULL when not known. */
static const char *not_work_why(const cfg *c, const char *name)
{
    size_t tn = c->text ? strlen(c->text_name) : 0;
    if (tn && strncmp(name, c->text_name, tn) == 0 && name[tn] == '.')
        name += tn + 1;
    const char *last = strrchr(name, '.');
    last = last ? last + 1 : name;
    for (size_t i = 0; i < sizeof not_work / sizeof not_work[0]; i++) {
        const char *k = not_work[i].name;
        size_t n = strlen(k), ln = strlen(last);
        if (!strcmp(k, "_*") ? last[0] == '_'
            : k[0] == '*'    ? ln >= n - 1 && !strcmp(last + ln - (n - 1), k + 1)
                             : !strcmp(k, name))
            return not_work[i].why;
    }
    return NULL;
}

/* 1 read, 2 warned, 0 neither. */
static int seen_as(const cfg *c, const char *name)
{
    for (int i = 0; i < c->seen->n; i++)
        if (!strcmp(c->seen->name[i], name))
            return c->seen->warned[i] ? 2 : 1;
    return 0;
}

/* What one pass over the fields found. */
typedef struct tally {
    arch_fields *out;   /* NULL: not listed */
    int unknown;
    char names[1024];   /* the unknown ones, ", "-separated, as many as fit */
} tally;

static void put(tally *t, const char *name, arch_use use, const char *why)
{
    if (use == AF_UNKNOWN) {
        size_t n = strlen(t->names);
        if (n + strlen(name) + 8 < sizeof t->names)
            snprintf(t->names + n, sizeof t->names - n, "%s%s", t->unknown ? ", " : "", name);
        t->unknown++;
    }
    if (!t->out || t->out->n == ARCH_MAX_FIELDS)
        return;
    snprintf(t->out->f[t->out->n].name, sizeof t->out->f[0].name, "%s", name);
    t->out->f[t->out->n].use = use;
    t->out->f[t->out->n++].why = why;
}

/* Every member of object o, named prefix (NULL: the top level). */
static void classify(const cfg *c, const json_t *o, const char *prefix, tally *t)
{
    const char *key;
    json_t *v;
    char name[ARCH_FIELD_LEN], shadow[ARCH_FIELD_LEN + 64];
    json_object_foreach((json_t *)o, key, v) {
        snprintf(name, sizeof name, "%s%s%s", prefix ? prefix : "", prefix ? "." : "", key);
        int s = seen_as(c, name);
        const char *why = s ? NULL : not_work_why(c, name);
        snprintf(shadow, sizeof shadow, "%s.%s", c->text ? c->text_name : "", key);
        if (s == 2)
            put(t, name, AF_WARNED, NULL);
        else if (s == 1) {
            put(t, name, AF_READ, NULL);
            if (json_is_object(v))
                classify(c, v, name, t);
        } else if (why)
            put(t, name, AF_IGNORED, why);
        else if (!prefix && c->text && seen_as(c, shadow))
            put(t, name, AF_IGNORED, "the text config's field of that name is read instead");
        else if (json_is_null(v))
            put(t, name, AF_IGNORED, "null: absent, as transformers reads it");
        else
            put(t, name, AF_UNKNOWN, NULL);
    }
}

/* The fields neither read, warned nor known not to change the work: one
 * warning line naming them. */
static void warn_unread(const cfg *c, arch *a, arch_fields *out)
{
    tally t = {.out = out};
    if (out)
        out->n = 0;
    classify(c, c->top, NULL, &t);
    if (t.unknown == 0)
        return;
    char line[ARCH_WARN_LEN];
    int n = snprintf(line, sizeof line, "%.60s: %d field%s cpsim does not read (the work they may "
                     "change is not modelled): ", base_name(c->path), t.unknown,
                     t.unknown > 1 ? "s" : "");
    size_t room = sizeof line - (size_t)n - 1, len = strlen(t.names);
    if (len > room) { /* whole names only, then ", ..." */
        len = room - strlen(", ...");
        while (len > 0 && strncmp(t.names + len, ", ", 2) != 0)
            len--;
    }
    arch_warn(a, "%s%.*s%s", line, (int)len, t.names, len < strlen(t.names) ? ", ..." : "");
}

const char *arch_use_name(arch_use u)
{
    static const char *const t[] = {"read", "warned", "ignored", "unknown"};
    return (unsigned)u <= AF_UNKNOWN ? t[u] : "?";
}

/* --- loading ------------------------------------------------------------- */

/* Warnings come in this order: attention (warn_attention), windows and
 * layer kinds (parse_window), FFN (parse_ffn), quantization (parse_quant). */
static int parse(cfg *c, arch *a)
{
    if (pick_text(c) < 0 || parse_class(c, a) < 0 || parse_common(c, a) < 0 ||
        parse_attention(c, a) < 0 || warn_attention(c, a) < 0 || parse_window(c, a) < 0 ||
        parse_ffn(c, a) < 0 || parse_quant(c, a) < 0 || check_aliases(c, a) < 0)
        return -1;
    warn_towers(c, a);
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
        warn_unread(&c, out, fields);
    free(sn);
    json_decref(root);
    return rc;
}

int arch_load(const char *spec, const char *base_dir, arch *out, cp_err *err)
{
    return arch_load_fields(spec, base_dir, out, NULL, err);
}
