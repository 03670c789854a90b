/* arch_quant: a config's quantization_config (see arch.h, arch_int.h):
 * the checkpoint's weight format, its group scales and zero points, and the
 * modules it leaves unconverted. */
#include "models/arch_int.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* [rows, cols], two positive integers, into blk. */
static int block_pair(const cfg *c, const json_t *v, const char *qname, int64_t *blk)
{
    char got[64];
    const json_t *r = json_array_get(v, 0), *k = json_array_get(v, 1);
    if (json_is_array(v) && json_array_size(v) == 2 && json_is_integer(r) &&
        json_is_integer(k) && json_integer_value(r) >= 1 && json_integer_value(r) <= MAX_WIDTH &&
        json_integer_value(k) >= 1 && json_integer_value(k) <= MAX_WIDTH) {
        blk[0] = json_integer_value(r);
        blk[1] = json_integer_value(k);
        return 0;
    }
    return cp_fail_at(c->err, arch_at(c),
                      "field \"%s\" must be a block shape [rows, cols] of positive integers, "
                      "got %s", qname, arch_show(v, got, sizeof got));
}

/* Scale granularities of compressed-tensors' QuantizationStrategy that
 * apply to weights (compressed_tensors/quantization/quant_args.py). */
static const char *const weight_strategies[] = {
    "tensor", "channel", "group", "block", "tensor_group", NULL,
};

/* Members `key` of x and y are equal JSON, null counting as absent. */
static int same_member(const json_t *x, const json_t *y, const char *key)
{
    const json_t *u = json_object_get(x, key), *v = json_object_get(y, key);
    u = json_is_null(u) ? NULL : u;
    v = json_is_null(v) ? NULL : v;
    return (!u && !v) || json_equal(u, v);
}

/* compressed-tensors: the scheme of config_groups' first group by name
 * (weights.num_bits / type / strategy / group_size / block_structure /
 * symmetric, input_activations.dynamic; targets other than ["Linear"] are
 * warned).  Groups whose weights or input activations
 * differ from it, a strategy outside weight_strategies, a missing
 * config_groups and a kv_cache_scheme are warned. */
static int parse_compressed(const cfg *c, arch *a, const json_t *q, const char *qn)
{
    /* each dotted name is sized for its parent's plus the longest key */
    char gname[192], sub[240], wname[264], qname[288], got[64], val[64];
    const json_t *groups = arch_field(c, q, qn, "config_groups", gname, sizeof gname), *v;
    const char *key, *first = NULL;
    json_t *g;
    if (groups && !json_is_object(groups))
        return cp_fail_at(c->err, arch_at(c), "field \"%s\" must be an object, got %s", gname,
                          arch_show(groups, got, sizeof got));
    if (groups)
        json_object_foreach((json_t *)groups, key, g)
            if (!first || strcmp(key, first) < 0)
                first = key;
    if (!first) {
        snprintf(qname, sizeof qname, "%s.quant_method", qn);
        arch_warn_field(c, a, qname, "\"compressed-tensors\"", "no config_groups: scheme unknown",
                   "GEMM/memory", "quant_bits is left 0");
    } else {
        const json_t *grp = json_object_get(groups, first), *w, *in;
        snprintf(sub, sizeof sub, "%s.%.40s", gname, first);
        arch_note(c, sub, 0);
        if (!json_is_object(grp))
            return cp_fail_at(c->err, arch_at(c), "field \"%s\" must be an object, got %s", sub,
                              arch_show(grp, got, sizeof got));
        w = arch_field(c, grp, sub, "weights", qname, sizeof qname);
        if (w && !json_is_object(w))
            return cp_fail_at(c->err, arch_at(c), "field \"%s\" must be an object, got %s", qname,
                              arch_show(w, got, sizeof got));
        int64_t bits = 0;
        snprintf(wname, sizeof wname, "%s.weights", sub);
        if (w && (v = arch_field(c, w, wname, "num_bits", qname, sizeof qname)) &&
            arch_want_int(c, v, qname, 1, 64, &bits) < 0)
            return -1;
        a->quant_bits = (int)bits;
        if (w && (v = arch_field(c, w, wname, "type", qname, sizeof qname)) &&
            arch_want_str(c, v, qname, a->quant_type, sizeof a->quant_type,
                     "a number type such as \"float\" or \"int\"") < 0)
            return -1;
        if (w && (v = arch_field(c, w, wname, "group_size", qname, sizeof qname)) &&
            arch_want_int(c, v, qname, 1, MAX_WIDTH, &a->quant_group) < 0)
            return -1;
        if (w && (v = arch_field(c, w, wname, "block_structure", qname, sizeof qname)) &&
            block_pair(c, v, qname, a->quant_block) < 0)
            return -1;
        if (w && (v = arch_field(c, w, wname, "strategy", qname, sizeof qname))) {
            char strategy[32];
            if (arch_want_str(c, v, qname, strategy, sizeof strategy, "a strategy name") < 0)
                return -1;
            int known = 0;
            for (const char *const *k = weight_strategies; *k; k++)
                known |= strcmp(*k, strategy) == 0;
            if (known)
                snprintf(a->quant_strategy, sizeof a->quant_strategy, "%.15s", strategy);
            else
                arch_warn_field(c, a, qname, arch_show(v, got, sizeof got),
                                "unknown weight strategy", "GEMM/memory",
                                "quant_strategy is left empty");
        }
        int sym = 1;
        if (w && (v = arch_field(c, w, wname, "symmetric", qname, sizeof qname)) &&
            arch_want_bool(c, v, qname, &sym) < 0)
            return -1;
        a->quant_zeros = !sym; /* asymmetric: a zero point per scale */
        v = arch_field(c, grp, sub, "targets", qname, sizeof qname);
        if (v && !(json_is_array(v) && json_array_size(v) == 1 &&
                   json_is_string(json_array_get(v, 0)) &&
                   !strcmp(json_string_value(json_array_get(v, 0)), "Linear")))
            arch_warn_field(c, a, qname, arch_show(v, got, sizeof got),
                            "the modules the scheme applies to", "GEMM/memory",
                            "it is applied to every linear but the float exceptions");
        in = arch_field(c, grp, sub, "input_activations", qname, sizeof qname);
        if (in && !json_is_object(in))
            return cp_fail_at(c->err, arch_at(c), "field \"%s\" must be an object, got %s", qname,
                              arch_show(in, got, sizeof got));
        snprintf(wname, sizeof wname, "%s.input_activations", sub);
        v = in ? arch_field(c, in, wname, "dynamic", qname, sizeof qname) : NULL;
        if (v && json_is_boolean(v))
            snprintf(a->quant_act, sizeof a->quant_act, "%s",
                     json_is_true(v) ? "dynamic" : "static");
        else if (v && arch_want_str(c, v, qname, a->quant_act, sizeof a->quant_act,
                               "true, false or a dynamic kind such as \"local\"") < 0)
            return -1;
        int differ = 0;
        json_object_foreach((json_t *)groups, key, g)
            differ += !json_is_object(g) || !same_member(g, grp, "weights") ||
                      !same_member(g, grp, "input_activations");
        if (differ > 0) {
            snprintf(val, sizeof val, "%zu groups", json_object_size(groups));
            snprintf(sub, sizeof sub, "the first, \"%.40s\", is recorded", first);
            arch_warn_field(c, a, gname, val, "mixed weight schemes", "GEMM/memory", sub);
        }
    }
    v = arch_field(c, q, qn, "kv_cache_scheme", qname, sizeof qname);
    if (v)
        arch_warn_field(c, a, qname, json_is_object(v) ? "{...}" : arch_show(v, got, sizeof got),
                   "quantized KV cache", "KV-cache",
                   "the KV cache is simulated at the run's KV dtype");
    return 0;
}

