/* classes: which compare class a measured kernel and a simulated op are in.
 *
 * Kernel names are matched against one table, first match wins, with
 * fnmatch(3) patterns over the name as Kineto writes it (CUDA's demangled
 * signature, or the mangled name where the profiler left it).  The rows
 * name the kernels of the engines cpsim's kernel sets model
 * (models/kernels/, one YAML each): PyTorch eager (the traces of
 * platforms/calibration/scripts/single-gpu/engine_checks.py in
 * tests/traces/), and the kernels vLLM and SGLang launch instead (fused
 * MoE, fused norms, rotary, cache writes, custom all-reduce, FA3).  A
 * generic elementwise kernel is classed by what it is, not by the op that
 * launched it (a mul of RoPE and one of the MoE weighted sum are both
 * elementwise): record_function ranges named as cpsim's ops class such
 * kernels exactly (compare.h). */
#include "reports/compare/compare.h"

#include <fnmatch.h>
#include <string.h>

const char *cmp_class_name(int c)
{
    static const char *const t[] = {"gemm",       "moe_gemm",   "attention",      "norm",
                                    "routing",    "elementwise", "all_reduce",    "all_gather",
                                    "reduce_scatter", "send_recv", "broadcast"};
    _Static_assert(sizeof t / sizeof t[0] == CMP_NCLASSES, "a name per class");
    return c >= 0 && c < CMP_NCLASSES ? t[c] : "unmatched";
}

static const struct {
    const char *pattern;
    int cls;
} rules[] = {
    /* NCCL device kernels (ncclDevKernel_<Op>_<algo>_<proto>, older ncclKernel_) */
    {"*nccl*AllReduce*", CMP_ALL_REDUCE},
    {"*nccl*AllGather*", CMP_ALL_GATHER},
    {"*nccl*ReduceScatter*", CMP_REDUCE_SCATTER},
    {"*nccl*SendRecv*", CMP_SEND_RECV},
    {"*nccl*Send*", CMP_SEND_RECV},
    {"*nccl*Recv*", CMP_SEND_RECV},
    {"*nccl*Broadcast*", CMP_BROADCAST},
    /* vLLM / SGLang custom all-reduce (csrc/custom_all_reduce.cuh) */
    {"*cross_device_reduce*", CMP_ALL_REDUCE},
    {"*all_reduce*", CMP_ALL_REDUCE},
    /* attention: FA2 in PyTorch (pytorch_flash::flash_fwd_*, split-KV and its
     * combine), FA3 (flash::FlashAttnFwdSm90, vllm_flash_attn), cuDNN's fused
     * SDPA (cudnn_generated_fort_native_sdpa*), xFormers / FlashInfer */
    {"*flash_fwd*", CMP_ATTENTION},
    {"*FlashAttn*", CMP_ATTENTION},
    {"*flash_attn*", CMP_ATTENTION},
    {"*fmha*", CMP_ATTENTION},
    {"*sdpa*", CMP_ATTENTION},
    {"*paged_attention*", CMP_ATTENTION},
    {"*BatchPrefill*", CMP_ATTENTION},
    {"*BatchDecode*", CMP_ATTENTION},
    /* routed experts: torch._grouped_mm (cutlass GemmUniversal over a
     * GroupProblemShape, its prepare_grouped_gemm_data), Triton fused_moe */
    {"*GroupProblemShape*", CMP_MOE_GEMM},
    {"*prepare_grouped_gemm*", CMP_MOE_GEMM},
    {"*fused_moe*", CMP_MOE_GEMM},
    {"*grouped_gemm*", CMP_MOE_GEMM},
    {"*moe_align*", CMP_ROUTING},
    {"*topk*", CMP_ROUTING},
    {"*TopK*", CMP_ROUTING},
    /* dense GEMMs: cuBLASLt's nvjet and xmma kernels, its split-K reduce,
     * cutlass, fp8 scaled_mm, FBGEMM */
    {"nvjet_*", CMP_GEMM},
    {"*xmma*", CMP_GEMM},
    {"*splitKreduce*", CMP_GEMM},
    {"*gemm*", CMP_GEMM},
    {"*Gemm*", CMP_GEMM},
    {"*cutlass*", CMP_GEMM},
    /* norms: F.rms_norm runs layer_norm's kernel; fused add+RMSNorm */
    {"*layer_norm*", CMP_NORM},
    {"*rms_norm*", CMP_NORM},
    {"*RMSNorm*", CMP_NORM},
    {"*rmsnorm*", CMP_NORM},
    /* the router's softmax, top-k (sbtopk, bitonic sort), the permute's sort,
     * scan and scatter, the weighted sum's reduction, sampling's argmax */
    {"*softmax*", CMP_ROUTING},
    {"*Sort*", CMP_ROUTING},
    {"*sort*", CMP_ROUTING},
    {"*DeviceScan*", CMP_ROUTING},
    {"*fill_reverse_indices*", CMP_ROUTING},
    {"*scatter_gather*", CMP_ROUTING},
    {"*reduce_kernel*", CMP_ROUTING},
    /* memory-bound rest: copies, casts, adds, muls, RoPE pieces, SwiGLU,
     * gathers, fills, KV-cache writes, rotary and activation kernels */
    {"*elementwise*", CMP_ELEMENTWISE},
    {"*copy*", CMP_ELEMENTWISE},
    {"*Copy*", CMP_ELEMENTWISE},
    {"*gather*", CMP_ELEMENTWISE},
    {"*indexSelect*", CMP_ELEMENTWISE},
    {"*index*", CMP_ELEMENTWISE},
    {"*rotary*", CMP_ELEMENTWISE},
    {"*reshape_and_cache*", CMP_ELEMENTWISE},
    {"*act_and_mul*", CMP_ELEMENTWISE},
    {"*silu*", CMP_ELEMENTWISE},
    {"Memcpy*", CMP_ELEMENTWISE},
    {"Memset*", CMP_ELEMENTWISE},
};

