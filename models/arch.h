/* arch: the structure of a decoder-only model, read from a Hugging Face
 * config.json.
 *
 * Structure is detected from fields, never from model_type or the file name:
 *   - GQA/MHA:   num_attention_heads, num_key_value_heads, head_dim
 *   - MLA:       kv_lora_rank (+ q_lora_rank, qk_nope/rope_head_dim, v_head_dim)
 *   - DSA:       index_topk with index_n_heads / index_head_dim (on top of MLA)
 *   - MoE:       num_experts | n_routed_experts | num_local_experts (+
 *                num_experts_per_tok, moe_intermediate_size, shared experts,
 *                first_k_dense_replace, moe_layer_freq, decoder_sparse_step,
 *                mlp_only_layers, interleave_moe_layer_step, moe_layers,
 *                intermediate_size_mlp)
 *   - windows:   sliding_window, use_sliding_window, max_window_layers,
 *                sliding_window_pattern, layer_types
 *   - quantization_config (recorded, not interpreted: see quant_*)
 * The one exception is what no field states: whether q/k are normalised, how
 * the router scores and whether absent tie_word_embeddings means tied are
 * taken from the model family, named by architectures[] (or, failing that,
 * model_type, with a warning; with neither, the choices assumed are warned).
 * Nested text_config and thinker_config.text_config are followed.  Every
 * field is read, warned (it changes the simulated work without being
 * modelled: a line in warn[]), or known not to change the work (a table in
 * arch.c with the reason); any other field is warned as not read
 * (arch_load_fields lists what became of each).
 */
#ifndef CP_ARCH_H
#define CP_ARCH_H

#include <stdint.h>
#include "base/diag.h"

#define ARCH_MAX_LAYERS 1024
#define ARCH_MAX_WARN 16    /* warning lines kept per model */
#define ARCH_WARN_LEN 200   /* bytes per warning line, NUL included */

typedef enum { ATTN_GQA, ATTN_MLA } arch_attn;

/* An audio encoder beside the text model (Qwen3-Omni's
 * thinker_config.audio_config, model_type qwen3_omni_moe_audio_encoder):
 * mel frames in chunks of 2 n_window through three stride-2 3x3 conv2d
 * (1 -> conv_channels -> conv_channels -> conv_channels) and a linear to
 * d_model, then `layers` pre-norm transformer layers (LayerNorm, q/k/v/o
 * with biases, non-causal attention within windows, LayerNorm, fc1 GELU
 * fc2) and ln_post, proj1 GELU proj2 to out_dim.  Absent fields take the
 * defaults of transformers' Qwen3OmniMoeAudioEncoderConfig
 * (configuration_qwen3_omni_moe.py), as loading the checkpoint does.
 * models/encoder/ builds its work; layers == 0: no audio encoder. */
typedef struct arch_audio {
    int64_t layers;          /* encoder_layers */
    int64_t d_model;         /* d_model */
    int64_t heads;           /* encoder_attention_heads */
    int64_t ffn;             /* encoder_ffn_dim */
    int64_t mel_bins;        /* num_mel_bins */
    int64_t conv_channels;   /* downsample_hidden_size */
    int64_t n_window;        /* half a conv chunk, in mel frames */
    int64_t n_window_infer;  /* an attention window, in mel frames */
    int64_t out_dim;         /* output_dim: the text model's hidden size */
    int64_t max_positions;   /* max_source_positions (rows of the position table) */
    int64_t conv_chunksize;  /* conv chunks per call of the conv stack (more run
                                as several calls) */
} arch_audio;

