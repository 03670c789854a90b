/* check_arch: tests of the model-structure loader (models/arch.c) on the
 * bundled Hugging Face configs (models/configs/) and the small or broken
 * configs in tests/configs/. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/arch.h"
#include "base/datadir.h"

#ifndef CP_SRCDIR
#define CP_SRCDIR "."
#endif
#define FIXTURES CP_SRCDIR "/tests/configs"

static void load_ok(const char *spec, const char *base_dir, arch *a)
{
    cp_err e = {0};
    int rc = arch_load(spec, base_dir, a, &e);
    ck_assert_msg(rc == 0, "%s: %s", spec, e.msg);
    ck_assert_int_eq(e.code, 0);
}

static void load_fails(const char *spec, const char *base_dir, const char *want)
{
    arch a;
    cp_err e = {0};
    ck_assert_int_eq(arch_load(spec, base_dir, &a, &e), -1);
    ck_assert_int_eq(e.code, CP_EXIT_INPUT);
    ck_assert_str_eq(e.msg, want);
}

/* got within 0.5 % of want. */
static void ck_near(double got, double want, const char *what)
{
    ck_assert_msg(fabs(got / want - 1) <= 0.005, "%s: got %.6g, want %.6g (+-0.5%%)", what, got,
                  want);
}

static void ck_layer_moe(const arch *a, const uint8_t *want, int n)
{
    ck_assert_int_eq(a->layers, n);
    for (int i = 0; i < n; i++)
        ck_assert_msg(a->layer_moe[i] == want[i], "%s layer %d: moe %d, want %d", a->name, i,
                      a->layer_moe[i], want[i]);
}

START_TEST(test_bundled_all_load)
{
    int n = 0;
    for (const char *const *m = arch_bundled; *m; m++, n++) {
        arch a;
        char want[1024], rel[256];
        snprintf(rel, sizeof rel, "models/configs/%s.json", *m);
        load_ok(*m, NULL, &a);
        ck_assert_str_eq(a.name, *m);
        ck_assert_str_eq(a.path, cp_data_path(want, sizeof want, rel));
        ck_assert_int_gt(arch_total_params(&a), 0);
        ck_assert_str_eq(a.torch_dtype, "bfloat16");
    }
    ck_assert_int_eq(n, 11); /* the eleven files of models/configs/ */
}
END_TEST

START_TEST(test_thinker_nested)
{
    arch a;
    load_ok("qwen3-omni-30b-a3b-thinker", NULL, &a);
    ck_assert_int_eq(a.attn, ATTN_GQA);
    ck_assert_int_eq(a.hidden, 2048);
    ck_assert_int_eq(a.layers, 48);
    ck_assert_int_eq(a.heads, 32);
    ck_assert_int_eq(a.kv_heads, 4);
    ck_assert_int_eq(a.head_dim, 128);
    ck_assert_int_eq(a.qk_norm, 1);
    ck_assert_int_eq(a.attention_bias, 0);
    ck_assert_int_eq(a.vocab, 152064);
    ck_assert_int_eq(a.max_position, 65536);
    ck_assert_int_eq(a.tie_embeddings, 0);
    ck_assert_int_eq(a.has_moe, 1);
    ck_assert_int_eq(a.experts, 128);
    ck_assert_int_eq(a.top_k, 8);
    ck_assert_int_eq(a.moe_intermediate, 768);
    ck_assert_int_eq(a.shared_experts, 0);
    ck_assert_int_eq(a.shared_intermediate, 0);
    ck_assert_int_eq(a.dense_layers, 0);
    for (int i = 0; i < 48; i++)
        ck_assert_int_eq(a.layer_moe[i], 1);
    ck_assert_int_eq(a.has_dsa, 0);
    /* only at the top level of the file: found by the fallback */
    ck_assert_str_eq(a.torch_dtype, "bfloat16");
}
END_TEST

START_TEST(test_glm51_mla_dsa)
{
    arch a;
    load_ok("glm-5.1", NULL, &a);
    ck_assert_int_eq(a.attn, ATTN_MLA);
    ck_assert_int_eq(a.has_dsa, 1);
    ck_assert_int_eq(a.hidden, 6144);
    ck_assert_int_eq(a.layers, 78);
    ck_assert_int_eq(a.heads, 64);
    ck_assert_int_eq(a.kv_heads, 64);
    ck_assert_int_eq(a.head_dim, 256); /* 192 + 64, not the config's "head_dim": 64 */
    ck_assert_int_eq(a.q_lora_rank, 2048);
    ck_assert_int_eq(a.kv_lora_rank, 512);
    ck_assert_int_eq(a.qk_nope_dim, 192);
    ck_assert_int_eq(a.qk_rope_dim, 64);
    ck_assert_int_eq(a.v_head_dim, 256);
    ck_assert_int_eq(a.index_heads, 32);
    ck_assert_int_eq(a.index_head_dim, 128);
    ck_assert_int_eq(a.index_topk, 2048);
    ck_assert_int_eq(a.intermediate, 12288);
    ck_assert_int_eq(a.experts, 256);
    ck_assert_int_eq(a.top_k, 8);
    ck_assert_int_eq(a.shared_experts, 1);
    ck_assert_int_eq(a.shared_intermediate, 2048);
    ck_assert_int_eq(a.dense_layers, 3);
    for (int i = 0; i < 78; i++)
        ck_assert_int_eq(a.layer_moe[i], i >= 3);
    ck_assert_int_eq(a.mtp_layers, 1);
    ck_assert_int_eq(a.max_position, 202752);
    ck_assert_int_eq(arch_kv_elems_per_token_layer(&a), 576);
}
END_TEST

START_TEST(test_deepseek_mla)
{
    arch a;
    load_ok("deepseek-v3", NULL, &a);
    ck_assert_int_eq(a.attn, ATTN_MLA);
    ck_assert_int_eq(a.has_dsa, 0);
    ck_assert_int_eq(a.index_topk, 0);
    ck_assert_int_eq(a.layers, 61);
    ck_assert_int_eq(a.kv_heads, 128);
    ck_assert_int_eq(a.head_dim, 192);
    ck_assert_int_eq(a.q_lora_rank, 1536);
    ck_assert_int_eq(a.dense_layers, 3);
    ck_assert_int_eq(a.shared_experts, 1);
    ck_assert_int_eq(arch_kv_elems_per_token_layer(&a), 576);

    load_ok("deepseek-v3.2-exp", NULL, &a);
    ck_assert_int_eq(a.attn, ATTN_MLA);
    ck_assert_int_eq(a.has_dsa, 1);
    ck_assert_int_eq(a.index_heads, 64);
    ck_assert_int_eq(a.index_head_dim, 128);
    ck_assert_int_eq(a.index_topk, 2048);
}
END_TEST

START_TEST(test_dense_gqa)
{
    arch a;
    load_ok("qwen3-32b", NULL, &a);
    ck_assert_int_eq(a.attn, ATTN_GQA);
    ck_assert_int_eq(a.has_moe, 0);
    ck_assert_int_eq(a.layers, 64);
    ck_assert_int_eq(a.dense_layers, 64);
    ck_assert_int_eq(a.heads, 64);
    ck_assert_int_eq(a.kv_heads, 8);
    ck_assert_int_eq(a.head_dim, 128);
    /* no use_qk_norm field: from the class Qwen3ForCausalLM */
    ck_assert_str_eq(a.arch_class, "Qwen3ForCausalLM");
    ck_assert_int_eq(a.qk_norm, 1);
    ck_assert_int_eq(a.intermediate, 25600);
    ck_assert_int_eq(arch_kv_elems_per_token_layer(&a), 2048);
    for (int i = 0; i < 64; i++)
        ck_assert_int_eq(a.layer_moe[i], 0);

    load_ok("llama-3.1-70b", NULL, &a);
    ck_assert_int_eq(a.attn, ATTN_GQA);
    ck_assert_int_eq(a.has_moe, 0);
    ck_assert_int_eq(a.layers, 80);
    ck_assert_int_eq(a.dense_layers, 80);
    ck_assert_int_eq(a.heads, 64);
    ck_assert_int_eq(a.kv_heads, 8);
    ck_assert_int_eq(a.head_dim, 128);
    ck_assert_int_eq(a.intermediate, 28672);
    ck_assert_int_eq(a.vocab, 128256);
    ck_assert_int_eq(a.max_position, 131072);
    ck_assert_int_eq(arch_kv_elems_per_token_layer(&a), 2048);
    ck_assert_str_eq(a.arch_class, "LlamaForCausalLM");
    ck_assert_int_eq(a.qk_norm, 0); /* not a q/k-norm class, no field */
}
END_TEST

START_TEST(test_qwen3_moe)
{
    arch a;
    load_ok("qwen3-30b-a3b", NULL, &a);
    ck_assert_int_eq(a.attn, ATTN_GQA);
    ck_assert_int_eq(a.has_moe, 1);
    ck_assert_int_eq(a.experts, 128);
    ck_assert_int_eq(a.top_k, 8);
    ck_assert_int_eq(a.moe_intermediate, 768);
    ck_assert_int_eq(a.shared_experts, 0);
    ck_assert_int_eq(a.dense_layers, 0);
    ck_assert_int_eq(arch_kv_elems_per_token_layer(&a), 1024);
    ck_assert_int_eq(a.qk_norm, 1); /* class Qwen3MoeForCausalLM */
}
END_TEST

/* Figures of /work/shared/design/models-hardware.md section 2.2 "Derived
 * counts" (0 = not listed there). */
