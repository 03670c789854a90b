/* kset: a kernel set, which implementation of each op class an engine
 * runs (engine.kernels: a bundled set of models/kernels/<name>.yaml, or the
 * path of such a file).
 *
 * cpsim models engines, not one engine: PyTorch eager (the pieces the
 * calibration scripts time, the default), vLLM's and SGLang's Hopper paths,
 * Meta's context-parallel stack.  A set names, per slot, the implementation
 * that runs; the plan builders (models/layer_*.c, emit.c) emit that
 * implementation's kernels and stamp each op with it (plan_op.impl), and
 * the cost model prices it from the table of the implementation measured,
 * or, for a fused kernel no table measured, from the bytes it must move
 * (models/cost.c, cost_src "derived:fused").
 *
 * A set file is YAML with the keys below (every key optional but `name`;
 * an absent key keeps the pytorch value), each a name of its slot:
 *   name:            the set's name (reports)
 *   attention:       fa2 | cudnn | fa3    (prefill, chunk over a prefix,
 *                    CP blocks; decode calls of fa3 too)
 *   lse_merge:       torch | fused        (merges of partial attention outputs)
 *   norm:            torch | fused_add    (RMSNorm; fused_add: with the residual add)
 *   rope:            torch | fused | fused_kv_write
 *   activation:      torch | fused        (SwiGLU: silu and mul)
 *   moe_routing:     torch | fused        (top-k, permute, the expert GEMMs'
 *                    launches, unpermute)
 *   allreduce:       nccl | custom        (TP all-reduces inside a node)
 *   gemm_fp8:        scaled_mm            (the one measured: torch._scaled_mm)
 *   eager_locals:    true | false         (the model runs as Python modules
 *                    eagerly: a tensor bound to a local lives until its
 *                    function returns; false: a compiled graph frees each
 *                    buffer after its last use)
 *   varlen:          false | true         (a mixed step's attention as one
 *                    varlen call over every sequence)
 *   graph:           eager | full | decode_only | piecewise |
 *                    full_and_piecewise   (the engine's default graph mode;
 *                    engine.graph overrides)
 *   capture_sizes:   [1, 2, 4, ...]       (a graphed step's batch padded to
 *                    the next of these, one past the largest run eagerly;
 *                    ascending, at most KS_MAX_CAPTURE; absent: every
 *                    batch captured at its own size)
 */
#ifndef CP_KSET_H
#define CP_KSET_H

#include <stdint.h>

#include "models/plan.h"
#include "base/diag.h"

/* The slots of a set; each holds a plan_impl. */
typedef enum {
    KS_ATTENTION, KS_LSE_MERGE, KS_NORM, KS_ROPE, KS_ACTIVATION, KS_MOE_ROUTING,
    KS_ALLREDUCE, KS_GEMM_FP8, KS_COUNT
} ks_slot;

/* Graph modes (engine.graph): vLLM's CUDAGraphMode (vllm/config/compilation.py):
 * full captures every step, decode_only the steps of decodes alone (the
 * others eager), piecewise every step with attention outside the graph,
 * full_and_piecewise decode-only steps full and the others piecewise. */
typedef enum {
    KG_EAGER, KG_FULL, KG_DECODE_ONLY, KG_PIECEWISE, KG_FULL_AND_PIECEWISE, KG_COUNT
} ks_graph;

#define KS_MAX_CAPTURE 128

typedef struct kset {
    char name[48];
    char path[1024];                 /* the file read ("" for the built-in pytorch) */
    uint8_t impl[KS_COUNT];          /* plan_impl per slot */
    int varlen;
    int eager_locals;
    int graph;                       /* ks_graph, -1: not given */
    int capture[KS_MAX_CAPTURE];     /* ascending */
    int ncapture;
} kset;

/* The bundled sets (NULL-terminated), in models/kernels/. */
extern const char *const ks_bundled[];

/* The pytorch set: what the calibration profile measured (every slot torch
 * or fa2 / nccl), no graph default, every batch captured at its size (a
 * loop of one's own, as the calibration scripts capture). */
void ks_default(kset *k);

/* Load a bundled set by name or a set file by path (base_dir: where a
 * relative path is resolved; NULL: the working directory).  Errors name the
 * file, line and column, or the unknown set with the bundled ones. */
int ks_load(const char *spec, const char *base_dir, kset *out, cp_err *err);

/* The names accepted by a slot (NULL-terminated) and the value of a name. */
const char *const *ks_slot_names(ks_slot s);
const char *ks_slot_key(ks_slot s);
const char *ks_graph_name(ks_graph g);
extern const char *const ks_graph_names[];

/* The batch a graph replays for b tokens: the smallest capture size >= b,
 * or b itself beyond the largest (vLLM runs those eagerly: *captured 0);
 * b itself, captured, for a set without capture sizes. */
int ks_padded_batch(const kset *k, int b, int *captured);

#endif