int cmp_class_of_kernel(const char *name)
{
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (fnmatch(rules[i].pattern, name, 0) == 0)
            return rules[i].cls;
    return CMP_UNMATCHED;
}

int cmp_class_of_category(const char *cat)
{
    static const struct {
        const char *cat;
        int cls;
    } t[] = {
        {"gemm", CMP_GEMM},          {"grouped_gemm", CMP_GEMM},
        {"moe_gemm", CMP_MOE_GEMM},  {"attention", CMP_ATTENTION},
        {"sparse_attention", CMP_ATTENTION}, {"indexer", CMP_ATTENTION},
        {"norm", CMP_NORM},          {"topk", CMP_ROUTING},
        {"moe_permute", CMP_ROUTING}, {"moe_unpermute", CMP_ROUTING},
        {"elementwise", CMP_ELEMENTWISE}, {"activation", CMP_ELEMENTWISE},
        {"rope", CMP_ELEMENTWISE},   {"embedding", CMP_ELEMENTWISE},
        {"kv_write", CMP_ELEMENTWISE}, {"lse_merge", CMP_ELEMENTWISE},
        {"act_quant", CMP_ELEMENTWISE}, {"copy", CMP_ELEMENTWISE},
        {"gelu", CMP_ELEMENTWISE},   {"layer_norm", CMP_NORM},
        {"all_reduce", CMP_ALL_REDUCE}, {"all_gather", CMP_ALL_GATHER},
        {"reduce_scatter", CMP_REDUCE_SCATTER}, {"all_to_all", CMP_SEND_RECV},
        {"hop", CMP_SEND_RECV},      {"broadcast", CMP_BROADCAST},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(t[i].cat, cat) == 0)
            return t[i].cls;
    return CMP_UNMATCHED;
}