static const struct {
    const char *model;
    double total, attn, indexer, moe;
} note_counts[] = {
    {"glm-5", 743.9e9, 174.4e6, 9.4e6, 9.70e9},
    {"glm-5.1", 743.9e9, 174.4e6, 9.4e6, 9.70e9}, /* same weights as GLM-5 */
    {"deepseek-v3.2-exp", 671.9e9, 201.1e6, 14.0e6, 11.32e9},
    {"deepseek-v3", 671.0e9, 187.1e6, 0, 11.32e9},
    {"deepseek-r1", 671.0e9, 187.1e6, 0, 11.32e9}, /* DeepSeek-V3's architecture */
    /* the Qwen3-235B-A22B model card: "235B in total" */
    {"qwen3-235b-a22b", 235.0e9, 0, 0, 0},
    {"qwen3-omni-30b-a3b-thinker", 30.53e9, 18.9e6, 0, 0.604e9},
    {"qwen3-32b", 32.76e9, 0, 0, 0},
    /* 30.5 B: https://apxml.com/models/qwen3-30b-a3b ("30.5 billion
     * parameters in total"), the Qwen3-30B-A3B model card figure */
    {"qwen3-30b-a3b", 30.5e9, 0, 0, 0},
    /* the Llama 3.1 405B model card's "405B" (to the 0.5 % of ck_near);
     * attention per layer: q and o 16384^2 each, k and v 16384 x 1024 each
     * (8 KV heads of 128) */
    {"llama-3.1-405b", 405.85e9, 2.0 * 16384 * 16384 + 2.0 * 16384 * 1024, 0, 0},
};

START_TEST(test_param_counts)
{
    arch a, no_dsa;
    char what[160];
    load_ok(note_counts[_i].model, NULL, &a);
    snprintf(what, sizeof what, "%s total", a.name);
    ck_near((double)arch_total_params(&a), note_counts[_i].total, what);
    if (note_counts[_i].attn > 0) {
        snprintf(what, sizeof what, "%s attention per layer", a.name);
        ck_near((double)arch_attn_params_per_layer(&a), note_counts[_i].attn, what);
    }
    if (note_counts[_i].indexer > 0) {
        no_dsa = a;
        no_dsa.has_dsa = 0;
        snprintf(what, sizeof what, "%s indexer per layer", a.name);
        ck_near((double)(arch_attn_params_per_layer(&a) - arch_attn_params_per_layer(&no_dsa)),
                note_counts[_i].indexer, what);
    }
    if (note_counts[_i].moe > 0) {
        snprintf(what, sizeof what, "%s MoE per layer", a.name);
        ck_near((double)arch_ffn_params(&a, (int)a.layers - 1), note_counts[_i].moe, what);
    }
}
END_TEST

START_TEST(test_ffn_per_layer)
{
    arch a;
    load_ok("glm-5", NULL, &a);
    /* derived: dense layer 3 * hidden * intermediate = 3 * 6144 * 12288 */
    ck_assert_int_eq(arch_ffn_params(&a, 0), INT64_C(3) * 6144 * 12288);
    ck_assert_int_eq(arch_ffn_params(&a, 2), INT64_C(3) * 6144 * 12288);
    /* derived: router 256 * 6144 + experts 256 * 3 * 6144 * 2048
     * + shared 3 * 6144 * 2048 */
    ck_assert_int_eq(arch_ffn_params(&a, 3), INT64_C(256) * 6144 + INT64_C(256) * 3 * 6144 * 2048 +
                                                 INT64_C(3) * 6144 * 2048);
    ck_assert_int_eq(arch_ffn_params(&a, -1), 0);
    ck_assert_int_eq(arch_ffn_params(&a, 78), 0);
}
END_TEST

/* Element-exact attention of GLM-5 (shapes of models-hardware.md 2.2). */
START_TEST(test_glm_attention_exact)
{
    arch a, no_dsa;
    load_ok("glm-5", NULL, &a);
    no_dsa = a;
    no_dsa.has_dsa = 0;
    /* derived: wq_b 32*128*2048 + wk 128*6144 + k_norm 2*128
     * + weights_proj 32*6144 */
    const int64_t indexer = INT64_C(32) * 128 * 2048 + 128 * 6144 + 2 * 128 + 32 * 6144;
    /* derived: norms 2*6144 + q_a 2048*6144 + q_a_norm 2048 + q_b 16384*2048
     * + kv_a 576*6144 + kv_a_norm 512 + kv_b 28672*512 + o 6144*16384 */
    const int64_t mla = INT64_C(2) * 6144 + INT64_C(2048) * 6144 + 2048 + INT64_C(16384) * 2048 +
                        INT64_C(576) * 6144 + 512 + INT64_C(28672) * 512 + INT64_C(6144) * 16384;
    ck_assert_int_eq(arch_attn_params_per_layer(&no_dsa), mla);
    ck_assert_int_eq(arch_attn_params_per_layer(&a), mla + indexer);
}
END_TEST

/* Smallest config: every optional field at its default. */
START_TEST(test_tiny_defaults)
{
    arch a;
    load_ok(FIXTURES "/tiny-gqa.json", NULL, &a);
    ck_assert_str_eq(a.name, "tiny-gqa");
    ck_assert_str_eq(a.path, FIXTURES "/tiny-gqa.json");
    ck_assert_int_eq(a.attn, ATTN_GQA);
    ck_assert_int_eq(a.kv_heads, 4);
    ck_assert_int_eq(a.head_dim, 16); /* 64 / 4 */
    ck_assert_int_eq(a.qk_norm, 0);
    ck_assert_int_eq(a.attention_bias, 0);
    ck_assert_int_eq(a.tie_embeddings, 0);
    ck_assert_int_eq(a.max_position, 0);
    ck_assert_int_eq(a.mtp_layers, 0);
    ck_assert_str_eq(a.torch_dtype, "");
    ck_assert_int_eq(a.has_moe, 0);
    ck_assert_int_eq(a.dense_layers, 2);
    /* derived: norms 2*64 + q,k,v,o 4 * 64*64 = 16512 */
    ck_assert_int_eq(arch_attn_params_per_layer(&a), 16512);
    /* derived: 3 * 64 * 128 */
    ck_assert_int_eq(arch_ffn_params(&a, 1), 24576);
    /* derived: 2 * (16512 + 24576) + embed+head 2*100*64 + final norm 64 */
    ck_assert_int_eq(arch_total_params(&a), 95040);
    ck_assert_int_eq(arch_kv_elems_per_token_layer(&a), 128); /* 2 * 4 * 16 */
}
END_TEST

/* Explicit head_dim and kv heads, biases, qk-norm and booleans as 0/1,
 * tied embeddings, "dtype" (newer transformers) instead of torch_dtype. */
START_TEST(test_tiny_bias_qknorm)
{
    arch a;
    load_ok(FIXTURES "/tiny-gqa-bias.json", NULL, &a);
    ck_assert_int_eq(a.kv_heads, 2);
    ck_assert_int_eq(a.head_dim, 32);
    ck_assert_int_eq(a.qk_norm, 1);
    ck_assert_int_eq(a.attention_bias, 1);
    ck_assert_int_eq(a.tie_embeddings, 1);
    ck_assert_int_eq(a.max_position, 4096);
    ck_assert_str_eq(a.torch_dtype, "float16");
    /* derived: norms 128 + q 64*128 + k,v 2*64*64 + o 128*64 + qk-norm 2*32
     * + biases q 128, k,v 2*64, o 64 = 25088 */
    ck_assert_int_eq(arch_attn_params_per_layer(&a), 25088);
    /* derived: 2 * (25088 + 24576) + tied embedding 100*64 + final norm 64 */
    ck_assert_int_eq(arch_total_params(&a), 105792);
    ck_assert_int_eq(arch_kv_elems_per_token_layer(&a), 128); /* 2 * 2 * 32 */
}
END_TEST

/* Qwen-MoE placement (decoder_sparse_step, mlp_only_layers), one shared
 * expert of shared_expert_intermediate_size, nested text_config with
 * top-level fallback. */
START_TEST(test_tiny_qwen_moe)
{
    static const uint8_t want[] = {0, 1, 0, 0, 0, 1}; /* (i+1) % 2 == 0, minus layer 3 */
    arch a;
    load_ok(FIXTURES "/tiny-qwen-moe.json", NULL, &a);
    ck_assert_int_eq(a.hidden, 64); /* nested value wins over top-level 999 */
    ck_assert_str_eq(a.torch_dtype, "bfloat16");
    ck_layer_moe(&a, want, 6);
    ck_assert_int_eq(a.dense_layers, 4);
    ck_assert_int_eq(a.shared_experts, 1);
    ck_assert_int_eq(a.shared_intermediate, 48);
    /* derived: router 8*64 + experts 8*3*64*32 + shared 3*64*48 */
    ck_assert_int_eq(arch_ffn_params(&a, 1), 58880);
    ck_assert_int_eq(arch_ffn_params(&a, 3), 24576);
    /* derived: 6 * 12416 + 4 * 24576 + 2 * 58880 + 2*100*64 + 64 */
    ck_assert_int_eq(arch_total_params(&a), 303424);
}
END_TEST

/* DeepSeek placement (first_k_dense_replace, moe_layer_freq), MLA without a
 * q latent (q_lora_rank null), attention biases, n_shared_experts = 2. */
START_TEST(test_tiny_ds_moe)
{
    static const uint8_t want[] = {0, 0, 1, 0, 1, 0}; /* i >= 1 and i % 2 == 0 */
    arch a;
    load_ok(FIXTURES "/tiny-ds-moe.json", NULL, &a);
    ck_assert_int_eq(a.attn, ATTN_MLA);
    ck_assert_int_eq(a.q_lora_rank, 0);
    ck_assert_int_eq(a.kv_heads, 4); /* num_key_value_heads 1 ignored under MLA */
    ck_assert_int_eq(a.head_dim, 24);
    ck_layer_moe(&a, want, 6);
    ck_assert_int_eq(a.dense_layers, 4);
    ck_assert_int_eq(a.shared_experts, 2);
    ck_assert_int_eq(a.shared_intermediate, 32);
    /* derived: norms 128 + q_proj 4*24*64 + kv_a (32+8)*64 + kv_a_norm 32
     * + kv_b 4*32*32 + o 4*16*64 + biases kv_a 40, o 64 = 17160 */
    ck_assert_int_eq(arch_attn_params_per_layer(&a), 17160);
    /* derived: router 4*64 + experts 4*3*64*16 + shared 3*64*32 */
    ck_assert_int_eq(arch_ffn_params(&a, 2), 18688);
    /* derived: 6 * 17160 + 4 * 3*64*96 + 2 * 18688 + 2*100*64 + 64 */
    ck_assert_int_eq(arch_total_params(&a), 226928);
    ck_assert_int_eq(arch_kv_elems_per_token_layer(&a), 40); /* 32 + 8 */
}
END_TEST

