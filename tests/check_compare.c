/* check_compare: cpsim compare's two readers and its reduction
 * (reports/compare/compare.h) on the real profiler traces of tests/traces/
 * (the engine of platforms/calibration/scripts/single-gpu/engine_checks.py
 * on one H200: a 2K prefill and a mixed step eager, a batch-8 decode step
 * eager and replayed from a CUDA graph) and on small traces written here:
 * every device event is read and classed, the class totals add up to the
 * trace's own sum, the layer marks are found, op marks class a kernel
 * exactly (on the device's ranges and through the host's), the overlap of
 * two streams, and the refusals. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "reports/compare/compare.h"

#ifndef CP_SRCDIR
#define CP_SRCDIR "."
#endif

static const char *const traces[] = {"trace_prefill_2k_eager", "trace_mixed_eager",
                                     "trace_decode_b8_eager",  "trace_decode_b8_graph",
                                     "trace_prefill_2k_opmarks", "trace_decode_b8_opmarks"};

/* The trace's device events and their summed duration, counted here from
 * the JSON directly (gzip read whole). */
static void own_sum(const char *path, size_t *n, double *us)
{
    gzFile gz = gzopen(path, "rb");
    ck_assert_ptr_nonnull(gz);
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    int got;
    while ((got = gzread(gz, buf + len, (unsigned)(cap - len))) > 0) {
        len += (size_t)got;
        if (len == cap)
            buf = realloc(buf, cap *= 2);
    }
    gzclose(gz);
    json_error_t je;
    json_t *root = json_loadb(buf, len, 0, &je);
    free(buf);
    ck_assert_ptr_nonnull(root);
    *n = 0;
    *us = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(json_object_get(root, "traceEvents"), i, ev) {
        const char *cat = json_string_value(json_object_get(ev, "cat"));
        if (cat && (!strcmp(cat, "kernel") || !strcmp(cat, "gpu_memcpy") ||
                    !strcmp(cat, "gpu_memset"))) {
            (*n)++;
            *us += json_number_value(json_object_get(ev, "dur"));
        }
    }
    json_decref(root);
}

/* Each real trace: every event read, every one classed by a rule, the class
 * totals equal to the trace's sum, the classes of a thinker layer present,
 * the four layers marked (the graph replay marks none: its ranges were
 * captured, not replayed). */
