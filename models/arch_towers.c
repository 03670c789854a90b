/* arch_towers: the encoders and decoders beside the text model
 * (arch_int.h arch_parse_towers): Qwen3-Omni's audio encoder read
 * (arch.h arch_audio), the others warned as a whole. */
#include "models/arch_int.h"

#include <inttypes.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Qwen3-Omni's audio encoder (arch.h arch_audio), read from the tower
 * object o named oname when the model's family has that encoder (no field
 * says which encoder an audio_config describes: the family does, as for
 * the other choices of families[]); 1 read, 0 not that encoder (the caller
 * warns the tower as a whole), -1 after cp_fail. */
static int parse_audio(const cfg *c, const json_t *o, const char *oname, arch *a)
{
    char qname[ARCH_FIELD_LEN];
    if (!arch_family_audio(c))
        return 0;
    const json_t *v = arch_field(c, o, oname, "model_type", qname, sizeof qname);
    /* defaults: transformers' Qwen3OmniMoeAudioEncoderConfig */
    arch_audio au = {.layers = 32, .d_model = 1280, .heads = 20, .ffn = 5120, .mel_bins = 128,
                     .conv_channels = 480, .n_window = 50, .n_window_infer = 800,
                     .out_dim = 3584, .max_positions = 1500, .conv_chunksize = 500};
    static const struct {
        const char *key;
        size_t off;
        int64_t hi;
    } fields[] = {
        {"encoder_layers", offsetof(arch_audio, layers), ARCH_MAX_LAYERS},
        {"d_model", offsetof(arch_audio, d_model), MAX_HIDDEN},
        {"encoder_attention_heads", offsetof(arch_audio, heads), MAX_HEADS},
        {"encoder_ffn_dim", offsetof(arch_audio, ffn), MAX_WIDTH},
        {"num_mel_bins", offsetof(arch_audio, mel_bins), MAX_DIM},
        {"downsample_hidden_size", offsetof(arch_audio, conv_channels), MAX_WIDTH},
        {"n_window", offsetof(arch_audio, n_window), MAX_POSITION},
        {"n_window_infer", offsetof(arch_audio, n_window_infer), MAX_POSITION},
        {"output_dim", offsetof(arch_audio, out_dim), MAX_HIDDEN},
        {"max_source_positions", offsetof(arch_audio, max_positions), MAX_POSITION},
        {"conv_chunksize", offsetof(arch_audio, conv_chunksize), MAX_POSITION},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        v = arch_field(c, o, oname, fields[i].key, qname, sizeof qname);
        if (v && arch_want_int(c, v, qname, 1, fields[i].hi,
                               (int64_t *)((char *)&au + fields[i].off)) < 0)
            return -1;
    }
    /* the shapes the encoder's code assumes (modeling_qwen3_omni_moe.py):
     * heads split d_model evenly; an attention window is whole conv chunks */
    if (au.d_model % au.heads)
        return cp_fail_at(c->err, arch_at(c), "field \"%s.d_model\" (%" PRId64 ") must be a "
                          "multiple of encoder_attention_heads (%" PRId64 ")", oname, au.d_model,
                          au.heads);
    if (au.n_window_infer % (2 * au.n_window))
        return cp_fail_at(c->err, arch_at(c), "field \"%s.n_window_infer\" (%" PRId64 ") must "
                          "be a multiple of 2 x n_window (%" PRId64 "): windows of whole conv "
                          "chunks", oname, au.n_window_infer, 2 * au.n_window);
    if (au.out_dim != a->hidden)
        return cp_fail_at(c->err, arch_at(c), "field \"%s.output_dim\" (%" PRId64 ") must be "
                          "the text model's hidden_size (%" PRId64 "): its rows are prompt "
                          "embeddings", oname, au.out_dim, a->hidden);
    a->audio = au;
    return 1;
}

/* Encoders and decoders beside the text model (Llama-4 and Gemma-3
 * vision_config, Qwen3-Omni's thinker_config.audio_config and
 * vision_config, its talker_config): Qwen3-Omni's audio encoder is read
 * (parse_audio: requests with audio_s run it); the others' work and
 * weights are not simulated, and each is warned as a whole. */
int arch_parse_towers(const cfg *c, arch *a)
{
    static const char *const towers[][2] = {
        {"vision_config", "an image encoder"},
        {"audio_config", "an audio encoder"},
        {"talker_config", "a speech decoder"},
    };
    const json_t *thinker = json_object_get(c->top, "thinker_config");
    char qname[64];
    for (int lvl = 0; lvl < 2; lvl++)
        for (size_t t = 0; t < sizeof towers / sizeof towers[0]; t++) {
            const json_t *o = lvl ? (json_is_object(thinker) ? thinker : NULL) : c->top;
            const json_t *v = o ? json_object_get(o, towers[t][0]) : NULL;
            if (!v || json_is_null(v))
                continue;
            snprintf(qname, sizeof qname, "%s%s", lvl ? "thinker_config." : "", towers[t][0]);
            int r = t == 1 && json_is_object(v) ? parse_audio(c, v, qname, a) : 0;
            if (r < 0)
                return -1;
            if (r > 0) {
                arch_note(c, qname, 0);
                continue;
            }
            arch_warn_field(c, a, qname, "{...}", towers[t][1], "encoder",
                       "its weights and work are not counted");
        }
    return 0;
}
