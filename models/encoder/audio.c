/* audio: Qwen3-Omni's audio encoder as plan ops (encoder.h). */
#include "models/encoder/encoder.h"

#include <stdlib.h>

#include "base/diag.h"

int64_t enc_conv_len(int64_t n)
{
    for (int i = 0; i < 3; i++)
        n = n > 0 ? (n - 1) / 2 + 1 : 0;
    return n;
}

enc_shape enc_audio_shape(const arch_audio *au, int64_t frames)
{
    enc_shape e = {0};
    int64_t chunk = 2 * au->n_window, tail = frames % chunk;
    e.chunks = frames / chunk + (tail > 0);
    e.chunk_rows = enc_conv_len(frames >= chunk ? chunk : tail);
    /* every full chunk gives chunk_rows rows, the tail its own (vLLM
     * _get_feat_extract_output_lengths: 13 per 100 frames, n_window 50) */
    e.rows = frames / chunk * enc_conv_len(chunk) + enc_conv_len(tail);
    /* a window: the padded chunk's rows times the chunks in n_window_infer
     * frames (vLLM: window_aftercnn = max_len_after_cnn * (n_window_infer //
     * (n_window * 2))), the last window what is left */
    e.window = e.chunk_rows * (au->n_window_infer / chunk);
    int64_t full = e.rows / e.window, rest = e.rows % e.window;
    e.windows = full + (rest > 0);
    e.pairs = (double)full * (double)e.window * (double)e.window + (double)rest * (double)rest;
    return e;
}

/* Rows of the last convolution's frequency axis: num_mel_bins halved three
 * times, rounding up (the conv_out input is conv_channels x this). */
static int64_t conv_freq(const arch_audio *au, int i)
{
    int64_t f = au->mel_bins;
    for (int k = 0; k < i; k++)
        f = (f - 1) / 2 + 1;
    return f;
}

double enc_audio_params(const arch_audio *au)
{
    double d = (double)au->d_model, f = (double)au->ffn, c = (double)au->conv_channels;
    double conv = (9.0 * c + c) + 2.0 * (9.0 * c * c + c) + c * (double)conv_freq(au, 3) * d;
    /* LayerNorm x2 (weight and bias), qkv and out_proj with biases, fc1, fc2 */
    double layer = 4.0 * d + (3.0 * d * d + 3.0 * d) + (d * d + d) + (d * f + f) + (f * d + d);
    double post = 2.0 * d + (d * d + d) + (d * (double)au->out_dim + (double)au->out_dim);
    double positions = (double)au->max_positions * d; /* the sinusoid table, a buffer */
    return conv + (double)au->layers * layer + post + positions;
}

double enc_audio_weight_bytes(const arch_audio *au, int tp, double wb)
{
    double d = (double)au->d_model, f = (double)au->ffn, t = (double)tp;
    /* split over TP: qkv (column parallel, with its bias), out_proj and fc2
     * (row parallel: the weight; the bias whole on every rank), fc1 (column,
     * with its bias) */
    double split = (3.0 * d * d + 3.0 * d) + d * d + (d * f + f) + f * d;
    double per_layer_split = split - split / t;
    return (enc_audio_params(au) - (double)au->layers * per_layer_split) * wb;
}

/* ---- the work ---------------------------------------------------------------- */

/* A LayerNorm of m rows of width w with its weight and bias (F.layer_norm:
 * one kernel reading x, writing y; elementwise.csv layer_norm rows). */
static void layer_norm(bld *b, const char *name, int64_t m, int64_t w)
{
    double e = (double)m * (double)w;
    em_compute(b, name, KC_LAYER_NORM, 8.0 * e, 2.0 * e * b->ab + 2.0 * (double)w * b->ab,
               shp(2, m, w, 0), shp(1, w, 0, 0), shp(2, m, w, 0));
}

/* GELU over e elements into a tensor of that many (F.gelu: one kernel a
 * call, erf form about 8 flops an element; elementwise.csv gelu rows). */
static void gelu(bld *b, const char *name, double e, int calls)
{
    uint32_t i = em_compute(b, name, KC_GELU, 8.0 * e, 2.0 * e * b->ab, shp(1, (int64_t)e, 0, 0),
                            shp(0, 0, 0, 0), shp(1, (int64_t)e, 0, 0));
    b->pg->ops[i].nkern = (uint8_t)calls;
}

/* Kernels of one F.conv2d call of the front on cuDNN's NCHW path (the
 * H200 trace of single-gpu/audio_encoder.py --kernels, conv.csv
 * `kernels`): one input channel, an implicit-GEMM kernel and the bias add;
 * 480, two layout transforms in, the convolution, one out, the bias add. */
#define CONV1_KERNELS 2
#define CONV_KERNELS 5

