/* workload_int: the workload loader's inner seam.  workload.c reads the
 * YAML into a scenario with the field tables below and resolves the model
 * and platform; workload_requests.c reads the request sources;
 * workload_check.c checks the combination; workload_view.c prints and
 * exports the resolved scenario. */
#ifndef CP_WORKLOAD_INT_H
#define CP_WORKLOAD_INT_H

#include <stddef.h>

#include "workloads/workload.h"

/* Bounds of the workload format (our own sanity limits, far beyond any
 * bundled model or preset, chosen so that sizes never overflow int64):
 * parallel degrees up to 4096 devices; prompts up to 2^24 tokens, about 80x
 * the longest bundled context (202752, glm-5.json max_position_embeddings);
 * arrivals within 1e6 s; decode lengths up to 1e6 tokens. */
#define WL_MAX_DEGREE 4096
#define WL_MAX_PROMPT 16777216LL
/* The longest audio of a request (audio_s): our bound, a day (8.64 M mel
 * frames, 1.1 M encoder rows at 13 per 100 frames). */
#define WL_MAX_AUDIO_S 86400.0
#define WL_MAX_ARRIVAL 1e6
#define WL_MAX_DECODE 1000000LL
/* Bounds of the request sources (our own sanity limits as well): at most
 * WL_MAX_REQUESTS open-loop requests once the sources are expanded (40 MB
 * of wl_request; workload.h), and served in all; closed-loop entries of up
 * to 4096 clients (WL_MAX_DEGREE, a client per device of the largest
 * layout); Poisson rates up to 1e6 requests per second; engine.max_num_seqs
 * up to 65536 running requests. */
#define WL_MAX_CLIENTS 4096
#define WL_MAX_RATE 1e6
#define WL_MAX_SEQS 65536

/* F_DOUBLE: a number in (lo, hi], lo excluded (a positive duration); its
 * default def is stored as it is, so it may lie outside the range (0:
 * none). */
typedef enum { F_INT, F_I64, F_BOOL, F_ENUM, F_DOUBLE } wl_ftype;

/* One scalar key of a section. */
typedef struct wl_field {
    const char *key;
    wl_ftype type;
    long long lo, hi;           /* F_INT, F_I64: inclusive range */
    long long def;              /* default (F_ENUM: the stored value) */
    const char *const *names;   /* F_ENUM: accepted values */
    const int *values;          /* F_ENUM: value stored per name; NULL: its index */
    size_t off;                 /* offset of the field in scenario */
} wl_field;

/* A section of scalar keys; `extra` are keys read by its own function
 * (NULL-terminated). */
typedef struct wl_section {
    const char *key;
    const wl_field *fields;
    size_t n;
    const char *const *extra;
    int (*read_extra)(const ynode *map, scenario *s, cp_err *err);
} wl_section;

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

extern const wl_section wl_sections[];
extern const size_t wl_nsections;

/* The enum value names of the sections' keys (NULL-terminated). */
extern const char *const wl_kv_storage_names[], *const wl_exchange_names[],
    *const wl_ring_select_names[], *const wl_decode_names[], *const wl_agt_names[],
    *const wl_graph_names[], *const wl_weight_names[], *const wl_kv_pool_names[],
    *const wl_act_quant_names[];

/* Optional key of map: a number in (lo, hi]; *out is left as it is when the
 * key is absent. */
int wl_opt_above(const ynode *map, const char *prefix, const char *key, double lo, double hi,
                     double *out, cp_err *err);
long long wl_field_get(const scenario *s, const wl_field *f);
double wl_field_getd(const scenario *s, const wl_field *f);
const char *wl_field_name(const wl_field *f, long long v);

/* workload_requests.c: the requests: entries into s->reqs and s->streams. */
int wl_read_requests(const ynode *root, scenario *s, cp_err *err);
/* The path of a trace file named in the workload (relative to its folder). */
char *wl_trace_path(char *buf, size_t len, const scenario *s, const char *file);
/* workload_check.c: every check of the resolved scenario. */
int wl_validate(const scenario *s, cp_err *err);

#endif