START_TEST(test_relative_paths)
{
    arch a;
    load_ok("tiny-gqa.json", FIXTURES, &a);
    ck_assert_str_eq(a.path, FIXTURES "/tiny-gqa.json");
    ck_assert_str_eq(a.name, "tiny-gqa");
    load_ok("configs/tiny-gqa.json", CP_SRCDIR "/tests", &a);
    ck_assert_str_eq(a.path, CP_SRCDIR "/tests/configs/tiny-gqa.json");
    load_ok(FIXTURES "/tiny-gqa.json", "/nonexistent", &a);
    ck_assert_str_eq(a.path, FIXTURES "/tiny-gqa.json");
}
END_TEST

/* Renames every model_type value under o, and every architectures value
 * too when `classes`; returns how many were renamed. */
static int disguise(json_t *o, int classes)
{
    const char *key;
    json_t *v;
    int n = 0;
    json_object_foreach(o, key, v) {
        if (json_is_object(v))
            n += disguise(v, classes);
    }
    if (json_object_get(o, "model_type")) {
        json_object_set_new(o, "model_type", json_string("mystery_lm"));
        n++;
    }
    if (classes && json_object_get(o, "architectures")) {
        json_object_set_new(o, "architectures", json_pack("[s]", "MysteryForCausalLM"));
        n++;
    }
    return n;
}

/* Same structure; with `classes` (architectures renamed) qk_norm and
 * arch_class may differ, the only things taken from the class. */
static void ck_same_structure(const arch *x, const arch *y, int classes)
{
#define SAME(f) ck_assert_msg(x->f == y->f, "%s: " #f " differs", x->name)
    SAME(hidden); SAME(layers); SAME(vocab); SAME(max_position); SAME(tie_embeddings);
    SAME(attn); SAME(heads); SAME(kv_heads); SAME(head_dim);
    SAME(attention_bias); SAME(q_lora_rank); SAME(kv_lora_rank); SAME(qk_nope_dim);
    SAME(qk_rope_dim); SAME(v_head_dim); SAME(has_dsa); SAME(index_heads);
    SAME(index_head_dim); SAME(index_topk); SAME(intermediate); SAME(has_moe);
    SAME(experts); SAME(top_k); SAME(moe_intermediate); SAME(shared_experts);
    SAME(shared_intermediate); SAME(dense_layers); SAME(mtp_layers);
    SAME(sliding_window); SAME(window_layers); SAME(quant_bits); SAME(quant_block[0]);
    SAME(quant_block[1]); SAME(quant_group);
    if (!classes) {
        SAME(qk_norm); SAME(nwarn); /* renamed classes: the family's choices are warned */
        ck_assert_str_eq(x->arch_class, y->arch_class);
    }
#undef SAME
    ck_assert_str_eq(x->torch_dtype, y->torch_dtype);
    ck_assert_str_eq(x->quant_method, y->quant_method);
    ck_assert_str_eq(x->quant_fmt, y->quant_fmt);
    ck_assert_str_eq(x->quant_act, y->quant_act);
    ck_assert_str_eq(x->quant_type, y->quant_type);
    ck_assert_str_eq(x->quant_strategy, y->quant_strategy);
    ck_assert(memcmp(x->layer_moe, y->layer_moe, sizeof x->layer_moe) == 0);
    ck_assert(memcmp(x->layer_window, y->layer_window, sizeof x->layer_window) == 0);
    if (!classes || x->qk_norm == y->qk_norm)
        ck_assert_int_eq(arch_total_params(x), arch_total_params(y));
}

/* Each bundled model, copied under another file name with model_type
 * renamed (_i even) or model_type and architectures renamed (_i odd). */
START_TEST(test_structure_not_from_name)
{
    const char *model = arch_bundled[_i / 2];
    int classes = _i % 2;
    char dir[] = "/tmp/check_arch.XXXXXX", src[1024], rel[256], dst[1100];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(rel, sizeof rel, "models/configs/%s.json", model);
    json_error_t je;
    json_t *root = json_load_file(cp_data_path(src, sizeof src, rel), 0, &je);
    ck_assert_ptr_nonnull(root);
    ck_assert_int_gt(disguise(root, classes), 0);
    snprintf(dst, sizeof dst, "%s/mystery.json", dir);
    ck_assert_int_eq(json_dump_file(root, dst, JSON_INDENT(2)), 0);
    json_decref(root);

    arch orig, copy;
    load_ok(model, NULL, &orig);
    load_ok(dst, NULL, &copy);
    ck_assert_str_eq(copy.name, "mystery");
    ck_same_structure(&orig, &copy, classes);
    if (classes) {
        /* without a known class, only use_qk_norm (the thinker's) says so */
        ck_assert_str_eq(copy.arch_class, "MysteryForCausalLM");
        ck_assert_int_eq(copy.qk_norm, strcmp(model, "qwen3-omni-30b-a3b-thinker") == 0);
    }
    unlink(dst);
    rmdir(dir);
}
END_TEST

/* --- structure no field states, windows, quantization, warnings ------- */

/* Loads the config text `json` from a temporary <name>.json; arch_load's
 * result, its message in e. */
static int load_text(const char *name, const char *json, arch *a, cp_err *e)
{
    char dir[] = "/tmp/check_arch.XXXXXX", path[128];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(json, f);
    fclose(f);
    int rc = arch_load(path, NULL, a, e);
    unlink(path);
    rmdir(dir);
    return rc;
}

static void text_ok(const char *json, arch *a)
{
    cp_err e = {0};
    ck_assert_msg(load_text("t", json, a, &e) == 0, "%s", e.msg);
}

/* The message of a failing load of `json`, after "<path>: ". */
static void text_fails(const char *json, const char *want)
{
    arch a;
    cp_err e = {0};
    ck_assert_int_eq(load_text("t", json, &a, &e), -1);
    ck_assert_int_eq(e.code, CP_EXIT_INPUT);
    const char *msg = strstr(e.msg, "t.json: ");
    ck_assert_ptr_nonnull(msg);
    ck_assert_str_eq(msg + strlen("t.json: "), want);
}

/* Four dense layers, every optional field absent but tie_word_embeddings
 * (whose absence is warned: test_tie_default); TINY4 also says no q/k norm
 * (without a known family its absence is warned: qk_cases). */
#define TINY4_BASE "\"hidden_size\": 64, \"num_hidden_layers\": 4, \"num_attention_heads\": 4, " \
                   "\"vocab_size\": 100, \"intermediate_size\": 128"
#define TINY4Q TINY4_BASE ", \"tie_word_embeddings\": false"
#define TINY4 TINY4Q ", \"use_qk_norm\": false"

static void ck_warns(const arch *a, const char *const *want, int n)
{
    for (int i = 0; i < a->nwarn && i < n; i++)
        ck_assert_str_eq(a->warn[i], want[i]);
    ck_assert_int_eq(a->nwarn, n);
}

static void ck_windows(const arch *a, const uint8_t *want, int n)
{
    int64_t count = 0;
    ck_assert_int_eq(a->layers, n);
    for (int i = 0; i < n; i++) {
        ck_assert_msg(a->layer_window[i] == want[i], "%s layer %d: window %d, want %d", a->name, i,
                      a->layer_window[i], want[i]);
        count += want[i];
    }
    ck_assert_int_eq(a->window_layers, count);
}

/* q/k norm from the class when no field says it; the field wins. */
static const struct {
    const char *json;
    int qk_norm;
    const char *arch_class;
    int assumed; /* no family known by class: the choice is warned */
} qk_cases[] = {
    {"{\"architectures\": [\"Qwen3ForCausalLM\"], " TINY4Q "}", 1, "Qwen3ForCausalLM", 0},
    {"{\"architectures\": [\"Qwen3ForCausalLM\"], \"use_qk_norm\": false, " TINY4Q "}", 0,
     "Qwen3ForCausalLM", 0},
    {"{\"architectures\": [\"LlamaForCausalLM\"], \"use_qk_norm\": true, " TINY4Q "}", 1,
     "LlamaForCausalLM", 0},
    {"{\"architectures\": [\"LlamaForCausalLM\"], " TINY4Q "}", 0, "LlamaForCausalLM", 0},
    {"{\"architectures\": [\"Qwen3NextForCausalLM\"], " TINY4Q "}", 1, "Qwen3NextForCausalLM", 0},
    {"{\"architectures\": [\"Qwen3VLForConditionalGeneration\"], " TINY4Q "}", 1,
     "Qwen3VLForConditionalGeneration", 0},
    {"{\"architectures\": [\"Qwen3VLMoeForConditionalGeneration\"], " TINY4Q "}", 1,
     "Qwen3VLMoeForConditionalGeneration", 0},
    {"{\"architectures\": [\"Gemma3ForCausalLM\"], " TINY4Q "}", 1, "Gemma3ForCausalLM", 0},
    {"{\"architectures\": [\"Olmo2ForCausalLM\"], " TINY4Q "}", 1, "Olmo2ForCausalLM", 0},
    {"{\"architectures\": [\"OlmoeForCausalLM\"], " TINY4Q "}", 1, "OlmoeForCausalLM", 0},
    /* a prefix entry of the table */
    {"{\"architectures\": [\"Qwen3OmniMoeTalkerForConditionalGeneration\"], " TINY4Q "}", 1,
     "Qwen3OmniMoeTalkerForConditionalGeneration", 0},
    /* exact names elsewhere: neither longer nor shorter names match */
    {"{\"architectures\": [\"Qwen3ForCausalLMX\"], " TINY4Q "}", 0, "Qwen3ForCausalLMX", 1},
    {"{\"architectures\": [\"Qwen3\"], " TINY4Q "}", 0, "Qwen3", 1},
    {"{\"architectures\": [\"Qwen2ForCausalLM\"], " TINY4Q "}", 0, "Qwen2ForCausalLM", 0},
    {"{\"architectures\": [\"Gemma2ForCausalLM\"], " TINY4Q "}", 0, "Gemma2ForCausalLM", 0},
    /* any entry counts; arch_class is the first */
    {"{\"architectures\": [\"Foo\", \"Qwen3MoeForCausalLM\"], " TINY4Q "}", 1, "Foo", 0},
    /* thinker_config's own architectures */
    {"{\"architectures\": [\"Foo\"], \"thinker_config\": {\"architectures\": "
     "[\"Qwen3OmniMoeThinkerForConditionalGeneration\"], \"text_config\": {" TINY4Q "}}}", 1, "Foo",
     0},
    {"{\"architectures\": [], " TINY4Q "}", 0, "", 1},
    {"{\"architectures\": null, " TINY4Q "}", 0, "", 1},
    {"{" TINY4Q "}", 0, "", 1},
    /* no class: model_type names the family, and that is warned */
    {"{\"model_type\": \"qwen3\", " TINY4Q "}", 1, "", 1},
    {"{\"architectures\": [\"Foo\"], \"model_type\": \"llama\", " TINY4Q "}", 0, "Foo", 1},
};

