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
#include "workloads/datadir.h"

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
    ck_assert_int_eq(n, 8); /* the eight files of models/configs/ */
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
    ck_assert_int_eq(a.qk_norm, 0); /* no use_qk_norm field: not guessed */
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
    {"qwen3-omni-30b-a3b-thinker", 30.53e9, 18.9e6, 0, 0.604e9},
    {"qwen3-32b", 32.76e9, 0, 0, 0},
    /* 30.5 B: https://apxml.com/models/qwen3-30b-a3b ("30.5 billion
     * parameters in total"), the Qwen3-30B-A3B model card figure */
    {"qwen3-30b-a3b", 30.5e9, 0, 0, 0},
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
    ck_assert_int_eq(arch_ffn_params(&a, 3),
                     INT64_C(256) * 6144 + INT64_C(256) * 3 * 6144 * 2048 + INT64_C(3) * 6144 * 2048);
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

/* Renames every model_type and architectures value under o; returns how
 * many were renamed. */
static int disguise(json_t *o)
{
    const char *key;
    json_t *v;
    int n = 0;
    json_object_foreach(o, key, v) {
        if (json_is_object(v))
            n += disguise(v);
    }
    if (json_object_get(o, "model_type")) {
        json_object_set_new(o, "model_type", json_string("mystery_lm"));
        n++;
    }
    if (json_object_get(o, "architectures")) {
        json_object_set_new(o, "architectures", json_pack("[s]", "MysteryForCausalLM"));
        n++;
    }
    return n;
}

static void ck_same_structure(const arch *x, const arch *y)
{
#define SAME(f) ck_assert_msg(x->f == y->f, "%s: " #f " differs", x->name)
    SAME(hidden); SAME(layers); SAME(vocab); SAME(max_position); SAME(tie_embeddings);
    SAME(attn); SAME(heads); SAME(kv_heads); SAME(head_dim); SAME(qk_norm);
    SAME(attention_bias); SAME(q_lora_rank); SAME(kv_lora_rank); SAME(qk_nope_dim);
    SAME(qk_rope_dim); SAME(v_head_dim); SAME(has_dsa); SAME(index_heads);
    SAME(index_head_dim); SAME(index_topk); SAME(intermediate); SAME(has_moe);
    SAME(experts); SAME(top_k); SAME(moe_intermediate); SAME(shared_experts);
    SAME(shared_intermediate); SAME(dense_layers); SAME(mtp_layers);
#undef SAME
    ck_assert_str_eq(x->torch_dtype, y->torch_dtype);
    ck_assert(memcmp(x->layer_moe, y->layer_moe, sizeof x->layer_moe) == 0);
    ck_assert_int_eq(arch_total_params(x), arch_total_params(y));
}

START_TEST(test_structure_not_from_name)
{
    const char *model = arch_bundled[_i];
    char dir[] = "/tmp/check_arch.XXXXXX", src[1024], rel[256], dst[1100];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(rel, sizeof rel, "models/configs/%s.json", model);
    json_error_t je;
    json_t *root = json_load_file(cp_data_path(src, sizeof src, rel), 0, &je);
    ck_assert_ptr_nonnull(root);
    ck_assert_int_gt(disguise(root), 0);
    snprintf(dst, sizeof dst, "%s/mystery.json", dir);
    ck_assert_int_eq(json_dump_file(root, dst, JSON_INDENT(2)), 0);
    json_decref(root);

    arch orig, copy;
    load_ok(model, NULL, &orig);
    load_ok(dst, NULL, &copy);
    ck_assert_str_eq(copy.name, "mystery");
    ck_same_structure(&orig, &copy);
    unlink(dst);
    rmdir(dir);
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
                       "llama-3.1-70b, deepseek-v3, deepseek-v3.2-exp, glm-5, glm-5.1";
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
    tcase_add_loop_test(bundled, test_structure_not_from_name, 0, n_bundled);
    suite_add_tcase(s, bundled);

    TCase *fixtures = tcase_create("fixtures");
    tcase_add_test(fixtures, test_tiny_defaults);
    tcase_add_test(fixtures, test_tiny_bias_qknorm);
    tcase_add_test(fixtures, test_tiny_qwen_moe);
    tcase_add_test(fixtures, test_tiny_ds_moe);
    tcase_add_test(fixtures, test_relative_paths);
    suite_add_tcase(s, fixtures);

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
