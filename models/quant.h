/* quant: static weight accounting of one rank as the serving engine
 * materializes it (RFC 3.5 and 3.7, models-hardware.md 2.3).
 *
 * Each checkpoint tensor (memory.h: mem_each_tensor) gets a quantization
 * type: from an msModelSlim quant_model_description.json (tensor name ->
 * "FLOAT" | "W8A8" | "W8A8_DYNAMIC") when the workload names one
 * (precision.quant_description), else from precision.weights, and for the
 * MLP linears (quant_is_mlp: the dense MLP's and every expert's gate, up
 * and down) from precision.mlp_weights: integer weights of the bits of an
 * integer checkpoint's grouped or per-channel scheme are INT_GROUP, other
 * 1-byte integer weights are W8A8_DYNAMIC, fp8 weights carry 128 x 128
 * block scales (whatever their GEMM's scale granularity: a row-wise scale
 * layout is not told apart, a difference of about 4 B per 128 x 128
 * elements), wider formats are
 * floating point (an MLP linear in its mlp_weights dtype, every other
 * float tensor in the params dtype), and in every quantized case the
 * tensors W8A8 checkpoints keep in floating point (norms, router,
 * kv_b_proj, indexer wk / weights_proj, embedding, LM head) stay FLOAT.
 *
 * A type brings the tensors the vLLM-Ascend method creates for it
 * (vllm-project/vllm-ascend: vllm_ascend/quantization/methods/
 * w8a8_static.py and w8a8_dynamic.py, get_*_param and
 * process_weights_after_loading):
 *   W8A8 (static)   weight int8 [out, in]; quant_bias int32 [out],
 *                   weight_scale / weight_offset [out] and input_scale [1]
 *                   in the params dtype, input_offset int8 [1]; deq_scale
 *                   fp32 [out]; after loading aclnn_input_scale,
 *                   its reciprocal and aclnn_input_offset [in] (params dtype)
 *   W8A8_DYNAMIC    weight int8 [out, in]; weight_scale / weight_offset
 *                   [out] (params dtype); after loading weight_scale_fp32
 *                   [out] fp32 (MoE: w13_weight_scale_fp32 of gate/up only)
 *   fp8 block       weight fp8 [out, in]; weight_scale_inv fp32
 *                   [ceil(out/128), ceil(in/128)] (models-hardware.md 2.1:
 *                   DeepSeek checkpoints, FP8 e4m3 block 128 x 128)
 *   INT_GROUP       an integer checkpoint (config.json quantization_config
 *                   gptq, awq, or compressed-tensors int weights, grouped
 *                   or per channel) whose bits are the weights' dtype, no
 *                   quant description: weight packed at `bits` per element
 *                   (qweight); per group of group_size input columns (per
 *                   channel: one group per row) a scale in the params dtype
 *                   (scales) and, when stored, a zero point of `bits`
 *                   packed into int32 words along the output (AWQ
 *                   qzeros [in/g, out*bits/32] when zero_point, GPTQ's
 *                   always, compressed-tensors' when not symmetric); GPTQ
 *                   adds g_idx int32 [in] (AutoGPTQ QuantLinear buffers;
 *                   AutoAWQ WQLinear_GEMM)
 *   FLOAT           the params dtype (quant_params_bytes)
 * MLA's kv_b_proj is replaced after loading by W_UK_T and W_UV in the
 * params dtype, derived from the kv_b_proj layout the rank holds (its full
 * layout under DSA CP), and disposed (vllm_ascend/attention/sfa_v1.py and
 * mla_v1.py: dispose_layer(self.kv_b_proj)).
 *
 * Layer sharding (parallel.layer_sharding under DSA CP) keeps the weight of
 * a listed projection in layer l only on TP member l % tp; kv_b_proj's are
 * its derived W_UK_T / W_UV (a what-if: vLLM-Ascend derives them from the
 * whole kv_b_proj on every rank while loading).
 *
 * The report gives, for rank 0, the plain estimate (mem_weights_per_rank:
 * every tensor at precision.weights, the MLP linears at mlp_weights,
 * TP-sharded) and the materialized
 * breakdown by tensor family and category, reached through cumulative
 * steps so that the difference between the two is explained term by term.
 */
#ifndef CP_QUANT_H
#define CP_QUANT_H

#include <stdint.h>

#include "models/memory.h"
#include "base/diag.h"

struct scenario;

typedef enum {
    QT_FLOAT,         /* floating point, params dtype */
    QT_W8A8,          /* msModelSlim W8A8: static per-tensor activation scale */
    QT_W8A8_DYNAMIC,  /* msModelSlim W8A8_DYNAMIC: per-token activation scale */
    QT_FP8_BLOCK,     /* fp8 weights with 128 x 128 block scales */
    QT_PLAIN,         /* precision.weights without auxiliary tensors (int4
                         not from an integer checkpoint: its scale layout is
                         not modelled) */
    QT_INT_GROUP,     /* integer weights of the checkpoint's gptq / awq /
                         compressed-tensors int scheme, with their group
                         scales and zero points */
    QT_COUNT
} quant_type;

typedef enum {
    QC_QUANTIZED,     /* quantized weights (int8, fp8, int4) */
    QC_FLOAT,         /* floating-point weights */
    QC_PARAMS,        /* weight_scale / weight_offset / input_scale / input_offset / quant_bias */
    QC_FP32,          /* fp32 scales: deq_scale, weight_scale_fp32, block scales */
    QC_DERIVED,       /* W_UK_T / W_UV, aclnn input-scale repeats */
    QC_COUNT
} quant_cat;