START_TEST(test_qk_norm_class)
{
    arch a;
    text_ok(qk_cases[_i].json, &a);
    ck_assert_msg(a.qk_norm == qk_cases[_i].qk_norm, "case %d: qk_norm %d", _i, a.qk_norm);
    ck_assert_str_eq(a.arch_class, qk_cases[_i].arch_class);
    ck_assert_int_eq(a.nwarn, qk_cases[_i].assumed);
    if (qk_cases[_i].assumed)
        ck_assert_msg(strstr(a.warn[0], "no use_qk_norm: "), "%s", a.warn[0]);
}
END_TEST

START_TEST(test_qk_norm_params)
{
    arch a;
    /* derived: norms 2*64 + q,k,v,o 4*64*64 + q_norm, k_norm 2*16 */
    text_ok("{\"architectures\": [\"Qwen3ForCausalLM\"], " TINY4Q "}", &a);
    ck_assert_int_eq(arch_attn_params_per_layer(&a), 16544);
    text_fails("{\"architectures\": \"Qwen3ForCausalLM\", " TINY4Q "}",
               "field \"architectures\" must be a list of class names shorter than 64 characters, "
               "got \"Qwen3ForCausalLM\"");
    text_fails("{\"architectures\": [\"Q123456789012345678901234567890123456789012345678901234567"
               "890123\"], " TINY4Q "}",
               "field \"architectures\" must be a list of class names shorter than 64 characters, "
               "got [\"Q123456789012345678901234567890123456789012345678901234567890");
    text_fails("{\"thinker_config\": {\"architectures\": [7]}, " TINY4Q "}",
               "field \"thinker_config.architectures\" must be a list of class names shorter than "
               "64 characters, got [7]");
}
END_TEST

/* mistralai/Mixtral-8x7B-v0.1: experts num_local_experts, intermediate_size
 * their width, every layer MoE, no shared expert, no dense MLP. */
START_TEST(test_mixtral)
{
    arch a;
    load_ok(FIXTURES "/mixtral-8x7b.json", NULL, &a);
    ck_assert_str_eq(a.arch_class, "MixtralForCausalLM");
    ck_assert_int_eq(a.attn, ATTN_GQA);
    ck_assert_int_eq(a.layers, 32);
    ck_assert_int_eq(a.heads, 32);
    ck_assert_int_eq(a.kv_heads, 8);
    ck_assert_int_eq(a.head_dim, 128);
    ck_assert_int_eq(a.qk_norm, 0);
    ck_assert_int_eq(a.has_moe, 1);
    ck_assert_int_eq(a.experts, 8);
    ck_assert_int_eq(a.top_k, 2);
    ck_assert_int_eq(a.moe_intermediate, 14336);
    ck_assert_int_eq(a.intermediate, 0);
    ck_assert_int_eq(a.shared_experts, 0);
    ck_assert_int_eq(a.shared_intermediate, 0);
    ck_assert_int_eq(a.dense_layers, 0);
    for (int i = 0; i < 32; i++)
        ck_assert_int_eq(a.layer_moe[i], 1);
    ck_assert_int_eq(a.sliding_window, 0); /* "sliding_window": null */
    ck_assert_int_eq(a.window_layers, 0);
    ck_assert_int_eq(a.nwarn, 0);
    /* derived: router 8*4096 + experts 8 * 3*4096*14336 */
    ck_assert_int_eq(arch_ffn_params(&a, 0), INT64_C(8) * 4096 + INT64_C(8) * 3 * 4096 * 14336);
    /* derived: 32 * (norms 2*4096 + q,o 2*4096*4096 + k,v 2*4096*1024
     * + FFN 1409318912) + embedding and head 2*32000*4096 + final norm 4096 */
    ck_assert_int_eq(arch_total_params(&a), INT64_C(46702792704));
    /* 46.7 B: https://mistral.ai/news/mixtral-of-experts ("Mixtral has 46.7B
     * total parameters but only uses 12.9B parameters per token") */
    ck_near((double)arch_total_params(&a), 46.7e9, "mixtral total");
}
END_TEST

/* meta-llama/Llama-4-Scout-17B-16E-Instruct: 16 experts of
 * intermediate_size plus one shared expert of the same width; chunked
 * attention and NoPE layers are warned. */
START_TEST(test_llama4_scout)
{
    static const char *const warns[] = {
        "llama4-scout.json: field \"text_config.attention_chunk_size\" = 8192 (chunked local "
        "attention) changes the attention work and is not modelled: attention is simulated as "
        "full causal",
        "llama4-scout.json: field \"text_config.no_rope_layers\" = 0 on 12 of 48 layers (layers "
        "without RoPE) changes the RoPE work and is not modelled: RoPE is simulated on every "
        "layer",
        "llama4-scout.json: field \"vision_config\" = {...} (an image encoder) changes the "
        "encoder work and is not modelled: its weights and work are not counted",
    };
    arch a;
    load_ok(FIXTURES "/llama4-scout.json", NULL, &a);
    ck_assert_str_eq(a.arch_class, "Llama4ForConditionalGeneration");
    ck_assert_int_eq(a.hidden, 5120);
    ck_assert_int_eq(a.layers, 48);
    ck_assert_int_eq(a.heads, 40);
    ck_assert_int_eq(a.kv_heads, 8);
    ck_assert_int_eq(a.head_dim, 128);
    ck_assert_int_eq(a.qk_norm, 1); /* use_qk_norm: true */
    ck_assert_int_eq(a.vocab, 202048);
    ck_assert_int_eq(a.max_position, 10485760);
    ck_assert_int_eq(a.max_context, 10485760); /* rope_type llama3: max_position states it */
    ck_assert_int_eq(a.experts, 16);
    ck_assert_int_eq(a.top_k, 1);
    ck_assert_int_eq(a.moe_intermediate, 8192);
    ck_assert_int_eq(a.shared_experts, 1);
    ck_assert_int_eq(a.shared_intermediate, 8192);
    ck_assert_int_eq(a.intermediate, 16384); /* intermediate_size_mlp */
    ck_assert_int_eq(a.dense_layers, 0);
    for (int i = 0; i < 48; i++)
        ck_assert_int_eq(a.layer_moe[i], 1);
    ck_assert_int_eq(a.sliding_window, 0);
    ck_warns(&a, warns, 3);
    /* derived: norms 2*5120 + q,o 2*5120*5120 + k,v 2*5120*1024
     * + q/k norm 2*128 */
    ck_assert_int_eq(arch_attn_params_per_layer(&a), 62925056);
    /* derived: router 16*5120 + experts 16 * 3*5120*8192 + shared 3*5120*8192 */
    ck_assert_int_eq(arch_ffn_params(&a, 47),
                     INT64_C(16) * 5120 + INT64_C(16) * 3 * 5120 * 8192 + INT64_C(3) * 5120 * 8192);
    /* derived: 48 * (62925056 + 2139176960) + 2*202048*5120 + 5120 (the
     * text model only: the published 109 B includes the vision encoder) */
    ck_assert_int_eq(arch_total_params(&a), INT64_C(107769873408));
}
END_TEST

/* Llama-4 placement: (i + 1) % interleave_moe_layer_step == 0 (Maverick
 * uses 2), dense layers intermediate_size_mlp wide; moe_layers overrides. */
START_TEST(test_llama4_interleave)
{
    static const uint8_t every2[] = {0, 1, 0, 1}, listed[] = {1, 0, 0, 1};
#define L4 "{\"text_config\": {\"hidden_size\": 64, \"num_hidden_layers\": 4, " \
           "\"num_attention_heads\": 4, \"vocab_size\": 100, \"intermediate_size\": 32, " \
           "\"intermediate_size_mlp\": 96, \"num_local_experts\": 4, " \
           "\"num_experts_per_tok\": 1, \"interleave_moe_layer_step\": 2%s}}"
    char json[512];
    arch a;
    snprintf(json, sizeof json, L4, "");
    text_ok(json, &a);
    ck_layer_moe(&a, every2, 4);
    ck_assert_int_eq(a.dense_layers, 2);
    ck_assert_int_eq(a.intermediate, 96);
    ck_assert_int_eq(a.moe_intermediate, 32);
    ck_assert_int_eq(a.shared_experts, 1);
    ck_assert_int_eq(a.shared_intermediate, 32);
    ck_assert_int_eq(arch_ffn_params(&a, 0), 3 * 64 * 96);
    /* derived: router 4*64 + experts 4*3*64*32 + shared 3*64*32 */
    ck_assert_int_eq(arch_ffn_params(&a, 1), 30976);
    snprintf(json, sizeof json, L4, ", \"moe_layers\": [0, 3]");
    text_ok(json, &a);
    ck_layer_moe(&a, listed, 4);
    snprintf(json, sizeof json, L4, ", \"moe_layers\": [4]");
    text_fails(json, "field \"text_config.moe_layers\" must be a list of layer indices in [0, 3], "
                     "got [4]");
    /* an explicit moe_intermediate_size is the expert width in any layout */
    snprintf(json, sizeof json, L4, ", \"moe_intermediate_size\": 16");
    text_ok(json, &a);
    ck_assert_int_eq(a.moe_intermediate, 16);
    ck_assert_int_eq(a.shared_intermediate, 32);
#undef L4
}
END_TEST

/* mistralai/Mistral-7B-v0.1: sliding_window alone applies to every layer. */
START_TEST(test_window_mistral)
{
    arch a;
    load_ok(FIXTURES "/mistral-7b.json", NULL, &a);
    ck_assert_int_eq(a.sliding_window, 4096);
    ck_assert_int_eq(a.window_layers, 32);
    for (int i = 0; i < 32; i++)
        ck_assert_int_eq(a.layer_window[i], 1);
    ck_assert_int_eq(a.has_moe, 0);
    ck_assert_int_eq(a.intermediate, 14336);
    ck_assert_int_eq(a.nwarn, 0);
}
END_TEST