/* A 3x3 stride-2 convolution with bias of `in` to `out` channels over n
 * images of fo x to output pixels, in `calls` calls, as cuDNN runs one: its
 * implicit GEMM of n fo to rows, 9 in deep, out wide, impl cudnn (priced
 * from conv.csv, whose rows time whole calls). */
static void conv_gemm(bld *b, const char *name, int64_t n, int64_t fo, int64_t to, int64_t in,
                      int64_t out, int calls)
{
    uint32_t i = em_gemm(b, name, n * fo * to, 9 * in, out, 1);
    int k = calls * (in == 1 ? CONV1_KERNELS : CONV_KERNELS);
    em_stamp(b, i, IMPL_CUDNN, k);
}

/* Conv calls one op of the front stands for: its kernels (calls x
 * CONV_KERNELS) fit plan_op.nkern, a uint8_t. */
#define CALLS_PER_OP (255 / CONV_KERNELS)

/* One conv stage of a group of `calls` calls over n images of `in_px`
 * input elements each: the convolution, its GELU into a new tensor, the
 * convolution's output freed; memory of one call's `per` images at a time
 * (the calls run one after the other).  cuDNN's NCHW path for more than one
 * input channel converts the input to NHWC and the output back (the
 * nchwToNhwc / nhwcToNchw kernels of the trace): a copy of each, held while
 * the convolution runs (the device's peak at 10 min of audio,
 * checks/audio_encoder_e2e.csv, is one call's input twice over). Returns
 * the GELU's output: one call's, or, with `keep`, that of `kept` images
 * (the last stage's outputs stay for the cat). */
static em_tensor conv_stage(bld *b, const char *conv, const char *act, int64_t n, int64_t per,
                            int64_t in_px, int64_t fo, int64_t to, int64_t in, int64_t out,
                            int calls, int keep, int64_t kept)
{
    double px = (double)(fo * to * out);
    em_tensor y = em_act_alloc(b, (double)per * px * b->ab);
    em_tensor nhwc_in = EM_TENSOR_NONE, nhwc_out = EM_TENSOR_NONE;
    if (in > 1) {
        nhwc_in = em_act_alloc(b, (double)per * (double)in_px * b->ab);
        nhwc_out = em_act_alloc(b, (double)per * px * b->ab);
    }
    conv_gemm(b, conv, n, fo, to, in, out, calls);
    em_free(b, &nhwc_out);
    em_free(b, &nhwc_in);
    em_tensor g = em_act_alloc(b, (double)(keep ? kept : per) * px * b->ab);
    gelu(b, act, (double)n * px, calls);
    em_free(b, &y);
    return g;
}

/* The convolutions, conv_out and the positions of n chunks of `frames`
 * frames each (padded), into rows [n chunk_rows, d_model]; returns them
 * with the padding rows dropped (`rows` of them).  As vLLM's forward: the
 * stack runs in calls of conv_chunksize chunks, x = gelu(conv(x)) three
 * times, the calls' outputs concatenated when there is more than one. */