/* Cumulative steps from the plain estimate to the materialized weights. */
typedef enum {
    QS_PLAIN,         /* every tensor at precision.weights (MLP linears at
                         mlp_weights), TP-sharded */
    QS_TYPES,         /* per-tensor types: float exceptions in the params dtype */
    QS_PARAMS,        /* + scales, offsets, quant_bias; INT_GROUP's group
                         scales, zero points, g_idx */
    QS_FP32,          /* + fp32 scales */
    QS_DERIVED,       /* + W_UK_T / W_UV for kv_b_proj, input-scale repeats */
    QS_SHARED_TP,     /* + shared experts sharded by TP (the sequence-parallel
                         MoE) where the TP scheme replicates them (ep > 1) */
    QS_FULL_ATTN,     /* + DSA CP: q_b_proj, kv_b_proj, o_proj at full layout */
    QS_LAYER_SHARD,   /* + layer sharding: the weights of the sharded
                         projections kept for 1 layer in K (scales stay) */
    QS_COUNT
} quant_step;

typedef struct quant_desc quant_desc;

/* Read a quant_model_description.json: a JSON object whose values are
 * strings.  Errors name the file (with line:column for JSON syntax).  A
 * key holding a '*' is cpsim's compact form, an fnmatch pattern (a '*'
 * matches any run of characters, dots included): a tensor takes its exact
 * entry, else the type of the longest pattern it matches (models/configs/
 * quant/ bundles descriptions written this way). */
quant_desc *quant_desc_load(const char *path, cp_err *err);
void quant_desc_free(quant_desc *d);
const char *quant_desc_path(const quant_desc *d);
/* Every linear weight of the model has an entry of a modelled type, and a
 * DSA model keeps kv_b_proj FLOAT (vLLM-Ascend's SFA asserts it). */
int quant_desc_check(const quant_desc *d, const arch *a, cp_err *err);
/* The description's type of a linear weight (a quant_type): QT_COUNT when
 * the entry is missing, -1 when its type is not modelled. */
int quant_desc_type(const quant_desc *d, const char *name);
/* The entries of d that change nothing on model a: they type no tensor of
 * a, or type quantized only tensors cpsim keeps in floating point (norms,
 * and the linears quant.h keeps FLOAT), shown "... (kept FLOAT)".  Not
 * counted: notes (keys starting with '_'), msModelSlim's model_quant_type
 * (a summary; every tensor's own entry is read), FLOAT entries (what cpsim
 * does with any tensor it does not list) and a quantized linear's
 * companions (.weight_scale, .input_scale, ...), which follow the entry of
 * its .weight, and entries of MTP layers (not simulated).  Their names, quoted
 * and ", "-separated, as many as fit into buf (n bytes); returns how
 * many. */
int quant_desc_unread(const quant_desc *d, const arch *a, char *buf, size_t n);

typedef struct quant_report {
    mem_shard shard;                 /* the scheme's sharding */
    uint32_t sharded;                /* layer-sharded projections, bits 1 << mem_proj */
    int shard_k;                     /* layer-sharding group size (1: none) */
    int shard_layers;                /* layers whose sharded weights rank 0 keeps */
    double plain[WF_COUNT];          /* the plain estimate by family */
    double bytes[WF_COUNT][QC_COUNT];/* materialized, resident on rank 0 */
    double fam_total[WF_COUNT];
    double cat_total[QC_COUNT];
    double total;                    /* = step_total[QS_LAYER_SHARD] */
    double step_total[QS_COUNT];
    double window;                   /* layer sharding: the windows of two layers
                                        (the one in use and the one prefetched:
                                        vLLM-Ascend's pool of prefetch_step + 1 = 2),
                                        not resident */
    double load_transient;           /* largest tensor transposed while loading
                                        (not resident) */
    int ntype[QT_COUNT];             /* linear weights of the model by type */
} quant_report;

/* Bytes per element of the params dtype (vLLM's params_dtype: the model's
 * floating-point dtype, which float tensors, scales and derived weights
 * use): precision.weights when it is 2 bytes or wider, else
 * precision.activations when it is, else bf16 (the torch_dtype of every
 * bundled config, models/configs/<name>.json). */
double quant_params_bytes(const struct scenario *s);

/* Account rank 0 of scenario s.  d: a checked description, or NULL for the
 * rules of precision.weights (the scenario's own description is not used:
 * callers pass s->quant or an override). */
void quant_account(const struct scenario *s, const quant_desc *d, quant_report *out);

/* Weights resident on rank 0 while s runs: the materialized total with the
 * scenario's own description (what the plan allocates). */
double quant_resident_bytes(const struct scenario *s);

/* Bytes of the weight of projection p of layer `layer` at its full layout
 * (kv_b_proj: W_UK_T and W_UV): what layer sharding broadcasts.  The
 * layer-sharding series of vLLM-Ascend moves a linear's weight tensor;
 * its scales and offsets stay on every rank (register_layer_to_shard_
 * weight_series, dist.broadcast(layer.weight, ...)). */
double quant_proj_bytes(const struct scenario *s, int layer, mem_proj p);

const char *quant_type_name(quant_type t);
const char *quant_cat_name(quant_cat c);
/* Short description of a step ("+ fp32 scales"). */
const char *quant_step_name(quant_step st);

#endif
