/* yamlio: the one adapter between libyaml and the rest of cpsim.
 *
 * A YAML document is read into a small tree of nodes that remember where they
 * came from (file:line:col, or the --set option that created them).  Loaders
 * then walk the tree with the typed accessors below, which produce complete
 * error messages ("w.yaml:4:7: parallel.tp: expected an integer in [1, 4096],
 * got \"x\"").  Nothing else in cpsim includes <yaml.h>.
 *
 * Ownership: a ydoc owns every node and string reachable from its root.
 * Nodes are never shared between documents.
 */
#ifndef CP_YAMLIO_H
#define CP_YAMLIO_H

#include <stdio.h>
#include "base/diag.h"

typedef enum { YN_NULL, YN_SCALAR, YN_SEQ, YN_MAP } yn_kind;

typedef struct ynode ynode;
struct ynode {
    yn_kind kind;
    cp_loc loc;          /* where the node's value starts */
    char *str;           /* YN_SCALAR: the text (never NULL for scalars) */
    int quoted;          /* YN_SCALAR: written with quotes (always a string) */
    size_t n;            /* YN_SEQ / YN_MAP: number of items */
    ynode **kids;        /* YN_SEQ items, YN_MAP values */
    char **keys;         /* YN_MAP keys (scalar keys only) */
    cp_loc *key_locs;    /* YN_MAP: where each key is written */
    unsigned char *seen; /* YN_MAP: set by yio_key() for unknown-key checks */
    size_t cap;
};

typedef struct ydoc ydoc;

/* Parse a whole file / a buffer.  An empty document gives an empty map.
 * Anchors and aliases are refused; tags are ignored.  Syntax errors report
 * libyaml's problem with its line and column. */
ydoc *yio_parse_file(const char *path, cp_err *err);
/* The rest of an open stream (standard input), its locations named origin
 * ("<stdin>"); the stream stays open. */
ydoc *yio_parse_stream(FILE *f, const char *origin, cp_err *err);
ydoc *yio_parse_string(const char *text, size_t len, const char *origin, cp_err *err);
void yio_free(ydoc *doc);
ynode *yio_root(ydoc *doc);

/* Apply one "dotted.path=value" override (the --set option).  Path parts are
 * map keys or, under a sequence, decimal indices (an index equal to the
 * length appends).  Missing intermediate maps are created; a scalar where a
 * map is needed is replaced by a map {name: scalar} (so `platform: h100` plus
 * --set platform.nodes=2 gives {name: h100, nodes: 2}).  The value is parsed
 * as a YAML flow node, so `--set parallel.layer_sharding=[q_b_proj,o_proj]`
 * works.  New nodes carry the origin "--set <assignment>". */
int yio_set(ydoc *doc, const char *assignment, cp_err *err);

/* Deep-merge src (a map) over dst (a map): scalars and sequences replace,
 * maps merge recursively.  Copies src's nodes (and their locations) into
 * dst's document. */
int yio_merge(ydoc *dst_doc, ynode *dst, const ynode *src, cp_err *err);

/* Deep copy of a node into doc (locations kept). */
ynode *yio_clone(ydoc *doc, const ynode *src);

/* Look up a key in a map (NULL if absent or if map is not a map) and mark it
 * seen.  `what` arguments below are dotted key paths used in messages. */
const ynode *yio_key(const ynode *map, const char *key);

/* Fail with "origin:line:col: <what>: expected a mapping" etc. */
int yio_want_map(const ynode *n, const char *what, cp_err *err);
int yio_want_seq(const ynode *n, const char *what, cp_err *err);

/* Scalar conversions.  Integers accept decimal with optional '_' separators
 * and an exact float form such as 1e6; doubles accept any strtod form.  Range
 * checks are inclusive and part of the message. */
int yio_int(const ynode *n, const char *what, long long lo, long long hi,
            long long *out, cp_err *err);
int yio_double(const ynode *n, const char *what, double lo, double hi,
               double *out, cp_err *err);
int yio_bool(const ynode *n, const char *what, int *out, cp_err *err);
/* Returns the scalar text (owned by the document). */
const char *yio_str(const ynode *n, const char *what, cp_err *err);
/* Match the scalar against names[] (NULL-terminated); the message lists the
 * accepted values and suggests the closest one. */
int yio_enum(const ynode *n, const char *what, const char *const *names,
             int *out, cp_err *err);

/* Convenience: optional key of a map.  When the key is absent *out is left
 * unchanged and 0 is returned.  `prefix` is the dotted path of the map
 * ("" at top level) used to build "prefix.key" in messages. */
int yio_opt_int(const ynode *map, const char *prefix, const char *key,
                long long lo, long long hi, long long *out, cp_err *err);
int yio_opt_double(const ynode *map, const char *prefix, const char *key,
                   double lo, double hi, double *out, cp_err *err);
int yio_opt_bool(const ynode *map, const char *prefix, const char *key,
                 int *out, cp_err *err);
int yio_opt_enum(const ynode *map, const char *prefix, const char *key,
                 const char *const *names, int *out, cp_err *err);
int yio_opt_str(const ynode *map, const char *prefix, const char *key,
                const char **out, cp_err *err);

/* After a map has been read: every key not marked seen is an error
 * "origin:line:col: unknown key \"tpp\" in parallel (did you mean \"tp\"?)".
 * known[] (NULL-terminated) feeds the suggestion. */
int yio_no_unknown(const ynode *map, const char *prefix,
                   const char *const *known, cp_err *err);

/* Print a node as block YAML (used by `cpsim validate`). */
void yio_dump(const ynode *n, FILE *out, int indent);

/* "prefix.key" or "key" into buf; returns buf. */
char *yio_path(char *buf, size_t len, const char *prefix, const char *key);

#endif
