#!/bin/sh
# dsa-w8a8-description.sh [LAYERS FIRST_DENSE EXPERTS MTP_LAYERS]
#
# Writes to stdout an msModelSlim quant_model_description.json (tensor name
# -> quant type, the format of models-hardware.md 2.3) for a DeepSeek-style
# DSA model with q_b/kv_b MLA, the lightning indexer, FIRST_DENSE dense
# layers, then MoE layers of EXPERTS routed experts and one shared-expert
# MLP.  Defaults: GLM-5.1 (models/configs/glm-5.1.json: 78 layers,
# first_k_dense_replace 3, 256 routed experts, 1 MTP layer).
#
# The per-tensor assignment is an example chosen for the tests of cpsim
# (not a copy of a published file): the attention projections q_a_proj,
# q_b_proj, kv_a_proj_with_mqa and o_proj W8A8 (static), the MLPs, experts
# and indexer wq_b W8A8_DYNAMIC, and FLOAT for what W8A8 checkpoints keep
# in floating point (models-hardware.md 2.3): norms, the router and its
# correction bias, kv_b_proj, indexer wk / weights_proj / k_norm,
# embedding, LM head.  Each quantized linear lists the tensors of its
# method (weight, weight_scale, weight_offset; W8A8 also input_scale,
# input_offset, quant_bias, deq_scale).  MTP layers (numbered after the
# decoder layers) are listed as real descriptions list them.
set -eu
LAYERS=${1:-78}
DENSE=${2:-3}
EXPERTS=${3:-256}
MTP=${4:-1}
awk -v L="$LAYERS" -v D="$DENSE" -v E="$EXPERTS" -v M="$MTP" '
function entry(name, type) {
    printf "%s\n  \"%s\": \"%s\"", sep, name, type
    sep = ","
}
function linear(p, type) {
    entry(p ".weight", type)
    if (type == "FLOAT")
        return
    entry(p ".weight_scale", type)
    entry(p ".weight_offset", type)
    if (type != "W8A8")
        return
    entry(p ".input_scale", type)
    entry(p ".input_offset", type)
    entry(p ".quant_bias", type)
    entry(p ".deq_scale", type)
}
function mlp(p) {
    linear(p ".gate_proj", "W8A8_DYNAMIC")
    linear(p ".up_proj", "W8A8_DYNAMIC")
    linear(p ".down_proj", "W8A8_DYNAMIC")
}
BEGIN {
    sep = ""
    printf "{"
    entry("model_quant_type", "W8A8_DYNAMIC")
    entry("model.embed_tokens.weight", "FLOAT")
    for (l = 0; l < L + M; l++) {
        b = "model.layers." l
        a = b ".self_attn"
        entry(b ".input_layernorm.weight", "FLOAT")
        linear(a ".q_a_proj", "W8A8")
        entry(a ".q_a_layernorm.weight", "FLOAT")
        linear(a ".q_b_proj", "W8A8")
        linear(a ".kv_a_proj_with_mqa", "W8A8")
        entry(a ".kv_a_layernorm.weight", "FLOAT")
        linear(a ".kv_b_proj", "FLOAT")
        linear(a ".o_proj", "W8A8")
        linear(a ".indexer.wq_b", "W8A8_DYNAMIC")
        linear(a ".indexer.wk", "FLOAT")
        entry(a ".indexer.k_norm.weight", "FLOAT")
        entry(a ".indexer.k_norm.bias", "FLOAT")
        linear(a ".indexer.weights_proj", "FLOAT")
        entry(b ".post_attention_layernorm.weight", "FLOAT")
        if (l < D) {
            mlp(b ".mlp")
            continue
        }
        entry(b ".mlp.gate.weight", "FLOAT")
        entry(b ".mlp.gate.e_score_correction_bias", "FLOAT")
        for (e = 0; e < E; e++)
            mlp(b ".mlp.experts." e)
        mlp(b ".mlp.shared_experts")
    }
    entry("model.norm.weight", "FLOAT")
    entry("lm_head.weight", "FLOAT")
    printf "\n}\n"
}'