/* GPTQ / AWQ (transformers GPTQConfig, AwqConfig): integer weights of
 * `bits` (AwqConfig default 4; GPTQConfig has no default, so required),
 * scales per group_size input columns (default 128 in both classes; -1: per
 * channel); activations stay unquantized.  Zero points: AWQ stores qzeros
 * when zero_point (default True); GPTQ's QuantLinear stores qzeros whatever
 * `sym` says, and g_idx (models/quant.c prices both). */
static int parse_int_weights(const cfg *c, arch *a, const json_t *q, const char *qn)
{
    char qname[224];
    int awq = strcmp(a->quant_method, "awq") == 0;
    int64_t bits = 4, group = 128; /* AwqConfig bits=4; group_size=128 in both */
    int zeros = 1;                 /* AwqConfig zero_point=True */
    const json_t *v = arch_field(c, q, qn, "bits", qname, sizeof qname);
    if (!v && !awq)
        return cp_fail_at(c->err, arch_at(c), "missing required field \"%s.bits\" (gptq)", qn);
    if (v && arch_want_int(c, v, qname, 1, 16, &bits) < 0)
        return -1;
    if (!v)
        arch_warn(a, "%s: field \"%s\" is absent: 4-bit weights, AwqConfig's default",
                  arch_base_name(c->path), qname);
    a->quant_bits = (int)bits;
    snprintf(a->quant_type, sizeof a->quant_type, "int");
    if (awq && (v = arch_field(c, q, qn, "zero_point", qname, sizeof qname)) &&
        arch_want_bool(c, v, qname, &zeros) < 0)
        return -1;
    a->quant_zeros = zeros;
    v = arch_field(c, q, qn, "group_size", qname, sizeof qname);
    if (!v)
        arch_warn(a, "%s: field \"%s\" is absent: groups of 128 input columns, the "
                  "transformers default", arch_base_name(c->path), qname);
    if (v && json_is_integer(v) && json_integer_value(v) == -1) {
        snprintf(a->quant_strategy, sizeof a->quant_strategy, "channel");
        return 0;
    }
    if (v && arch_want_int(c, v, qname, 1, MAX_WIDTH, &group) < 0)
        return -1;
    snprintf(a->quant_strategy, sizeof a->quant_strategy, "group");
    a->quant_group = group;
    return 0;
}

