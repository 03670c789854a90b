/* arch: the structure of a decoder-only model, read from a Hugging Face
 * config.json.
 *
 * Structure is detected from fields, never from model_type or the file name:
 *   - GQA/MHA:   num_attention_heads, num_key_value_heads, head_dim
 *   - MLA:       kv_lora_rank (+ q_lora_rank, qk_nope/rope_head_dim, v_head_dim)
 *   - DSA:       index_topk with index_n_heads / index_head_dim (on top of MLA)
 *   - MoE:       num_experts | n_routed_experts (+ num_experts_per_tok,
 *                moe_intermediate_size, shared experts, first_k_dense_replace,
 *                moe_layer_freq, decoder_sparse_step, mlp_only_layers)
 * Nested text_config and thinker_config.text_config are followed; unknown
 * fields are ignored.
 */
#ifndef CP_ARCH_H
#define CP_ARCH_H

#include <stdint.h>
#include "workloads/diag.h"

#define ARCH_MAX_LAYERS 1024

typedef enum { ATTN_GQA, ATTN_MLA } arch_attn;

typedef struct arch {
    char name[128];          /* bundled name or file name without .json */
    char path[1024];         /* the config.json actually read */

    int64_t hidden;          /* hidden_size */
    int64_t layers;          /* num_hidden_layers (MTP layers excluded) */
    int64_t vocab;           /* vocab_size */
    int64_t max_position;    /* max_position_embeddings (0 if absent) */
    int tie_embeddings;      /* tie_word_embeddings */

    /* attention */
    arch_attn attn;
    int64_t heads;           /* num_attention_heads */
    int64_t kv_heads;        /* num_key_value_heads (MLA: = heads) */
    int64_t head_dim;        /* GQA: head_dim (default hidden/heads) */
    int qk_norm;             /* per-head q/k RMSNorm: use_qk_norm, else 0 */
    int attention_bias;

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
    int64_t intermediate;    /* dense MLP intermediate_size */
    int has_moe;
    int64_t experts;         /* routed experts */
    int64_t top_k;           /* num_experts_per_tok */
    int64_t moe_intermediate;
    int64_t shared_experts;  /* number of shared experts (0 if none) */
    int64_t shared_intermediate; /* width of the shared-expert MLP in total
                                    (n_shared_experts * moe_intermediate, or
                                    shared_expert_intermediate_size) */
    int64_t dense_layers;    /* number of layers whose FFN is dense */
    uint8_t layer_moe[ARCH_MAX_LAYERS]; /* 1 if layer i has a MoE FFN */

    int64_t mtp_layers;      /* num_nextn_predict_layers (not simulated) */
    char torch_dtype[16];    /* checkpoint dtype string, "" if absent */
} arch;

/* Load `spec`: a bundled model name (looked up as
 * <datadir>/models/configs/<spec>.json) or a path to a config.json (any spec
 * containing '/' or ending in ".json"; relative paths are resolved against
 * base_dir when base_dir is not NULL).  Errors name the file and the missing
 * or malformed field; JSON syntax errors carry jansson's line and column. */
int arch_load(const char *spec, const char *base_dir, arch *out, cp_err *err);

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
