/* yamlio_int: what base/yamlio.c (the tree, parsing, accessors) and
 * base/yamlio_edit.c (--set, merge, dump) share.  Not for use outside
 * base/yamlio*.c. */
#ifndef CP_YAMLIO_INT_H
#define CP_YAMLIO_INT_H

#include <stddef.h>

#include "base/yamlio.h"

struct ydoc {
    ynode *root;
    char **origins;   /* interned origin strings that node locations point to */
    size_t norigins;
};

/* realloc that ends the process when out of memory (yamlio.c "allocation"). */
void *yio_xrealloc(void *p, size_t n);
/* The document's copy of `origin` (one copy per distinct string). */
const char *yio_doc_origin(ydoc *doc, const char *origin);
/* loc with its file name interned in doc. */
cp_loc yio_loc_in(ydoc *doc, cp_loc loc);
/* A new node of kind at loc; a node and every node below it freed. */
ynode *yio_node_new(yn_kind kind, cp_loc loc);
void yio_node_free(ynode *n);
/* Append val (taken) to a sequence; key (copied) -> val (taken) to a map. */
void yio_seq_add(ynode *seq, ynode *val);
void yio_map_add(ynode *map, const char *key, cp_loc key_loc, ynode *val);
/* Index of key in map, or -1. */
long yio_map_find(const ynode *map, const char *key);
/* Parse text into a new tree; origin must be interned in the document that
 * will own the tree (set_mode: a --set value). */
ynode *yio_parse_text(const char *text, size_t len, const char *origin, int set_mode,
                      cp_err *err);

#endif
