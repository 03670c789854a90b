/* encoder: the audio encoder beside the text model (arch.h arch_audio,
 * Qwen3-Omni's) as the engine runs it on a request's audio, before the
 * prefill step that holds the audio's rows.
 *
 * The engine's forward (vLLM qwen3_omni_moe_thinker.py
 * Qwen3OmniMoeAudioEncoder, transformers modeling_qwen3_omni_moe.py):
 *   mel frames [mel_bins, F] cut into chunks of 2 n_window frames (the last
 *   one shorter) and padded to one length -> conv2d1, GELU, conv2d2, GELU,
 *   conv2d3, GELU (3x3, stride 2, conv_chunksize chunks per call) ->
 *   conv_out (linear to d_model) + sinusoidal positions -> the padding rows
 *   dropped -> `layers` encoder layers, each: LayerNorm, qkv (with biases,
 *   heads over TP), attention within windows of n_window_infer frames'
 *   rows (non-causal, one varlen call: a ragged, cacheless attention),
 *   out_proj (row parallel, all-reduce), residual add, LayerNorm, fc1, GELU,
 *   fc2 (all-reduce), residual add -> ln_post, proj1, GELU, proj2 to the text
 *   model's hidden size -> the rows scattered into the prompt's embeddings.
 *
 * Over an SP group (parallel.encoder_exchange, cp-exchange.md "ragged
 * attentions keep a per-model choice of none or ulysses"): none, every SP
 * rank runs the whole encoder; ulysses, each runs 1/P of the conv chunks and
 * of the rows (the most loaded share, padded), q/k/v all-to-all to 1/P of
 * the rank's heads over every row, the output all-to-all back, and the
 * encoder's output all-gathered so every rank has the rows its prefill
 * embeds.
 *
 * Units: frames and rows are counts; bytes as plan.h says.
 */
#ifndef CP_ENCODER_H
#define CP_ENCODER_H

#include <stdint.h>

#include "models/arch.h"
#include "models/emit.h"

/* Mel frames per second of audio: the Whisper feature extractor Qwen3-Omni's
 * processor uses (16 kHz sampling, hop_length 160: 100 frames a second). */
#define ENC_FRAMES_PER_S 100

/* Output rows of the three stride-2 convolutions over n frames
 * ((n - 1) / 2 + 1, three times; 0 for 0). */
int64_t enc_conv_len(int64_t n);

/* How `frames` mel frames go through the encoder. */
typedef struct enc_shape {
    int64_t chunks;          /* conv chunks of 2 n_window frames (the last may be short) */
    int64_t chunk_rows;      /* rows of a full chunk after the convolutions (13 for 100
                                frames) */
    int64_t rows;            /* the encoder's output rows: prompt rows of the audio */
    int64_t window;          /* rows of a full attention window */
    int64_t windows;         /* attention windows (the last may be short) */
    double pairs;            /* attended (query, key) pairs of one head, every window */
} enc_shape;

/* The shape of `frames` frames on encoder au (au->layers > 0, frames > 0). */
enc_shape enc_audio_shape(const arch_audio *au, int64_t frames);

/* The encoder's parameters (elements; the position table included). */
double enc_audio_params(const arch_audio *au);
/* Its weight bytes on one rank of a TP group of tp (heads, fc1 and fc2
 * split, the rest replicated), `wb` bytes per element (vLLM builds the
 * encoder's linears without a quant_config: the activation dtype). */
double enc_audio_weight_bytes(const arch_audio *au, int tp, double wb);

/* The encoder's work on `frames` mel frames into b's program (the step is
 * open; b->layer is left at -1): sp ranks in the SP group, each running
 * as `ex` says (a wl_encoder_exchange; sp 1: the whole encoder). */
void enc_audio(bld *b, int64_t frames, int sp, int ex);

#endif