START_TEST(real_traces)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/traces/%s.json.gz", CP_SRCDIR, traces[_i]);
    size_t n;
    double us;
    own_sum(path, &n, &us);
    cmp_trace t;
    cp_err err = {0};
    ck_assert_msg(cmp_read_profile(path, NULL, NULL, 0, -1, &t, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(t.n, n);
    cmp_side s;
    cmp_reduce(&t, NULL, &s);
    double sum = s.unmatched_us;
    for (int c = 0; c < CMP_NCLASSES; c++)
        sum += s.us[c];
    ck_assert_msg(fabs(sum - us) < 1e-6 * us, "%s: classes %.3f us, trace %.3f us", traces[_i],
                  sum, us);
    ck_assert_msg(s.unmatched == 0, "%s: %lld kernels unmatched", traces[_i], s.unmatched);
    static const int present[] = {CMP_GEMM, CMP_MOE_GEMM, CMP_ATTENTION, CMP_NORM, CMP_ROUTING,
                                  CMP_ELEMENTWISE};
    for (size_t k = 0; k < sizeof present / sizeof present[0]; k++)
        ck_assert_msg(s.count[present[k]] > 0, "%s: no %s kernel", traces[_i],
                      cmp_class_name(present[k]));
    int graph = strstr(traces[_i], "graph") != NULL;
    ck_assert_int_eq(t.layers, graph ? 0 : 4);
    /* one GPU, one stream: busy within the span, no communication */
    ck_assert(s.busy_us <= s.span_us + 1e-9 && s.busy_us > 0.5 * sum);
    ck_assert(s.comm_us == 0 && s.exposed_us == 0);
    cmp_trace_free(&t);
}
END_TEST

/* The traces taken with every op marked as cpsim names it (engine_checks.py
 * OPMARKS): each kernel is classed by its op's range, as the op of the
 * thinker's trace.json is (the category beside each name), and the total
 * stays the trace's. */
START_TEST(op_marked_traces)
{
    static const char *const ops[] = {
        "embedding",   "input_norm", "qkv_proj",       "qk_contiguous", "qk_norm",
        "rope_cos_sin", "rope",      "kv_write",       "attention",     "o_proj",
        "residual_add", "post_attn_norm", "router",    "topk",          "moe_permute",
        "expert_gate_up", "expert_act", "expert_down", "moe_unpermute", "final_norm",
        "lm_head",     "sample"};
    static const char *const cats[] = {
        "embedding",   "norm",       "gemm",           "copy",          "norm",
        "copy",        "rope",       "kv_write",       "attention",     "gemm",
        "elementwise", "norm",       "gemm",           "topk",          "moe_permute",
        "moe_gemm",    "activation", "moe_gemm",       "moe_unpermute", "norm",
        "gemm",        "topk"};
    int cls[sizeof ops / sizeof ops[0]];
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        cls[i] = cmp_class_of_category(cats[i]);
    const char *name = _i ? "trace_decode_b8_opmarks" : "trace_prefill_2k_opmarks";
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/traces/%s.json.gz", CP_SRCDIR, name);
    size_t n;
    double us;
    own_sum(path, &n, &us);
    cmp_trace t;
    cp_err err = {0};
    ck_assert_msg(cmp_read_profile(path, ops, cls, sizeof ops / sizeof ops[0], -1, &t, &err) == 0,
                  "%s", err.msg);
    ck_assert_uint_eq(t.n, n);
    ck_assert_msg(t.marked_ops == (int)n, "%s: %d of %zu kernels in op ranges", name,
                  t.marked_ops, n);
    ck_assert_int_eq(t.layers, 4);
    cmp_side s;
    cmp_reduce(&t, NULL, &s);
    double sum = s.unmatched_us;
    for (int c = 0; c < CMP_NCLASSES; c++)
        sum += s.us[c];
    ck_assert(fabs(sum - us) < 1e-6 * us);
    /* a thinker layer's 3 dense GEMMs and 2 grouped ones (+ their prepare) in each layer */
    ck_assert_int_eq(s.count[CMP_MOE_GEMM], 4 * 4);
    ck_assert(s.layer_us[CMP_GEMM] > 0 && s.layer_us[CMP_ROUTING] > 0);
    cmp_trace_free(&t);
}
END_TEST

/* Names the rules must class as the engines' kernels are (from the traces
 * above, NCCL's device kernels and vLLM's). */
START_TEST(kernel_names)
{
    static const struct {
        const char *name;
        int cls;
    } t[] = {
        {"nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_TNT", CMP_GEMM},
        {"void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16>()", CMP_GEMM},
        {"_ZN7cutlass13device_kernelIN2at4cuda6detail25enable_3x_kernel_for_sm9xINS_4gemm6kernel13"
         "GemmUniversalINS5_17GroupProblemShapeIN4cute5tupleIJiiiEEEEE", CMP_MOE_GEMM},
        {"fused_moe_kernel", CMP_MOE_GEMM},
        {"void pytorch_flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128>>()",
         CMP_ATTENTION},
        {"void flash::FlashAttnFwdSm90<>()", CMP_ATTENTION},
        {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16>()",
         CMP_NORM},
        {"void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>()", CMP_NORM},
        {"void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>()", CMP_ROUTING},
        {"void (anonymous namespace)::softmax_warp_forward<float, float, float, 7>()",
         CMP_ROUTING},
        {"void vllm::moe::moe_align_block_size_kernel<int>()", CMP_ROUTING},
        {"void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<"
         "at::native::direct_copy_kernel_cuda>()", CMP_ELEMENTWISE},
        {"void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16>()", CMP_ELEMENTWISE},
        {"Memset (Device)", CMP_ELEMENTWISE},
        {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
         CMP_ALL_REDUCE},
        {"void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>()", CMP_ALL_REDUCE},
        {"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", CMP_ALL_GATHER},
        {"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL()", CMP_REDUCE_SCATTER},
        {"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", CMP_SEND_RECV},
        {"my_custom_kernel_v2", CMP_UNMATCHED},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        ck_assert_msg(cmp_class_of_kernel(t[i].name) == t[i].cls, "%s: %s, expected %s",
                      t[i].name, cmp_class_name(cmp_class_of_kernel(t[i].name)),
                      cmp_class_name(t[i].cls));
    ck_assert_int_eq(cmp_class_of_category("moe_permute"), CMP_ROUTING);
    ck_assert_int_eq(cmp_class_of_category("hop"), CMP_SEND_RECV);
    ck_assert_int_eq(cmp_class_of_category("step"), CMP_UNMATCHED);
}
END_TEST

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* A kernel no rule knows, inside a device range named as a run's op, takes
 * the op's class; one launched inside a host range "layer.2" (the device
 * side unmarked) is in layer 2; an NCCL kernel on a second stream under a
 * GEMM overlaps it by 5 of its 15 us. */
static const char marked[] =
    "{\"traceEvents\": [\n"
    " {\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"qkv_proj\", \"tid\": 7,"
    " \"ts\": 100, \"dur\": 20},\n"
    " {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"my_custom_kernel_v2\", \"ts\": 100,"
    " \"dur\": 10, \"args\": {\"stream\": 7, \"correlation\": 1}},\n"
    " {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"layer.2\", \"ts\": 0,"
    " \"dur\": 50},\n"
    " {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"ts\": 10,"
    " \"dur\": 3, \"args\": {\"correlation\": 2}},\n"
    " {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllReduce_Sum_bf16\","
    " \"ts\": 105, \"dur\": 15, \"args\": {\"stream\": 9, \"correlation\": 2}},\n"
    " {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"another_unknown\", \"ts\": 130,"
    " \"dur\": 2, \"args\": {\"stream\": 7, \"correlation\": 3}}\n"
    "]}\n";

START_TEST(marks_and_overlap)
{
    char path[] = "/tmp/cpsim-kineto-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    write_file(path, marked);
    const char *ops[] = {"qkv_proj", "attention"};
    const int cls[] = {CMP_GEMM, CMP_ATTENTION};
    cmp_trace t;
    cp_err err = {0};
    ck_assert_msg(cmp_read_profile(path, ops, cls, 2, -1, &t, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(t.n, 3);
    ck_assert_int_eq(t.k[0].cls, CMP_GEMM);
    ck_assert_int_eq(t.k[0].by_mark, 1);
    ck_assert_int_eq(t.marked_ops, 1);
    ck_assert_int_eq(t.k[1].layer, 2);
    ck_assert_int_eq(t.k[1].cls, CMP_ALL_REDUCE);
    ck_assert_int_eq(t.k[2].cls, CMP_UNMATCHED);
    ck_assert_int_eq(t.layers, 1);
    cmp_side s;
    cmp_reduce(&t, NULL, &s);
    ck_assert_double_eq_tol(s.comm_us, 15, 1e-9);
    ck_assert_double_eq_tol(s.overlap_us, 5, 1e-9);
    ck_assert_double_eq_tol(s.exposed_us, 10, 1e-9);
    ck_assert_double_eq_tol(s.busy_us, 22, 1e-9);
    ck_assert_double_eq_tol(s.span_us, 32, 1e-9);
    ck_assert_double_eq_tol(s.idle_us, 10, 1e-9);
    ck_assert_double_eq_tol(s.unmatched_us, 2, 1e-9);
    ck_assert_double_eq_tol(s.layer_us[CMP_ALL_REDUCE], 15, 1e-9);
    size_t idx[4];
    double us[4];
    long long cnt[4];
    ck_assert_uint_eq(cmp_unmatched(&t, idx, us, cnt, 4), 1);
    ck_assert_str_eq(t.names[idx[0]], "another_unknown");
    cmp_trace_free(&t);
    unlink(path);
}
END_TEST

/* A trace of one process driving two GPUs: each device read alone, its own
 * ranges marking its kernels; a device that ran nothing refused. */
START_TEST(devices)
{
    char path[] = "/tmp/cpsim-kineto2-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    write_file(path, "{\"traceEvents\": [\n"
                     " {\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"layer.3\","
                     " \"pid\": 1, \"tid\": 7, \"ts\": 0, \"dur\": 100},\n"
                     " {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"nvjet_a\", \"pid\": 0,"
                     " \"ts\": 10, \"dur\": 5, \"args\": {\"device\": 0, \"stream\": 7}},\n"
                     " {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"nvjet_b\", \"pid\": 1,"
                     " \"ts\": 10, \"dur\": 7, \"args\": {\"device\": 1, \"stream\": 7}},\n"
                     " {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"nvjet_c\", \"pid\": 1,"
                     " \"ts\": 20, \"dur\": 3, \"args\": {\"device\": 1, \"stream\": 7}}\n]}\n");
    cmp_trace t;
    cp_err err = {0};
    ck_assert_msg(cmp_read_profile(path, NULL, NULL, 0, -1, &t, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(t.device, 0);
    ck_assert_int_eq(t.ndevices, 2);
    ck_assert_uint_eq(t.n, 1);
    ck_assert_int_eq(t.layers, 0);
    cmp_trace_free(&t);
    ck_assert_msg(cmp_read_profile(path, NULL, NULL, 0, 1, &t, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(t.n, 2);
    ck_assert_int_eq(t.layers, 1);
    ck_assert_int_eq(t.k[0].layer, 3);
    cmp_trace_free(&t);
    ck_assert_int_eq(cmp_read_profile(path, NULL, NULL, 0, 5, &t, &err), -1);
    ck_assert_msg(strstr(err.msg, "no kernel ran on device 5"), "%s", err.msg);
    unlink(path);
}
END_TEST

/* A run folder's trace: rank 1's ops with their kernel counts, step by step;
 * the refusals name what is missing. */
START_TEST(run_trace_and_refusals)
{
    char dir[] = "/tmp/cpsim-cmprun-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/trace.json", dir);
    /* tid = 1 + rank * 3 + stream (reports/report.h REP_TRACE_ID_BASE, ST_COUNT) */
    write_file(path, "{\"traceEvents\": [\n"
                     " {\"ph\": \"X\", \"tid\": 4, \"ts\": 0, \"dur\": 5, \"name\": \"step\","
                     " \"cat\": \"step\", \"args\": {\"step\": 0}},\n"
                     " {\"ph\": \"X\", \"tid\": 4, \"ts\": 1, \"dur\": 2, \"name\": \"rope\","
                     " \"cat\": \"rope\", \"args\": {\"layer\": 0, \"step\": 0,"
                     " \"kernels\": 10}},\n"
                     " {\"ph\": \"X\", \"tid\": 5, \"ts\": 2, \"dur\": 3, \"name\": \"ar\","
                     " \"cat\": \"all_reduce\", \"args\": {\"layer\": 0, \"step\": 1}},\n"
                     " {\"ph\": \"X\", \"tid\": 1, \"ts\": 1, \"dur\": 2, \"name\": \"rope\","
                     " \"cat\": \"rope\", \"args\": {\"layer\": 0, \"step\": 0}}\n]}\n");
    cmp_trace t;
    int *k;
    cp_err err = {0};
    ck_assert_msg(cmp_read_run(dir, 1, -1, &t, &k, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(t.n, 2);
    ck_assert_int_eq(k[0], 10);
    ck_assert_int_eq(t.nsteps, 2);
    cmp_side s;
    cmp_reduce(&t, k, &s);
    ck_assert_int_eq(s.count[CMP_ELEMENTWISE], 10);
    ck_assert_double_eq_tol(s.overlap_us, 1, 1e-12);
    ck_assert_double_eq_tol(s.exposed_us, 2, 1e-12);
    cmp_trace_free(&t);
    free(k);
    ck_assert_msg(cmp_read_run(dir, 1, 1, &t, &k, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(t.n, 1);
    cmp_trace_free(&t);
    free(k);
    ck_assert_int_eq(cmp_read_run(dir, 1, 5, &t, &k, &err), -1);
    ck_assert_msg(strstr(err.msg, "no op of rank 1 in step 5"), "%s", err.msg);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(cmp_read_run(dir, 3, -1, &t, &k, &err), -1);
    ck_assert_msg(strstr(err.msg, "no rank 3 (the trace has 2)"), "%s", err.msg);
    /* a steps trace: no ops */
    write_file(path, "{\"traceEvents\": [{\"ph\": \"X\", \"tid\": 1, \"ts\": 0, \"dur\": 5, "
                     "\"name\": \"step\", \"cat\": \"step\", \"args\": {\"step\": 0}}]}\n");
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(cmp_read_run(dir, 0, -1, &t, &k, &err), -1);
    ck_assert_msg(strstr(err.msg, "--trace full"), "%s", err.msg);
    unlink(path);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(cmp_read_run(dir, 0, -1, &t, &k, &err), -1);
    ck_assert_msg(strstr(err.msg, "no trace.json"), "%s", err.msg);
    /* profiles: malformed JSON names line and column; no device events */
    snprintf(path, sizeof path, "%s/p.json", dir);
    write_file(path, "{\"traceEvents\": [\n  {\"ph\": \"X\",, }\n]}\n");
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(cmp_read_profile(path, NULL, NULL, 0, -1, &t, &err), -1);
    ck_assert_int_eq(err.code, CP_EXIT_INPUT);
    ck_assert_msg(strstr(err.msg, "p.json:2:"), "%s", err.msg);
    write_file(path, "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", "
                     "\"ts\": 0, \"dur\": 1}]}\n");
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(cmp_read_profile(path, NULL, NULL, 0, -1, &t, &err), -1);
    ck_assert_msg(strstr(err.msg, "no device events"), "%s", err.msg);
    unlink(path);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(cmp_read_profile(path, NULL, NULL, 0, -1, &t, &err), -1);
    ck_assert_msg(strstr(err.msg, "cannot open"), "%s", err.msg);
    rmdir(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("compare");
    TCase *tc = tcase_create("compare");
    tcase_add_loop_test(tc, real_traces, 0, sizeof traces / sizeof traces[0]);
    tcase_add_loop_test(tc, op_marked_traces, 0, 2);
    tcase_add_test(tc, kernel_names);
    tcase_add_test(tc, marks_and_overlap);
    tcase_add_test(tc, devices);
    tcase_add_test(tc, run_trace_and_refusals);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
