/* arch_int: what the config loader's files share (models/arch.c reads the
 * structure, arch_quant.c the quantization_config, arch_reads.c says what
 * became of every field, arch_params.c counts parameters, arch_fields.c
 * reads fields and warns); internal to models/. */
#ifndef CP_ARCH_INT_H
#define CP_ARCH_INT_H

#include <jansson.h>
#include <stdint.h>

#include "models/arch.h"

/* Sanity bounds on config values, chosen here: orders of magnitude above any
 * published model (largest in models-hardware.md section 2.1: hidden 8192,
 * vocab 154880, 256 experts, FFN 28672) yet tight enough to catch garbage. */
#define MAX_HIDDEN INT64_C(1000000)     /* hidden_size */
#define MAX_HEADS INT64_C(65536)        /* attention and indexer heads */
#define MAX_DIM INT64_C(65536)          /* per-head dimensions */
#define MAX_VOCAB INT64_C(100000000)    /* vocab_size */
#define MAX_WIDTH INT64_C(10000000)     /* FFN widths and LoRA ranks */
#define MAX_EXPERTS INT64_C(65536)      /* routed or shared experts */
#define MAX_POSITION (INT64_C(1) << 40) /* max_position_embeddings, index_topk */
/* Whole-model parameter bound, chosen here: ~1300x GLM-5's 743.9 B and below
 * 2^53, so every count computed in double below is an exact integer. */
#define MAX_PARAMS 1e15

/* The dotted names of the fields the loader read and of those it warned,
 * for arch_fields and the warning on fields not read. */
#define SEEN_MAX 1024
typedef struct seen {
    int n;
    char name[SEEN_MAX][ARCH_FIELD_LEN];
    uint8_t warned[SEEN_MAX]; /* 1: warned (a field warned as a whole covers
                                 its members) */
} seen;

struct family;

/* The JSON being read and where to report problems. */
typedef struct cfg {
    const char *path;
    const json_t *top;
    const json_t *text;    /* nested text config, NULL when none */
    const char *text_name; /* its dotted name, for messages */
    const struct family *fam; /* the model family (families), NULL if unknown */
    int fam_by_class;      /* fam was named by an architectures[] class, not
                              by model_type */
    char fam_via[96];      /* how fam was found, for warnings */
    seen *seen;            /* fields read and warned, NULL: not recorded */
    cp_err *err;
} cfg;

/* ---- reading fields (arch_fields.c) ------------------------------------------------ */

/* The location messages name: the config file. */
cp_loc arch_at(const cfg *c);
/* Record that the field qname was read (warned 1: and warned). */
void arch_note(const cfg *c, const char *qname, int warned);
/* key in the text config, else at the top level (NULL: absent or null);
 * its dotted name into qname. */
const json_t *arch_lookup(const cfg *c, const char *key, char *qname, size_t n);
/* v as short text for messages, into buf. */
char *arch_show(const json_t *v, char *buf, size_t n);
/* Member key of object o (named oname), its dotted name into qname; NULL
 * when absent or null. */
const json_t *arch_member(const json_t *o, const char *oname, const char *key, char *qname,
                          size_t n);
/* arch_member, recorded as read. */
const json_t *arch_field(const cfg *c, const json_t *o, const char *oname, const char *key,
                         char *qname, size_t n);
/* v as a whole number in [lo, hi], a bool, a string (into buf): 0, or -1
 * after cp_fail naming qname. */
int arch_want_int(const cfg *c, const json_t *v, const char *qname, int64_t lo, int64_t hi,
                  int64_t *out);
int arch_want_bool(const cfg *c, const json_t *v, const char *qname, int *out);
int arch_want_str(const cfg *c, const json_t *v, const char *qname, char *buf, size_t n,
                  const char *what);
/* The file name of path, for messages. */
const char *arch_base_name(const char *path);
/* A warning on field qname (value shown): what it is, the work it changes
 * and how cpsim takes it instead; recorded as warned. */
void arch_warn_field(const cfg *c, arch *a, const char *qname, const char *value,
                     const char *what, const char *work, const char *how);

/* ---- the other files -------------------------------------------------------------- */

/* Whether the model's family has Qwen3-Omni's audio encoder (arch.c). */
int arch_family_audio(const cfg *c);
/* The towers beside the text model (arch_towers.c): the audio encoder read
 * into a->audio, the rest warned; 0, or -1 after cp_fail. */
int arch_parse_towers(const cfg *c, arch *a);
/* quantization_config into a (arch_quant.c): 0, or -1 after cp_fail. */
int arch_parse_quant(const cfg *c, arch *a);
/* One warning line naming the fields neither read, warned nor known not to
 * change the work; with out, the classification of every field
 * (arch_reads.c). */
void arch_warn_unread(const cfg *c, arch *a, arch_fields *out);
/* The model's parameters, in double (exact below 2^53: MAX_PARAMS;
 * arch_params.c). */
double arch_params_exact(const arch *a);

#endif
