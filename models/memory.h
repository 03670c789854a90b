/* memory: static bytes per rank — weights by tensor family and the KV cache
 * per token — from the model structure and the parallel layout.
 *
 * The weights are described tensor by tensor as the checkpoint stores them
 * (mem_each_tensor: Hugging Face names, [out, in] shapes, how tensor and
 * expert parallelism split each one).  mem_weights_per_rank is the plain
 * estimate built on that list: every tensor at one dtype, sharded by the
 * layout.  models/quant.c builds the materialized accounting (quantized and
 * float tensors, scales, derived weights, DSA CP full layouts, layer
 * sharding) on the same list.
 *
 * Dynamic (activation) memory is not computed here: the plan builder emits
 * allocation and free ops around the tensors it creates, and the engine turns
 * them into a timeline whose maximum is the peak.
 */
#ifndef CP_MEMORY_H
#define CP_MEMORY_H

#include <stdint.h>
#include "models/arch.h"
#include "base/dtype.h"

typedef enum {
    WF_EMBEDDING, WF_LM_HEAD, WF_NORMS, WF_ATTENTION, WF_INDEXER,
    WF_DENSE_MLP, WF_ROUTER, WF_EXPERTS, WF_SHARED_EXPERTS, WF_COUNT
} mem_wfamily;

/* The MLA projections that DSA CP keeps at full layout and that
 * parallel.layer_sharding may distribute (MP_NONE: any other tensor). */
typedef enum { MP_NONE, MP_Q_A, MP_Q_B, MP_KV_A, MP_KV_B, MP_O, MP_COUNT } mem_proj;

typedef struct mem_weights {
    double bytes[WF_COUNT];  /* per rank */
    double total;            /* per rank */
} mem_weights;

/* Sharding seen by one rank.  Fields left 0 give the tensor-parallel
 * baseline. */
typedef struct mem_shard {
    int tp;          /* tensor-parallel degree (heads, FFN width, vocab) */
    int ep;          /* expert-parallel degree (routed experts split by ep) */
    int full_attn;   /* DSA CP: q_b_proj, kv_b_proj and o_proj keep their
                        full layout on every rank (RFC 3.3, 3.4) */
    int shared_tp;   /* shared experts sharded by TP even when ep > 1 (the
                        sequence-parallel MoE, RFC 3.3.1) */
} mem_shard;

/* How tensor parallelism splits a tensor (routed experts under EP are
 * whole experts spread over the EP ranks instead). */
typedef enum {
    MS_REPLICATED,   /* every rank holds all of it */
    MS_COLUMN,       /* rows (output features) split over TP */
    MS_ROW,          /* columns (input features) split over TP */
    MS_KV_HEADS,     /* GQA K/V rows: kv heads over TP, one head at least */
    MS_VOCAB,        /* rows (vocabulary) split over TP */
} mem_split;

/* One tensor of the checkpoint. */
typedef struct mem_tensor {
    const char *name;        /* e.g. "model.layers.3.self_attn.q_b_proj.weight";
                                valid during the callback only; NULL unless
                                names were asked for */
    mem_wfamily fam;
    int32_t layer;           /* decoder layer, -1 outside the layers */
    int32_t expert;          /* routed expert index, -1 for other tensors */
    int64_t rows, cols;      /* [out, in] as stored; vectors have cols = 1 */
    mem_split split;
    mem_proj proj;
    uint8_t linear;          /* the weight of a linear layer (quantizable) */
    uint8_t keep_float;      /* a linear that W8A8 checkpoints keep in floating
                                point (models-hardware.md 2.3): router, kv_b_proj,
                                indexer wk / weights_proj, embedding, LM head */
    uint8_t shared;          /* a shared-expert tensor */
} mem_tensor;

/* The layout of one tensor on one rank: rows x cols elements, times frac
 * (1/ep for a routed expert under EP: the rank holds E/ep of the E
 * experts, counted as that share of each). */
typedef struct mem_local {
    double rows, cols, frac;
} mem_local;

typedef void (*mem_tensor_fn)(void *ctx, const mem_tensor *t);

/* Call fn for every tensor of layer `layer` (-1: the tensors outside the
 * layers; MEM_ALL_LAYERS: every tensor), in checkpoint order, with their
 * checkpoint names when `names` is set.  The biases of
 * linear layers (attention_bias) and the router's correction bias are not
 * listed; the indexer's LayerNorm bias is. */
#define MEM_ALL_LAYERS (-2)
void mem_each_tensor(const arch *a, int layer, int names, mem_tensor_fn fn, void *ctx);

/* The part of t one rank holds under sh. */
mem_local mem_tensor_local(const arch *a, const mem_tensor *t, mem_shard sh);

/* Weights held by one rank, every tensor at wdt: attention and dense MLP
 * sharded by TP (K/V projections replicated when kv_heads < tp; q_b_proj,
 * kv_b_proj, o_proj whole with sh.full_attn), norms, router and the MLA
 * down-projections and indexer replicated, routed experts split by EP when
 * ep > 1 else sharded by TP in the intermediate dimension, shared experts
 * sharded by TP (replicated when ep > 1 unless sh.shared_tp), embedding and
 * LM head vocabulary-sharded by TP (LM head absent when tied). */
void mem_weights_per_rank(const arch *a, mem_shard sh, cp_dtype wdt, mem_weights *out);

/* KV heads stored per rank under TP: max(1, kv_heads / tp) (replicated when
 * tp > kv_heads).  MLA: the latent cache is not sharded by heads (1). */
int64_t mem_kv_heads_per_rank(const arch *a, int tp);


const char *mem_wfamily_name(mem_wfamily f);
/* "q_a_proj", "q_b_proj", "kv_a_proj", "kv_b_proj", "o_proj" (the names of
 * parallel.layer_sharding); "" for MP_NONE. */
const char *mem_proj_name(mem_proj p);

#endif