/* openai/gpt-oss-20b: layer_types alternate sliding (128) and full;
 * experts as num_local_experts; mxfp4 is not a method recognised here. */
START_TEST(test_window_gpt_oss)
{
    static const char *const warns[] = {
        "gpt-oss-20b.json: field \"quantization_config.quant_method\" = \"mxfp4\" (unknown "
        "quantization method) changes the GEMM/memory work and is not modelled: quant_bits is "
        "left 0",
    };
    uint8_t want[24];
    for (int i = 0; i < 24; i++)
        want[i] = i % 2 == 0;
    arch a;
    load_ok(FIXTURES "/gpt-oss-20b.json", NULL, &a);
    ck_assert_int_eq(a.sliding_window, 128);
    ck_windows(&a, want, 24);
    ck_assert_int_eq(a.experts, 32);
    ck_assert_int_eq(a.top_k, 4);
    ck_assert_int_eq(a.moe_intermediate, 2880);
    ck_assert_int_eq(a.intermediate, 0);
    ck_assert_int_eq(a.shared_experts, 0);
    ck_assert_int_eq(a.dense_layers, 0);
    ck_assert_int_eq(a.attention_bias, 1);
    ck_assert_int_eq(a.head_dim, 64);
    ck_assert_str_eq(a.quant_method, "mxfp4");
    ck_assert_int_eq(a.quant_bits, 0);
    ck_assert_str_eq(a.quant_strategy, "");
    ck_warns(&a, warns, 1);
    /* 20.91 B: gpt-oss model card (arXiv 2508.10925, table 1, "Total"
     * parameters of gpt-oss-20b); expert and router biases and attention
     * sinks, not counted here, are < 0.01 % of it */
    ck_near((double)arch_total_params(&a), 20.91e9, "gpt-oss-20b total");
}
END_TEST

/* Qwen2/Qwen3: layers i >= max_window_layers use the window when
 * use_sliding_window is true; false (or absent, the class default) means
 * none; layer_types wins over both; use_sliding_window false over all. */
START_TEST(test_window_qwen)
{
    static const uint8_t upper[] = {0, 0, 1, 1}, none[] = {0, 0, 0, 0}, odd[] = {0, 1, 0, 1};
    arch a;
    load_ok(FIXTURES "/tiny-qwen-window.json", NULL, &a);
    ck_assert_int_eq(a.sliding_window, 16);
    ck_windows(&a, upper, 4);

    load_ok(FIXTURES "/qwen2.5-7b.json", NULL, &a); /* use_sliding_window: false */
    ck_assert_int_eq(a.sliding_window, 0);
    ck_assert_int_eq(a.window_layers, 0);
    ck_assert_int_eq(a.layers, 28);
    ck_assert_int_eq(a.nwarn, 0);

    text_ok("{" TINY4 ", \"sliding_window\": 16, \"max_window_layers\": 1}", &a);
    ck_windows(&a, none, 4);
    ck_assert_int_eq(a.sliding_window, 0);
    text_ok("{" TINY4 ", \"sliding_window\": 16, \"max_window_layers\": 0, "
            "\"use_sliding_window\": true, \"layer_types\": [\"full_attention\", "
            "\"sliding_attention\", \"full_attention\", \"sliding_attention\"]}", &a);
    ck_windows(&a, odd, 4);
    ck_assert_int_eq(a.sliding_window, 16);
    text_ok("{" TINY4 ", \"sliding_window\": 16, \"use_sliding_window\": false, "
            "\"layer_types\": [\"full_attention\", \"sliding_attention\", \"full_attention\", "
            "\"sliding_attention\"]}", &a);
    ck_windows(&a, none, 4);
    ck_assert_int_eq(a.sliding_window, 0);
    text_ok("{" TINY4 ", \"sliding_window\": null, \"use_sliding_window\": true}", &a);
    ck_windows(&a, none, 4);
    text_ok("{" TINY4 ", \"sliding_window\": 0}", &a);
    ck_windows(&a, none, 4);

    /* use_sliding_window true without max_window_layers: its default 28 */
    text_ok("{\"hidden_size\": 64, \"num_hidden_layers\": 30, \"num_attention_heads\": 4, "
            "\"vocab_size\": 100, \"intermediate_size\": 128, \"sliding_window\": 8, "
            "\"use_sliding_window\": true}", &a);
    ck_assert_int_eq(a.window_layers, 2);
    ck_assert_int_eq(a.layer_window[27], 0);
    ck_assert_int_eq(a.layer_window[28], 1);
    ck_assert_int_eq(a.layer_window[29], 1);

    text_fails("{" TINY4 ", \"sliding_window\": -1}",
               "field \"sliding_window\" must be an integer in [0, 1099511627776], got -1");
    text_fails("{" TINY4 ", \"use_sliding_window\": \"yes\"}",
               "field \"use_sliding_window\" must be true or false, got \"yes\"");
    text_fails("{" TINY4 ", \"sliding_window\": 8, \"layer_types\": [\"full_attention\", 3, "
               "\"full_attention\", \"full_attention\"]}",
               "field \"layer_types\" must be a list of 4 attention kinds, one per layer, got "
               "[\"full_attention\",3,\"full_attention\",\"full_attention\"]");
}
END_TEST

/* Gemma3 configs before layer_types: sliding_window_pattern 3 makes every
 * third layer full; the class Gemma3ForConditionalGeneration has q/k norm
 * and, without tie_word_embeddings, tied embeddings (Gemma3TextConfig's
 * default), which is warned, as the vision encoder is. */
START_TEST(test_window_gemma3)
{
    static const uint8_t want[] = {1, 1, 0, 1, 1, 0};
    arch a;
    load_ok(FIXTURES "/tiny-gemma3-window.json", NULL, &a);
    ck_assert_int_eq(a.sliding_window, 32);
    ck_windows(&a, want, 6);
    ck_assert_int_eq(a.qk_norm, 1);
    ck_assert_int_eq(a.tie_embeddings, 1);
    static const char *const warns[] = {
        "tiny-gemma3-window.json: field \"tie_word_embeddings\" is absent: tied embeddings, the "
        "transformers default of the Gemma3 family (named by architectures "
        "\"Gemma3ForConditionalGeneration\")",
        "tiny-gemma3-window.json: field \"vision_config\" = {...} (an image encoder) changes the "
        "encoder work and is not modelled: its weights and work are not counted",
    };
    ck_warns(&a, warns, 2);
    /* derived: norms 128 + q 64*128 + k,v 2*64*32 + o 128*64 + q/k norm 2*32 */
    ck_assert_int_eq(arch_attn_params_per_layer(&a), 20672);
    /* derived: 6 * (20672 + MLP 3*64*128) + final norm 64 + one 100*64 embedding */
    ck_assert_int_eq(arch_total_params(&a), 6 * (20672 + 24576) + 64 + 6400);
}
END_TEST

/* A Qwen3-Next-like hybrid: linear-attention layers, partial RoPE, a gated
 * attention output and MLP biases are warned, in a fixed order; MTP layers
 * are not. */
START_TEST(test_hybrid_warnings)
{
    static const char *const warns[] = {
        "tiny-hybrid.json: field \"partial_rotary_factor\" = 0.25 (RoPE on part of each head) "
        "changes the RoPE work and is not modelled: RoPE is simulated on the whole head",
        "tiny-hybrid.json: field \"attn_output_gate\" = true (a sigmoid gate on the attention "
        "output) changes the attention work and is not modelled: no output gate is simulated",
        "tiny-hybrid.json: field \"layer_types\" = \"linear_attention\" on 3 of 4 layers (neither "
        "full nor sliding) changes the attention work and is not modelled: simulated as full "
        "causal",
        "tiny-hybrid.json: field \"mlp_bias\" = true (biases on the MLP projections) changes the "
        "MLP work and is not modelled: no MLP biases are counted or simulated",
    };
    arch a;
    load_ok(FIXTURES "/tiny-hybrid.json", NULL, &a);
    ck_warns(&a, warns, 4);
    ck_assert_int_eq(a.sliding_window, 0);
    ck_assert_int_eq(a.window_layers, 0);
    ck_assert_int_eq(a.qk_norm, 1); /* Qwen3NextForCausalLM */
    ck_assert_int_eq(a.mtp_layers, 1);
    for (int i = 0; i < a.nwarn; i++)
        ck_assert_int_lt(strlen(a.warn[i]), ARCH_WARN_LEN - 1); /* none cut */
}
END_TEST

/* Each field alone: the warning it gives, or none (want NULL). */
static const struct {
    const char *json, *want;
} warn_cases[] = {
    {"{" TINY4 ", \"full_attention_interval\": 4}",
     "t.json: field \"full_attention_interval\" = 4 (linear attention on the other layers) "
     "changes the attention work and is not modelled: every layer is simulated as full causal "
     "attention"},
    {"{" TINY4 ", \"full_attention_interval\": 1}", NULL},
    {"{\"text_config\": {" TINY4 ", \"rope_parameters\": {\"rope_type\": \"default\", "
     "\"partial_rotary_factor\": 0.5}}}",
     "t.json: field \"text_config.rope_parameters.partial_rotary_factor\" = 0.5 (RoPE on part of "
     "each head) changes the RoPE work and is not modelled: RoPE is simulated on the whole head"},
    {"{" TINY4 ", \"partial_rotary_factor\": 1.0}", NULL},
    {"{" TINY4 ", \"partial_rotary_factor\": 1}", NULL},
    {"{" TINY4 ", \"no_rope_layers\": []}",
     "t.json: field \"no_rope_layers\" = [] (NoPE every no_rope_layer_interval-th layer by "
     "default) changes the RoPE work and is not modelled: RoPE is simulated on every layer"},
    {"{" TINY4 ", \"no_rope_layers\": [1, 1, 1, 1]}", NULL},
    {"{" TINY4 ", \"attention_chunk_size\": null}", NULL},
    {"{" TINY4 ", \"attn_output_gate\": false, \"mlp_bias\": false}", NULL},
    {"{" TINY4 ", \"layer_types\": [\"full_attention\", \"chunked_attention\", "
     "\"full_attention\", \"chunked_attention\"]}",
     "t.json: field \"layer_types\" = \"chunked_attention\" on 2 of 4 layers (neither full nor "
     "sliding) changes the attention work and is not modelled: simulated as full causal"},
    /* not warned: MTP, RoPE scaling, biases, head_dim */
    {"{" TINY4 ", \"num_nextn_predict_layers\": 1, \"rope_scaling\": {\"factor\": 8.0}, "
     "\"attention_bias\": true, \"head_dim\": 32}", NULL},
    /* encoders beside the text model: their weights and work are not simulated */
    {"{" TINY4 ", \"vision_config\": {\"depth\": 27}}",
     "t.json: field \"vision_config\" = {...} (an image encoder) changes the encoder work and is "
     "not modelled: its weights and work are not counted"},
    {"{\"thinker_config\": {\"text_config\": {" TINY4 "}, \"audio_config\": {\"d_model\": 1}}}",
     "t.json: field \"thinker_config.audio_config\" = {...} (an audio encoder) changes the "
     "encoder work and is not modelled: its weights and work are not counted"},
};