typedef struct arch {
    char name[128];          /* bundled name or file name without .json */
    char path[1024];         /* the config.json actually read */
    char arch_class[64];     /* first entry of the top-level architectures[],
                                "" if none (e.g. "Qwen3ForCausalLM") */

    int64_t hidden;          /* hidden_size */
    int64_t layers;          /* num_hidden_layers (MTP layers excluded) */
    int64_t vocab;           /* vocab_size */
    int64_t max_position;    /* max_position_embeddings (0 if absent) */
    int64_t max_context;     /* positions the model is built for: max_position,
                                or rope_scaling's factor x
                                original_max_position_embeddings when larger
                                (arch.c context_of); 0 if neither is given */
    int tie_embeddings;      /* tie_word_embeddings; absent: the family's
                                transformers default (arch.c families) */

    /* attention */
    arch_attn attn;
    int64_t heads;           /* num_attention_heads */
    int64_t kv_heads;        /* num_key_value_heads (MLA: = heads) */
    int64_t head_dim;        /* GQA: head_dim (default hidden/heads) */
    int qk_norm;             /* q/k normalised before RoPE: use_qk_norm when
                                present, else 1 when an architectures[] class
                                (top level or thinker_config) is one whose
                                transformers model applies q_norm/k_norm
                                (Llama-4's use_qk_norm is a weightless L2
                                norm, counted like an RMSNorm here) */
    int attention_bias;      /* biases on q/k/v/o (counted in the params) */

    /* sliding-window attention: sliding_window > 0 exactly when some
     * layer_window[i] is 1 */
    int64_t sliding_window;  /* window in tokens, 0 = no windowed layer */
    uint8_t layer_window[ARCH_MAX_LAYERS]; /* 1 if layer i attends only to
                                the last sliding_window positions */
    int64_t window_layers;   /* number of layers with layer_window[i] == 1 */

    /* MLA (attn == ATTN_MLA) */
    int64_t q_lora_rank;     /* 0: q projected directly (no q_a/q_b) */
    int64_t kv_lora_rank;
    int64_t qk_nope_dim;
    int64_t qk_rope_dim;
    int64_t v_head_dim;

    /* DSA lightning indexer (has_dsa) */
    int has_dsa;
    int64_t index_heads;     /* index_n_heads */
    int64_t index_head_dim;  /* index_head_dim */
    int64_t index_topk;      /* index_topk */

    /* FFN */
    int64_t intermediate;    /* dense MLP width: intermediate_size, or
                                intermediate_size_mlp (Llama-4 layout); 0 when
                                intermediate_size is the expert width
                                (Mixtral layout) */
    int has_moe;
    int64_t experts;         /* routed experts */
    int64_t top_k;           /* num_experts_per_tok */
    int64_t moe_intermediate;
    int router_sigmoid;      /* router scores by sigmoid (+ correction bias)
                                rather than softmax: scoring_func when present,
                                else the architecture class (arch.c) */
    int64_t shared_experts;  /* number of shared experts (0 if none) */
    int64_t shared_intermediate; /* width of the shared-expert MLP in total
                                    (n_shared_experts * moe_intermediate,
                                    shared_expert_intermediate_size, or
                                    intermediate_size in the Llama-4 layout) */
    int64_t dense_layers;    /* number of layers whose FFN is dense */
    uint8_t layer_moe[ARCH_MAX_LAYERS]; /* 1 if layer i has a MoE FFN */

    int64_t mtp_layers;      /* num_nextn_predict_layers (not simulated) */
    arch_audio audio;        /* the audio encoder (audio.layers 0: none) */
    char torch_dtype[16];    /* checkpoint dtype string, "" if absent */

    /* quantization_config as written, for the precision model to interpret
     * ("" / 0 when absent or not stated) */
    char quant_method[32];   /* quant_method; "fp8" for a config that gives only
                                weight_block_size (DeepSeek-V3 bundled) */
    int64_t quant_block[2];  /* weight_block_size (fp8) or block_structure
                                (compressed-tensors): [rows, cols] */
    char quant_fmt[16];      /* fmt, e.g. "e4m3" */
    char quant_act[16];      /* activation_scheme "dynamic"/"static" (fp8);
                                compressed-tensors input_activations.dynamic
                                as "dynamic"/"static" (or its string) */
    int quant_bits;          /* weight bits: 8 for fp8; num_bits
                                (compressed-tensors); bits (gptq/awq) */
    int quant_zeros;         /* gptq/awq: a packed zero point per group is
                                stored (qzeros; awq zero_point, default
                                true; gptq always) */
    char quant_type[8];      /* weight number type: "float" (fp8, or
                                compressed-tensors type), "int" (gptq/awq, or
                                compressed-tensors type) */
    char quant_strategy[16]; /* scale granularity of the weights: "tensor",
                                "channel", "group", "block", "tensor_group" */
    int64_t quant_group;     /* group_size of the "group" strategies */

    /* config fields that change the simulated work but are not modelled, one
     * line each ("<file>: field ..."), in a fixed order */
    int nwarn;
    char warn[ARCH_MAX_WARN][ARCH_WARN_LEN];
} arch;

/* Load `spec`: a bundled model name (looked up as
 * <datadir>/models/configs/<spec>.json) or a path to a config.json (any spec
 * containing '/' or ending in ".json"; relative paths are resolved against
 * base_dir when base_dir is not NULL).  Errors name the file and the missing
 * or malformed field; JSON syntax errors carry jansson's line and column.
 * Fields that change the simulated work but are not modelled (chunked or
 * linear attention, NoPE layers, partial RoPE, an unknown quantization
 * method, ...) do not fail: each adds a line to out->warn naming the file
 * (base name) and the field; the caller decides whether to print them. */
int arch_load(const char *spec, const char *base_dir, arch *out, cp_err *err);

/* What the loader did with one field of a config. */
typedef enum {
    AF_READ,     /* read: it changes the answer */
    AF_WARNED,   /* it changes the work, is not modelled, and out->warn says so */
    AF_IGNORED,  /* known not to change the simulated work (why says why) */
    AF_UNKNOWN,  /* none of those: warned as not read */
} arch_use;

#define ARCH_MAX_FIELDS 512 /* fields listed per config (nested ones included) */
#define ARCH_FIELD_LEN 160  /* dotted name, NUL included */

typedef struct arch_fields {
    int n;
    struct {
        char name[ARCH_FIELD_LEN]; /* dotted: "rope_scaling.factor" */
        arch_use use;
        const char *why;           /* AF_IGNORED: the reason (static); else NULL */
    } f[ARCH_MAX_FIELDS];
} arch_fields;

/* arch_load, also listing every field of the file (members of an object
 * that is read are listed one by one; those of an object warned or ignored
 * as a whole are not) in file order into *fields when not NULL. */
int arch_load_fields(const char *spec, const char *base_dir, arch *out, arch_fields *fields,
                     cp_err *err);

/* The name of a use ("read", "warned", "ignored", "unknown"). */
const char *arch_use_name(arch_use u);

/* Append a warning line to a->warn (printf format, cut to ARCH_WARN_LEN).
 * When ARCH_MAX_WARN lines are already there, the last one is replaced by a
 * note that further warnings were omitted. */
void arch_warn(arch *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parameter counts (elements, not bytes), whole model, unsharded. */
int64_t arch_attn_params_per_layer(const arch *a);
int64_t arch_ffn_params(const arch *a, int layer);
int64_t arch_total_params(const arch *a);

/* KV-cache elements per token per layer (GQA: 2*kv_heads*head_dim;
 * MLA: kv_lora_rank + qk_rope_dim; DSA adds index_head_dim separately). */
int64_t arch_kv_elems_per_token_layer(const arch *a);

/* Names of the bundled models, NULL-terminated (for messages). */
extern const char *const arch_bundled[];

#endif