static em_tensor front(bld *b, const arch_audio *au, int64_t n, int64_t frames, int64_t rows)
{
    double ab = b->ab;
    int64_t c = au->conv_channels, d = au->d_model;
    int64_t f1 = conv_freq(au, 1), f2 = conv_freq(au, 2), f3 = conv_freq(au, 3);
    int64_t t1 = (frames - 1) / 2 + 1, t2 = (t1 - 1) / 2 + 1, t3 = (t2 - 1) / 2 + 1;
    int64_t cs = au->conv_chunksize, calls = (n + cs - 1) / cs, per = n < cs ? n : cs;
    double mel = (double)n * (double)au->mel_bins * (double)frames * ab;
    em_tensor padded = em_act_alloc(b, mel);
    /* pad_sequence of the chunks and the transpose to [n, 1, mel, frames] */
    em_copy(b, "audio.pad_chunks", mel, shp(2, au->mel_bins, n * frames, 0),
            shp(3, n, au->mel_bins, frames));
    int64_t groups = (calls + CALLS_PER_OP - 1) / CALLS_PER_OP;
    em_tensor *outs = cp_xcalloc((size_t)groups, sizeof *outs);
    em_tensor *early = cp_xcalloc((size_t)groups, sizeof *early);
    double px3 = (double)(c * f3 * t3) * ab;
    for (int64_t gi = 0, done = 0; gi < groups; gi++) {
        int64_t gc = calls - gi * CALLS_PER_OP < CALLS_PER_OP ? calls - gi * CALLS_PER_OP
                                                               : CALLS_PER_OP;
        int64_t gn = n - done < gc * cs ? n - done : gc * cs;
        /* the outputs of the group's calls before its last full one are
         * alive when that one's intermediates peak (the last call, shorter,
         * peaks lower unless it is nearly full: then this is one call's
         * outputs short) */
        int64_t before = gc >= 2 ? (gc - 2) * cs : 0;
        early[gi] = em_act_alloc(b, (double)before * px3);
        em_tensor y1 = conv_stage(b, "audio.conv2d1", "audio.conv_gelu1", gn, per,
                                  au->mel_bins * frames, f1, t1, 1, c, (int)gc, 0, 0);
        em_tensor y2 = conv_stage(b, "audio.conv2d2", "audio.conv_gelu2", gn, per,
                                  c * f1 * t1, f2, t2, c, c, (int)gc, 0, 0);
        em_free(b, &y1);
        outs[gi] = conv_stage(b, "audio.conv2d3", "audio.conv_gelu3", gn, per, c * f2 * t2, f3,
                              t3, c, c, (int)gc, 1, gn - before);
        em_free(b, &y2);
        done += gn;
    }
    em_free(b, &padded);
    double e3 = (double)n * (double)(c * f3 * t3);
    em_tensor all = EM_TENSOR_NONE;
    if (calls > 1) { /* torch.cat of the calls' outputs */
        all = em_act_alloc(b, e3 * ab);
        em_copy(b, "audio.conv_cat", e3 * ab, shp(3, n, c, f3 * t3), shp(3, n, c, f3 * t3));
    }
    for (int64_t gi = 0; gi < groups && calls > 1; gi++) {
        em_free(b, &outs[gi]);
        em_free(b, &early[gi]);
    }
    /* (n, c, f, t) -> (n, t, c f): a contiguous copy, then conv_out */
    em_tensor flat = em_act_alloc(b, e3 * ab);
    em_copy(b, "audio.conv_permute", e3 * ab, shp(3, n, c, f3 * t3), shp(3, n, t3, c * f3));
    em_free(b, calls > 1 ? &all : &outs[0]);
    free(outs);
    free(early);
    double nd = (double)(n * t3) * (double)d * ab;
    em_tensor embed = em_act_alloc(b, nd);
    em_gemm(b, "audio.conv_out", n * t3, c * f3, d, 1);
    em_free(b, &flat);
    em_elementwise(b, "audio.add_positions", KC_ELEMENTWISE, n * t3, 2 * d, d, 1.0);
    /* padded_embed[mask]: the valid rows gathered */
    em_tensor hidden = em_act_alloc(b, (double)rows * (double)d * ab);
    em_copy(b, "audio.drop_padding", (double)rows * (double)d * ab, shp(2, n * t3, d, 0),
            shp(2, rows, d, 0));
    em_free(b, &embed);
    return hidden;
}

/* One encoder layer over m rows of the rank (all `rows` rows attend, in
 * windows, on hq heads of the rank; ulysses over sp ranks when sp > 1). */
static void layer(bld *b, const arch_audio *au, const enc_shape *e, int64_t m, int sp)
{
    double ab = b->ab;
    int64_t d = au->d_model, hd = au->d_model / au->heads, hq = au->heads / b->tp;
    int64_t fl = au->ffn / b->tp, rows = sp > 1 ? m * sp : e->rows, ha = hq / sp;
    double md = (double)m * (double)d * ab;
    em_tensor normed = em_act_alloc(b, md);
    layer_norm(b, "audio.attn_norm", m, d);
    double qkv_b = (double)m * (double)(3 * hq * hd) * ab;
    em_tensor qkv = em_act_alloc(b, qkv_b);
    em_gemm(b, "audio.qkv", m, d, 3 * hq * hd, 1);
    em_free(b, &normed);
    em_tensor heads = EM_TENSOR_NONE;
    if (sp > 1) { /* the share's rows of every head -> every row of 1/sp of them */
        heads = em_buf_alloc(b, qkv_b);
        em_coll(b, "audio.qkv_all_to_all", CK_ALL_TO_ALL, G_SP, qkv_b,
                shp(3, rows, 3 * ha, hd));
        em_free(b, &qkv);
    }
    /* one varlen call over the windows: non-causal, every row of a window
     * sees every row of it */
    plan_attn at = {.q_len = e->window < rows ? e->window : rows,
                    .kv_len = e->window < rows ? e->window : rows, .heads = ha,
                    .kv_heads = ha, .d_qk = hd, .d_v = hd, .pairs = e->pairs, .causal = 0,
                    .batch = e->windows};
    double out_b = (double)rows * (double)(ha * hd) * ab;
    em_tensor out = em_act_alloc(b, out_b);
    em_tensor lse = em_lse_alloc(b, rows, ha);
    double hsum = (double)(2 * hd);
    em_attention(b, "audio.attention", KC_ATTENTION, &at, 2.0 * e->pairs * (double)ha * hsum,
                 3.0 * (double)rows * (double)(ha * hd) * ab + out_b);
    em_free(b, &lse);
    em_free(b, sp > 1 ? &heads : &qkv);
    if (sp > 1) { /* back to the share's rows of the rank's heads */
        em_tensor share = em_buf_alloc(b, (double)m * (double)(hq * hd) * ab);
        em_coll(b, "audio.out_all_to_all", CK_ALL_TO_ALL, G_SP, out_b, shp(3, m, hq, hd));
        em_free(b, &out);
        out = share;
    }
    em_tensor proj = em_act_alloc(b, md);
    em_gemm(b, "audio.out_proj", m, hq * hd, d, 1);
    em_free(b, &out);
    em_coll(b, "audio.attn_all_reduce", CK_ALL_REDUCE, G_TP, md, shp(2, m, d, 0));
    em_elementwise(b, "audio.attn_residual", KC_ELEMENTWISE, m, 2 * d, d, 1.0);
    em_free(b, &proj);
    em_tensor ffn_in = em_act_alloc(b, md);
    layer_norm(b, "audio.ffn_norm", m, d);
    em_tensor up = em_act_alloc(b, (double)m * (double)fl * ab);
    em_gemm(b, "audio.fc1", m, d, fl, 1);
    em_free(b, &ffn_in);
    gelu(b, "audio.gelu", (double)m * (double)fl, 1);
    em_tensor down = em_act_alloc(b, md);
    em_gemm(b, "audio.fc2", m, fl, d, 1);
    em_free(b, &up);
    em_coll(b, "audio.ffn_all_reduce", CK_ALL_REDUCE, G_TP, md, shp(2, m, d, 0));
    em_elementwise(b, "audio.ffn_residual", KC_ELEMENTWISE, m, 2 * d, d, 1.0);
    em_free(b, &down);
}