START_TEST(test_warn_fields)
{
    arch a;
    text_ok(warn_cases[_i].json, &a);
    if (!warn_cases[_i].want) {
        ck_assert_msg(a.nwarn == 0, "case %d: %s", _i, a.warn[0]);
        return;
    }
    ck_warns(&a, &warn_cases[_i].want, 1);
}
END_TEST

START_TEST(test_warn_errors)
{
    text_fails("{" TINY4 ", \"partial_rotary_factor\": 1.5}",
               "field \"partial_rotary_factor\" must be a number in (0, 1], got 1.5");
    text_fails("{" TINY4 ", \"no_rope_layers\": [1, 2, 1, 1]}",
               "field \"no_rope_layers\" must be a list of 0 or 1 for each of the 4 layers, got "
               "[1,2,1,1]");
    text_fails("{" TINY4 ", \"no_rope_layers\": [1, 0]}",
               "field \"no_rope_layers\" must be a list of 0 or 1 for each of the 4 layers, got "
               "[1,0]");
    text_fails("{" TINY4 ", \"attention_chunk_size\": 0}",
               "field \"attention_chunk_size\" must be an integer in [1, 1099511627776], got 0");
}
END_TEST

/* Bundled models warn nothing but the thinker's image encoder (its audio
 * encoder is read: arch_audio). */
START_TEST(test_bundled_no_warnings)
{
    arch a;
    load_ok(arch_bundled[_i], NULL, &a);
    int thinker = !strcmp(a.name, "qwen3-omni-30b-a3b-thinker");
    ck_assert_msg(a.nwarn == thinker, "%s: %s", a.name, a.warn[0]);
    ck_assert_int_eq(a.audio.layers, thinker ? 32 : 0);
    for (int i = 0; i < a.nwarn; i++)
        ck_assert_msg(strstr(a.warn[i], "encoder) changes the encoder work"), "%s", a.warn[i]);
    ck_assert_int_eq(a.sliding_window, 0);
    ck_assert_int_eq(a.window_layers, 0);
}
END_TEST

START_TEST(test_warn_overflow)
{
    arch a;
    memset(&a, 0, sizeof a);
    snprintf(a.path, sizeof a.path, "/x/y.json");
    for (int i = 0; i < ARCH_MAX_WARN + 4; i++)
        arch_warn(&a, "w %d", i);
    ck_assert_int_eq(a.nwarn, ARCH_MAX_WARN);
    ck_assert_str_eq(a.warn[0], "w 0");
    ck_assert_str_eq(a.warn[ARCH_MAX_WARN - 2], "w 14");
    ck_assert_str_eq(a.warn[ARCH_MAX_WARN - 1], "y.json: further warnings omitted (more than 15)");
}
END_TEST

/* The bundled DeepSeek-V3 abridgement: only weight_block_size, read as fp8. */
START_TEST(test_quant_bundled)
{
    arch a;
    load_ok("deepseek-v3", NULL, &a);
    ck_assert_str_eq(a.quant_method, "fp8");
    ck_assert_int_eq(a.quant_block[0], 128);
    ck_assert_int_eq(a.quant_block[1], 128);
    ck_assert_int_eq(a.quant_bits, 8);
    ck_assert_str_eq(a.quant_type, "float");
    ck_assert_str_eq(a.quant_strategy, "block");
    ck_assert_str_eq(a.quant_fmt, "");
    ck_assert_str_eq(a.quant_act, "");
    ck_assert_int_eq(a.quant_group, 0);
    load_ok("glm-5", NULL, &a);
    ck_assert_str_eq(a.quant_method, "");
    ck_assert_int_eq(a.quant_bits, 0);
    ck_assert_int_eq(a.quant_block[0], 0);
    ck_assert_str_eq(a.quant_strategy, "");
}
END_TEST

/* quantization_config cases: the recorded fields and the warning (NULL for
 * none). */
static const struct {
    const char *qc;
    const char *method, *type, *strategy, *fmt, *act;
    int bits;
    int64_t block0, block1, group;
    const char *warn[3]; /* the warnings, in order */
} quant_cases[] = {
    /* deepseek-ai/DeepSeek-V3 config.json as published */
    {"{\"activation_scheme\": \"dynamic\", \"fmt\": \"e4m3\", \"quant_method\": \"fp8\", "
     "\"weight_block_size\": [128, 128]}",
     "fp8", "float", "block", "e4m3", "dynamic", 8, 128, 128, 0, {NULL}},
    /* fp8 without blocks: per tensor */
    {"{\"quant_method\": \"fp8\", \"activation_scheme\": \"static\"}", "fp8", "float", "tensor", "",
     "static", 8, 0, 0, 0, {NULL}},
    /* compressed-tensors FP8, per-channel weights, dynamic per-token
     * activations (the RedHatAI "FP8-dynamic" checkpoints' layout) */
    {"{\"quant_method\": \"compressed-tensors\", \"format\": \"float-quantized\", "
     "\"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 8, "
     "\"type\": \"float\", \"strategy\": \"channel\", \"dynamic\": false, \"symmetric\": true}, "
     "\"input_activations\": {\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"token\", "
     "\"dynamic\": true, \"symmetric\": true}}}, \"ignore\": [\"lm_head\"], "
     "\"kv_cache_scheme\": null}",
     "compressed-tensors", "float", "channel", "", "dynamic", 8, 0, 0, 0,
     /* what the activations' scheme says is not read: precision.activations is simulated */
     {"t.json: 5 fields cpsim does not read (the work they may change is not modelled): "
      "quantization_config.config_groups.group_0.weights.dynamic, ..."}},
    /* compressed-tensors W4A16, groups of 128, weight-only */
    {"{\"quant_method\": \"compressed-tensors\", \"config_groups\": {\"group_0\": {\"weights\": "
     "{\"num_bits\": 4, \"type\": \"int\", \"strategy\": \"group\", \"group_size\": 128}, "
     "\"input_activations\": null}}}",
     "compressed-tensors", "int", "group", "", "", 4, 0, 0, 128, {NULL}},
    /* compressed-tensors block-wise FP8 with static activations */
    {"{\"quant_method\": \"compressed-tensors\", \"config_groups\": {\"g\": {\"weights\": "
     "{\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"block\", \"block_structure\": "
     "[128, 64]}, \"input_activations\": {\"num_bits\": 8, \"dynamic\": false}}}}",
     "compressed-tensors", "float", "block", "", "static", 8, 128, 64, 0,
     {"t.json: 1 field cpsim does not read (the work they may change is not modelled): "
      "quantization_config.config_groups.g.input_activations.num_bits"}},
    /* two schemes: the first group by name (group_0) is recorded */
    {"{\"quant_method\": \"compressed-tensors\", \"config_groups\": {\"group_1\": {\"weights\": "
     "{\"num_bits\": 4, \"type\": \"int\", \"strategy\": \"group\", \"group_size\": 32}}, "
     "\"group_0\": {\"weights\": {\"num_bits\": 8, \"type\": \"float\", \"strategy\": "
     "\"tensor\"}}}}",
     "compressed-tensors", "float", "tensor", "", "", 8, 0, 0, 0,
     {"t.json: field \"quantization_config.config_groups\" = 2 groups (mixed weight schemes) "
     "changes the GEMM/memory work and is not modelled: the first, \"group_0\", is recorded"}},
    {"{\"quant_method\": \"compressed-tensors\", \"config_groups\": {\"group_0\": {\"weights\": "
     "{\"num_bits\": 8, \"type\": \"int\", \"strategy\": \"attn_head\"}}}}",
     "compressed-tensors", "int", "", "", "", 8, 0, 0, 0,
     {"t.json: field \"quantization_config.config_groups.group_0.weights.strategy\" = "
     "\"attn_head\" (unknown weight strategy) changes the GEMM/memory work and is not modelled: "
     "quant_strategy is left empty"}},
    {"{\"quant_method\": \"compressed-tensors\", \"config_groups\": {\"group_0\": {\"weights\": "
     "{\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"tensor\"}}}, \"kv_cache_scheme\": "
     "{\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"tensor\"}}",
     "compressed-tensors", "float", "tensor", "", "", 8, 0, 0, 0,
     {"t.json: field \"quantization_config.kv_cache_scheme\" = {...} (quantized KV cache) changes "
     "the KV-cache work and is not modelled: the KV cache is simulated at the run's KV dtype"}},
    {"{\"quant_method\": \"compressed-tensors\", \"format\": \"dense\"}", "compressed-tensors", "",
     "", "", "", 0, 0, 0, 0,
     {"t.json: field \"quantization_config.quant_method\" = \"compressed-tensors\" (no "
     "config_groups: scheme unknown) changes the GEMM/memory work and is not modelled: "
     "quant_bits is left 0"}},
    /* GPTQ and AWQ: integer weights, weight-only */
    {"{\"bits\": 4, \"group_size\": 128, \"desc_act\": false, \"sym\": true, \"quant_method\": "
     "\"gptq\"}",
     "gptq", "int", "group", "", "", 4, 0, 0, 128, {NULL}},
    {"{\"bits\": 8, \"group_size\": -1, \"quant_method\": \"gptq\"}", "gptq", "int", "channel", "",
     "", 8, 0, 0, 0, {NULL}},
    {"{\"bits\": 4, \"group_size\": 128, \"quant_method\": \"awq\", \"version\": \"gemm\", "
     "\"zero_point\": true}",
     "awq", "int", "group", "", "", 4, 0, 0, 128, {NULL}},
    {"{\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true}", "bitsandbytes", "", "", "", "",
     0, 0, 0, 0,
     {"t.json: field \"quantization_config.quant_method\" = \"bitsandbytes\" (unknown quantization "
     "method) changes the GEMM/memory work and is not modelled: quant_bits is left 0"}},
    {"{}", "", "", "", "", "", 0, 0, 0, 0, {NULL}},
    {"{\"activation_scheme\": \"dynamic\"}", "", "", "", "", "dynamic", 0, 0, 0, 0,
     {"t.json: field \"quantization_config\" = {...} (no quant_method) changes the GEMM/memory "
     "work and is not modelled: the quantization is not recorded"}},
};