/* modules_to_not_convert (or ignored_layers, as vLLM's Fp8Config also
 * reads it; compressed-tensors' ignore): modules left unquantized.  A list
 * of only the LM head, the embedding and routers (named by their last
 * component: lm_head, embed_tokens, gate, router), which the float
 * exceptions of models/quant.h keep in floating point anyway, is what cpsim
 * simulates; any other entry is warned (the exceptions apply instead). */
static int warn_not_converted(const cfg *c, arch *a, const json_t *q, const char *qn)
{
    char qname[224], val[32];
    const char *keys[] = {"modules_to_not_convert", "ignored_layers", "ignore"};
    for (int k = 0; k < 3; k++) {
        const json_t *v = arch_field(c, q, qn, keys[k], qname, sizeof qname), *e;
        size_t i, other = 0;
        if (!v)
            continue;
        json_array_foreach(v, i, e) {
            const char *m = json_string_value(e), *dot = m ? strrchr(m, '.') : NULL;
            const char *last = dot ? dot + 1 : m ? m : "";
            other += strcmp(last, "lm_head") && strcmp(last, "embed_tokens") &&
                     strcmp(last, "gate") && strcmp(last, "router");
        }
        if (json_is_array(v) && other == 0)
            continue; /* only modules those rules keep in floating point */
        snprintf(val, sizeof val, "%zu entries", json_is_array(v) ? json_array_size(v) : 1);
        arch_warn_field(c, a, qname, val, "modules kept unquantized", "GEMM/memory",
                   "cpsim's float exceptions apply instead");
    }
    return 0;
}

/* quantization_config, recorded for the precision model; nothing about the
 * run's precision is decided here.  Common fields: quant_method,
 * weight_block_size, fmt, activation_scheme.  A config with only
 * weight_block_size (the bundled DeepSeek-V3 abridgement of {"quant_method":
 * "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size":
 * [128, 128]}) is fp8.  fp8 is 8-bit float, per tensor unless
 * weight_block_size (as vLLM's Fp8Config reads it); compressed-tensors,
 * gptq and awq as above; any other method is warned. */
int arch_parse_quant(const cfg *c, arch *a)
{
    char qn[160], qname[224], got[64];
    const json_t *q = arch_lookup(c, "quantization_config", qn, sizeof qn), *v;
    if (!q)
        return 0;
    if (!json_is_object(q))
        return cp_fail_at(c->err, arch_at(c), "field \"%s\" must be an object, got %s", qn,
                          arch_show(q, got, sizeof got));
    if (((v = arch_field(c, q, qn, "quant_method", qname, sizeof qname)) &&
         arch_want_str(c, v, qname, a->quant_method, sizeof a->quant_method,
                       "a method name") < 0) ||
        ((v = arch_field(c, q, qn, "weight_block_size", qname, sizeof qname)) &&
         block_pair(c, v, qname, a->quant_block) < 0) ||
        ((v = arch_field(c, q, qn, "fmt", qname, sizeof qname)) &&
         arch_want_str(c, v, qname, a->quant_fmt, sizeof a->quant_fmt,
                  "a format such as \"e4m3\"") < 0) ||
        ((v = arch_field(c, q, qn, "activation_scheme", qname, sizeof qname)) &&
         arch_want_str(c, v, qname, a->quant_act, sizeof a->quant_act,
                  "\"dynamic\" or \"static\"") < 0))
        return -1;
    if (a->quant_method[0] == 0 && a->quant_block[0] > 0)
        snprintf(a->quant_method, sizeof a->quant_method, "fp8");
    const char *m = a->quant_method;
    if (strcmp(m, "fp8") == 0) {
        a->quant_bits = 8; /* float8: e4m3 or e5m2 */
        snprintf(a->quant_type, sizeof a->quant_type, "float");
        snprintf(a->quant_strategy, sizeof a->quant_strategy, "%s",
                 a->quant_block[0] > 0 ? "block" : "tensor");
        return warn_not_converted(c, a, q, qn);
    }
    if (strcmp(m, "compressed-tensors") == 0)
        return parse_compressed(c, a, q, qn) < 0 ? -1 : warn_not_converted(c, a, q, qn);
    if (strcmp(m, "gptq") == 0 || strcmp(m, "awq") == 0) {
        if (parse_int_weights(c, a, q, qn) < 0)
            return -1;
        return warn_not_converted(c, a, q, qn);
    }
    if (m[0] == 0 && json_object_size(q) == 0)
        return 0;
    if (m[0] == 0) {
        arch_warn_field(c, a, qn, "{...}", "no quant_method", "GEMM/memory",
                   "the quantization is not recorded");
        return 0;
    }
    v = arch_field(c, q, qn, "quant_method", qname, sizeof qname);
    arch_note(c, qn, 1); /* the warning covers every member */
    arch_warn_field(c, a, qname, arch_show(v, got, sizeof got), "unknown quantization method",
               "GEMM/memory", "quant_bits is left 0");
    return 0;
}

/* --- parameter counts (elements), in double: exact below 2^53 ----------- */