void enc_audio(bld *b, int64_t frames, int sp, int ex)
{
    const arch_audio *au = &b->a->audio;
    enc_shape e = enc_audio_shape(au, frames);
    int P = ex == ENCX_ULYSSES && sp > 1 ? sp : 1;
    /* ulysses: the most loaded rank's share of chunks and rows (the
     * all-to-alls move equal blocks: the last share padded) */
    int64_t chunks = (e.chunks + P - 1) / P, m = (e.rows + P - 1) / P;
    int64_t frames_c = 2 * au->n_window < frames ? 2 * au->n_window : frames;
    b->layer = -1;
    b->phase = PH_OTHER;
    b->layout = P > 1 ? TL_LOCAL : TL_FULL;
    uint32_t first = b->pg->nops;
    /* the encoder's linears are built without a quant_config (vLLM
     * Qwen3OmniMoeAudioEncoder): activation-dtype GEMMs whatever the
     * checkpoint's precision */
    em_wprec keep = em_use_weights(b, (em_wprec){b->adt, QS_NONE, b->ab});
    em_tensor hidden = front(b, au, chunks, frames_c, m);
    for (int64_t l = 0; l < au->layers; l++)
        layer(b, au, &e, m, P);
    int64_t d = au->d_model, o = au->out_dim;
    em_tensor normed = em_act_alloc(b, (double)m * (double)d * b->ab);
    layer_norm(b, "audio.ln_post", m, d);
    em_free(b, &hidden);
    em_tensor p1 = em_act_alloc(b, (double)m * (double)d * b->ab);
    em_gemm(b, "audio.proj1", m, d, d, 1);
    em_free(b, &normed);
    gelu(b, "audio.proj_gelu", (double)m * (double)d, 1);
    double mo = (double)m * (double)o * b->ab;
    em_tensor outp = em_act_alloc(b, mo);
    em_gemm(b, "audio.proj2", m, d, o, 1);
    em_free(b, &p1);
    if (P > 1) { /* every rank embeds rows of the whole audio */
        em_tensor all = em_buf_alloc(b, mo * (double)P);
        b->layout = TL_FULL;
        em_coll(b, "audio.rows_all_gather", CK_ALL_GATHER, G_SP, mo * (double)P,
                shp(2, e.rows, o, 0));
        em_free(b, &outp);
        outp = all;
    }
    b->layout = TL_FULL;
    /* masked_scatter of the rows into the prompt's embeddings (a copy of
     * them), after which the encoder's output is dropped */
    em_copy(b, "audio.scatter_rows", (double)e.rows * (double)o * b->ab,
            shp(2, e.rows, o, 0), shp(2, e.rows, o, 0));
    em_free(b, &outp);
    em_use_weights(b, keep);
    /* the encoder runs eagerly (no graph of the encoder is captured) */
    for (uint32_t i = first; i < b->pg->nops; i++)
        if (b->pg->ops[i].kind != OPK_MEM)
            b->pg->ops[i].eager = 1;
}