START_TEST(test_quant)
{
    char json[2048];
    arch a;
    snprintf(json, sizeof json, "{" TINY4 ", \"quantization_config\": %s}", quant_cases[_i].qc);
    text_ok(json, &a);
    ck_assert_str_eq(a.quant_method, quant_cases[_i].method);
    ck_assert_str_eq(a.quant_type, quant_cases[_i].type);
    ck_assert_str_eq(a.quant_strategy, quant_cases[_i].strategy);
    ck_assert_str_eq(a.quant_fmt, quant_cases[_i].fmt);
    ck_assert_str_eq(a.quant_act, quant_cases[_i].act);
    ck_assert_int_eq(a.quant_bits, quant_cases[_i].bits);
    ck_assert_int_eq(a.quant_block[0], quant_cases[_i].block0);
    ck_assert_int_eq(a.quant_block[1], quant_cases[_i].block1);
    ck_assert_int_eq(a.quant_group, quant_cases[_i].group);
    int n = 0;
    while (n < 3 && quant_cases[_i].warn[n])
        n++;
    ck_warns(&a, quant_cases[_i].warn, n);
}
END_TEST

START_TEST(test_quant_errors)
{
    text_fails("{" TINY4 ", \"quantization_config\": \"fp8\"}",
               "field \"quantization_config\" must be an object, got \"fp8\"");
    text_fails("{" TINY4 ", \"quantization_config\": {\"quant_method\": 8}}",
               "field \"quantization_config.quant_method\" must be a method name, got 8");
    text_fails("{" TINY4 ", \"quantization_config\": {\"quant_method\": \"gptq\", \"bits\": 0}}",
               "field \"quantization_config.bits\" must be an integer in [1, 16], got 0");
    text_fails("{" TINY4 ", \"quantization_config\": {\"quant_method\": \"compressed-tensors\", "
               "\"config_groups\": {\"group_0\": {\"weights\": {\"num_bits\": \"8\"}}}}}",
               "field \"quantization_config.config_groups.group_0.weights.num_bits\" must be an "
               "integer in [1, 64], got \"8\"");
    text_fails("{" TINY4 ", \"quantization_config\": {\"quant_method\": \"compressed-tensors\", "
               "\"config_groups\": []}}",
               "field \"quantization_config.config_groups\" must be an object, got []");
}
END_TEST

/* Broken fixtures and the message each must give after "<path>: ". */
static const struct {
    const char *file, *msg;
} bad_fixtures[] = {
    {"bad-missing-hidden.json", "missing required field \"hidden_size\""},
    {"bad-layers-negative.json",
     "field \"num_hidden_layers\" must be an integer in [1, 1024], got -3"},
    {"bad-layers-range.json",
     "field \"num_hidden_layers\" must be an integer in [1, 1024], got 2000"},
    {"bad-heads-string.json",
     "field \"num_attention_heads\" must be an integer in [1, 65536], got \"4\""},
    {"bad-hidden-real.json", "field \"hidden_size\" must be an integer in [1, 1000000], got 64.5"},
    {"bad-vocab-range.json",
     "field \"vocab_size\" must be an integer in [1, 100000000], got 200000000"},
    {"bad-bool.json", "field \"attention_bias\" must be true or false, got \"no\""},
    {"bad-dtype.json", "field \"torch_dtype\" must be a dtype name such as \"bfloat16\", got 16"},
    {"bad-dense-no-inter.json",
     "missing required field \"intermediate_size\" (2 of 2 layers have a dense FFN)"},
    {"bad-head-dim.json", "missing field \"head_dim\", and hidden_size (65) is not a multiple of "
                          "num_attention_heads (4)"},
    {"bad-kv-divide.json",
     "field \"num_key_value_heads\" (3) must divide num_attention_heads (4)"},
    {"bad-mla-no-v.json",
     "missing required field \"v_head_dim\" (required when kv_lora_rank > 0)"},
    {"bad-dsa-no-index-heads.json",
     "missing required field \"index_n_heads\" (required when index_topk > 0)"},
    {"bad-dsa-no-q-lora.json",
     "field \"index_topk\" needs a query latent: \"q_lora_rank\" must be > 0"},
    {"bad-dsa-gqa.json", "field \"index_topk\" needs MLA attention: \"kv_lora_rank\" must be > 0"},
    {"bad-moe-no-inter.json", "missing required field \"moe_intermediate_size\" (required when "
                              "the model has routed experts)"},
    {"bad-topk.json",
     "field \"text_config.num_experts_per_tok\" must be an integer in [1, 8], got 16"},
    {"bad-mlp-only.json", "field \"text_config.mlp_only_layers\" must be a list of layer indices "
                          "in [0, 5], got [3,9]"},
    {"bad-nested-type.json", "field \"thinker_config.text_config.num_hidden_layers\" must be an "
                             "integer in [1, 1024], got \"48\""},
    {"bad-text-config.json", "field \"text_config\" must be an object, got [1]"},
    {"bad-root.json", "a model config must be a JSON object"},
    {"bad-architectures.json", "field \"architectures\" must be a list of class names shorter "
                               "than 64 characters, got \"Qwen3ForCausalLM\""},
    {"bad-layer-types.json", "field \"layer_types\" must be a list of 3 attention kinds, one per "
                             "layer, got [\"sliding_attention\",\"full_attention\"]"},
    {"bad-window-missing.json", "field \"layer_types\" marks layer 1 as \"sliding_attention\" "
                                "but \"sliding_window\" is missing"},
    {"bad-quant-block.json", "field \"quantization_config.weight_block_size\" must be a block "
                             "shape [rows, cols] of positive integers, got [128]"},
    {"bad-llama4-no-mlp.json",
     "missing required field \"intermediate_size_mlp\" (2 of 4 layers have a dense FFN)"},
    {"bad-mixtral-dense.json", "field \"intermediate_size\" is the expert width when the experts "
                               "are given as num_local_experts, so the 1 of 4 layers with a "
                               "dense FFN have no width"},
    {"bad-huge.json", "model would have 3.4e+16 parameters, more than the sanity bound of 1e+15; "
                      "check its sizes"},
    /* jansson's positions: line and column where the parser stopped */
    {"bad-syntax.json", "4:23: '}' expected"},
    {"bad-duplicate.json", "6:15: duplicate object key near '\"hidden_size\"'"},
};

START_TEST(test_bad_fixture)
{
    char spec[512], want[1024];
    snprintf(spec, sizeof spec, "%s/%s", FIXTURES, bad_fixtures[_i].file);
    /* syntax errors read "path:line:col: msg", the others "path: msg" */
    const char *sep = bad_fixtures[_i].msg[0] >= '0' && bad_fixtures[_i].msg[0] <= '9' ? ":" : ": ";
    snprintf(want, sizeof want, "%s%s%s", spec, sep, bad_fixtures[_i].msg);
    load_fails(spec, NULL, want);
}
END_TEST

START_TEST(test_missing_file)
{
    load_fails(FIXTURES "/no-such-model.json", NULL,
               FIXTURES "/no-such-model.json: cannot open model config: No such file or directory");
    load_fails("no-such-model.json", FIXTURES,
               FIXTURES "/no-such-model.json: cannot open model config: No such file or directory");
}
END_TEST

START_TEST(test_unknown_bundled)
{
    const char *list = "bundled models: qwen3-omni-30b-a3b-thinker, qwen3-32b, qwen3-30b-a3b, "
                       "llama-3.1-70b, llama-3.1-405b, deepseek-v3, deepseek-v3.2-exp, glm-5, "
                       "glm-5.1, deepseek-r1, qwen3-235b-a22b";
    char want[512];
    snprintf(want, sizeof want, "unknown model \"qwen3-33b\" (did you mean \"qwen3-32b\"?); %s",
             list);
    load_fails("qwen3-33b", NULL, want);
    snprintf(want, sizeof want, "unknown model \"glm5.1\" (did you mean \"glm-5.1\"?); %s", list);
    load_fails("glm5.1", NULL, want);
    /* no '/' and no ".json": a bundled name, with no close match */
    snprintf(want, sizeof want, "unknown model \"tiny-gqa\"; %s", list);
    load_fails("tiny-gqa", FIXTURES, want);
}
END_TEST

/* Absent tie_word_embeddings: the family's transformers default, warned. */
START_TEST(test_tie_default)
{
    arch a;
    text_ok("{\"model_type\": \"gemma3_text\", " TINY4_BASE "}", &a);
    ck_assert_int_eq(a.tie_embeddings, 1);
    ck_assert_int_eq(a.qk_norm, 1);
    static const char *const gemma[] = {
        "t.json: field \"tie_word_embeddings\" is absent: tied embeddings, the transformers "
        "default of the Gemma3 family (named by model_type \"gemma3_text\")",
        "t.json: no use_qk_norm: q/k normalised, the transformers default of the Gemma3 family, "
        "named by model_type \"gemma3_text\" (no architectures[] class cpsim knows)",
    };
    ck_warns(&a, gemma, 2);
    text_ok("{\"architectures\": [\"Gemma2ForCausalLM\"], " TINY4_BASE "}", &a);
    ck_assert_int_eq(a.tie_embeddings, 1);
    ck_assert_int_eq(a.nwarn, 1);
    text_ok("{\"architectures\": [\"LlamaForCausalLM\"], " TINY4_BASE "}", &a);
    ck_assert_int_eq(a.tie_embeddings, 0);
    ck_assert_int_eq(a.nwarn, 1);
    ck_assert_ptr_nonnull(strstr(a.warn[0], "untied embeddings, the transformers default of "
                                            "the Llama family"));
    text_ok("{\"use_qk_norm\": false, " TINY4_BASE "}", &a);
    ck_assert_int_eq(a.tie_embeddings, 0);
    static const char *const none[] = {
        "t.json: field \"tie_word_embeddings\" is absent: untied embeddings assumed (no "
        "architectures[] class or model_type cpsim knows the family of)",
    };
    ck_warns(&a, none, 1);
}
END_TEST

