/* arch_reads: what became of each field of a config: read, warned, known
 * not to change the work (the not_work table, with its reasons), or
 * unknown (one warning line) (arch.h arch_load_fields). */
#include "models/arch_int.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    {"activation_function", "the audio encoder's activation: one elementwise pass whatever "
                            "the function"},
    {"dropout", "dropout: training only"},
    {"activation_dropout", "dropout: training only"},
    {"encoder_layerdrop", "layer drop: training only"},
    {"init_std", "training-time initialisation"},
    {"scale_embedding", "scales the conv output by sqrt(d_model): a value, the same work"},
    {"thinker_config.audio_config.num_hidden_layers",
     "transformers' alias of encoder_layers (attribute_map; encoder_layers is read)"},
    {"thinker_config.audio_config.torch_dtype", "the encoder runs at the model's dtype"},
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
void arch_warn_unread(const cfg *c, arch *a, arch_fields *out)
{
    tally t = {.out = out};
    if (out)
        out->n = 0;
    classify(c, c->top, NULL, &t);
    if (t.unknown == 0)
        return;
    char line[ARCH_WARN_LEN];
    int n = snprintf(line, sizeof line, "%.60s: %d field%s cpsim does not read (the work they may "
                     "change is not modelled): ", arch_base_name(c->path), t.unknown,
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
