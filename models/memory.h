/* memory: static bytes per rank — weights by tensor family and the KV cache
 * per token — from the model structure and the parallel layout.
 *
 * Dynamic (activation) memory is not computed here: the plan builder emits
 * allocation and free ops around the tensors it creates, and the engine turns
 * them into a timeline whose maximum is the peak.
 */
#ifndef CP_MEMORY_H
#define CP_MEMORY_H

#include <stdint.h>
#include "models/arch.h"
#include "models/dtype.h"

typedef enum {
    WF_EMBEDDING, WF_LM_HEAD, WF_NORMS, WF_ATTENTION, WF_INDEXER,
    WF_DENSE_MLP, WF_ROUTER, WF_EXPERTS, WF_SHARED_EXPERTS, WF_COUNT
} mem_wfamily;

typedef struct mem_weights {
    double bytes[WF_COUNT];  /* per rank */
    double total;            /* per rank */
} mem_weights;

/* Sharding seen by one rank. */
typedef struct mem_shard {
    int tp;        /* tensor-parallel degree (heads, FFN width, vocab) */
    int ep;        /* expert-parallel degree (routed experts split by ep) */
} mem_shard;

/* Weights held by one rank: attention and dense MLP sharded by TP (K/V
 * projections replicated when kv_heads < tp), norms and router replicated,
 * routed experts split by EP when ep > 1 else sharded by TP in the
 * intermediate dimension, shared experts sharded by TP (replicated when
 * ep > 1), embedding and LM head
 * vocabulary-sharded by TP (LM head absent when tied). */
void mem_weights_per_rank(const arch *a, mem_shard sh, cp_dtype wdt, mem_weights *out);

/* KV heads stored per rank under TP: max(1, kv_heads / tp) (replicated when
 * tp > kv_heads).  MLA: the latent cache is not sharded by heads (1). */
int64_t mem_kv_heads_per_rank(const arch *a, int tp);

/* KV-cache bytes per token per layer on one rank (GQA: 2 * heads_r * d;
 * MLA: kv_lora_rank + rope dim; DSA adds the indexer key cache). */
double mem_kv_bytes_per_token_layer(const arch *a, int tp, cp_dtype kvdt);

const char *mem_wfamily_name(mem_wfamily f);

#endif