/* A MoE router without scoring_func: the family's scoring, warned unless
 * a class named the family. */
START_TEST(test_router_assumed)
{
    static const struct {
        const char *head; /* fields before TINY4 */
        int sigmoid;
        const char *warn; /* NULL: none */
    } cases[] = {
        {"\"model_type\": \"deepseek_v3\", ", 1,
         "t.json: no scoring_func: sigmoid router, the transformers default of the DeepSeek-V3 "
         "family, named by model_type \"deepseek_v3\" (no architectures[] class cpsim knows)"},
        {"\"architectures\": [\"DeepseekV3ForCausalLM\"], ", 1, NULL},
        {"", 0,
         "t.json: no scoring_func: softmax router assumed (no architectures[] class or "
         "model_type cpsim knows the family of)"},
        {"\"scoring_func\": \"sigmoid\", ", 1, NULL},
    };
    char json[512];
    arch a;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(json, sizeof json, "{%s" TINY4 ", \"num_experts\": 8, \"num_experts_per_tok\": 2, "
                 "\"moe_intermediate_size\": 32}", cases[i].head);
        text_ok(json, &a);
        ck_assert_int_eq(a.router_sigmoid, cases[i].sigmoid);
        ck_warns(&a, &cases[i].warn, cases[i].warn != NULL);
    }
}
END_TEST

/* max_context: max_position_embeddings, raised by rope_scaling as vLLM
 * derives max_model_len. */
START_TEST(test_context)
{
    static const struct {
        const char *extra;
        int64_t want;
    } cases[] = {
        {"", 0},
        {", \"max_position_embeddings\": 4096", 4096},
        /* yarn: factor x original (gpt-oss: 32 x 4096) */
        {", \"max_position_embeddings\": 4096, \"rope_scaling\": {\"rope_type\": \"yarn\", "
         "\"factor\": 32.0, \"original_max_position_embeddings\": 4096}", 131072},
        /* no type, original given: the DeepSeek abridgement, yarn */
        {", \"max_position_embeddings\": 163840, \"rope_scaling\": {\"factor\": 40, "
         "\"original_max_position_embeddings\": 4096}", 163840},
        /* linear: factor x max_position_embeddings */
        {", \"max_position_embeddings\": 2048, \"rope_scaling\": {\"type\": \"linear\", "
         "\"factor\": 4}", 8192},
        /* llama3 states the extended length in max_position_embeddings */
        {", \"max_position_embeddings\": 131072, \"rope_scaling\": {\"rope_type\": \"llama3\", "
         "\"factor\": 8.0, \"original_max_position_embeddings\": 8192}", 131072},
        {", \"max_position_embeddings\": 4096, \"rope_scaling\": {\"rope_type\": \"default\"}",
         4096},
    };
    char json[512];
    arch a;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(json, sizeof json, "{" TINY4 "%s}", cases[i].extra);
        text_ok(json, &a);
        ck_assert_msg(a.max_context == cases[i].want, "case %zu: %lld", i,
                      (long long)a.max_context);
    }
    load_ok("deepseek-r1", NULL, &a);
    ck_assert_int_eq(a.max_context, 163840);
    text_fails("{" TINY4 ", \"rope_scaling\": {\"factor\": \"big\"}}",
               "field \"rope_scaling.factor\" must be a number in (0, 1e6], got \"big\"");
    text_fails("{" TINY4 ", \"rope_scaling\": 2}",
               "field \"rope_scaling\" must be an object, got 2");
}
END_TEST

/* Fields another field states too must agree; modules kept unquantized are
 * warned unless only the LM head, embedding and routers; GPTQ needs bits. */
START_TEST(test_aliases_and_quant_reads)
{
    arch a;
    text_fails("{" TINY4 ", \"num_experts\": 8, \"num_experts_per_tok\": 2, "
               "\"moe_intermediate_size\": 32, \"scoring_func\": \"softmax\", "
               "\"experts_per_token\": 4}",
               "field \"experts_per_token\" (4) differs from num_experts_per_tok (2)");
    text_fails("{" TINY4 ", \"kv_lora_rank\": 16, \"qk_nope_head_dim\": 8, \"qk_rope_head_dim\": "
               "4, \"v_head_dim\": 8, \"qk_head_dim\": 16}",
               "field \"qk_head_dim\" (16) must be qk_nope_head_dim + qk_rope_head_dim (12)");
    text_fails("{" TINY4 ", \"quantization_config\": {\"quant_method\": \"gptq\"}}",
               "missing required field \"quantization_config.bits\" (gptq)");
    text_ok("{" TINY4 ", \"quantization_config\": {\"quant_method\": \"fp8\", "
            "\"modules_to_not_convert\": [\"lm_head\", \"model.layers.0.mlp.gate\"]}}", &a);
    ck_assert_int_eq(a.nwarn, 0);
    text_ok("{" TINY4 ", \"quantization_config\": {\"quant_method\": \"awq\", "
            "\"modules_to_not_convert\": [\"lm_head\", \"model.layers.0.self_attn\"]}}", &a);
    static const char *const awq[] = {
        "t.json: field \"quantization_config.bits\" is absent: 4-bit weights, AwqConfig's "
        "default",
        "t.json: field \"quantization_config.group_size\" is absent: groups of 128 input columns, "
        "the transformers default",
        "t.json: field \"quantization_config.modules_to_not_convert\" = 2 entries (modules kept "
        "unquantized) changes the GEMM/memory work and is not modelled: cpsim's float "
        "exceptions apply instead",
    };
    ck_warns(&a, awq, 3);
    ck_assert_int_eq(a.quant_bits, 4);
    ck_assert_int_eq(a.quant_group, 128);
    ck_assert_int_eq(a.quant_zeros, 1);
    text_ok("{" TINY4 ", \"quantization_config\": {\"quant_method\": \"awq\", \"bits\": 4, "
            "\"group_size\": 64, \"zero_point\": false}}", &a);
    ck_assert_int_eq(a.nwarn, 0);
    ck_assert_int_eq(a.quant_zeros, 0);
    ck_assert_int_eq(a.quant_group, 64);
}
END_TEST

static Suite *arch_suite(void)
{
    Suite *s = suite_create("arch");
    TCase *bundled = tcase_create("bundled");
    int n_bundled = 0;
    while (arch_bundled[n_bundled])
        n_bundled++;
    tcase_add_test(bundled, test_bundled_all_load);
    tcase_add_test(bundled, test_thinker_nested);
    tcase_add_test(bundled, test_glm51_mla_dsa);
    tcase_add_test(bundled, test_deepseek_mla);
    tcase_add_test(bundled, test_dense_gqa);
    tcase_add_test(bundled, test_qwen3_moe);
    tcase_add_loop_test(bundled, test_param_counts, 0,
                        (int)(sizeof note_counts / sizeof note_counts[0]));
    tcase_add_test(bundled, test_ffn_per_layer);
    tcase_add_test(bundled, test_glm_attention_exact);
    tcase_add_loop_test(bundled, test_structure_not_from_name, 0, 2 * n_bundled);
    suite_add_tcase(s, bundled);

    TCase *fixtures = tcase_create("fixtures");
    tcase_add_test(fixtures, test_tiny_defaults);
    tcase_add_test(fixtures, test_tiny_bias_qknorm);
    tcase_add_test(fixtures, test_tiny_qwen_moe);
    tcase_add_test(fixtures, test_tiny_ds_moe);
    tcase_add_test(fixtures, test_relative_paths);
    suite_add_tcase(s, fixtures);

    TCase *unstated = tcase_create("unstated");
    tcase_add_loop_test(unstated, test_qk_norm_class, 0,
                        (int)(sizeof qk_cases / sizeof qk_cases[0]));
    tcase_add_test(unstated, test_qk_norm_params);
    tcase_add_test(unstated, test_mixtral);
    tcase_add_test(unstated, test_llama4_scout);
    tcase_add_test(unstated, test_llama4_interleave);
    tcase_add_test(unstated, test_window_mistral);
    tcase_add_test(unstated, test_window_gpt_oss);
    tcase_add_test(unstated, test_window_qwen);
    tcase_add_test(unstated, test_window_gemma3);
    tcase_add_test(unstated, test_hybrid_warnings);
    tcase_add_loop_test(unstated, test_warn_fields, 0,
                        (int)(sizeof warn_cases / sizeof warn_cases[0]));
    tcase_add_test(unstated, test_warn_errors);
    tcase_add_loop_test(unstated, test_bundled_no_warnings, 0, n_bundled);
    tcase_add_test(unstated, test_warn_overflow);
    tcase_add_test(unstated, test_quant_bundled);
    tcase_add_loop_test(unstated, test_quant, 0, (int)(sizeof quant_cases / sizeof quant_cases[0]));
    tcase_add_test(unstated, test_quant_errors);
    tcase_add_test(unstated, test_tie_default);
    tcase_add_test(unstated, test_router_assumed);
    tcase_add_test(unstated, test_context);
    tcase_add_test(unstated, test_aliases_and_quant_reads);
    suite_add_tcase(s, unstated);

    TCase *errors = tcase_create("errors");
    tcase_add_loop_test(errors, test_bad_fixture, 0,
                        (int)(sizeof bad_fixtures / sizeof bad_fixtures[0]));
    tcase_add_test(errors, test_missing_file);
    tcase_add_test(errors, test_unknown_bundled);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    setenv("CPSIM_DATADIR", CP_SRCDIR, 1);
    SRunner *sr = srunner_create(arch_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
