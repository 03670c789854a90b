/* yamlio_edit: --set overrides, merge and dump of YAML trees (yamlio.h). */
#include "base/yamlio_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- --set and merge ---------------------------------------------------- */

/* Whether seg is a list index (decimal digits); *idx gets its value,
 * saturated at SIZE_MAX. */
static int seg_index(const char *seg, size_t *idx)
{
    if (!*seg)
        return 0;
    for (const char *p = seg; *p; p++)
        if (!isdigit((unsigned char)*p))
            return 0;
    errno = 0;
    unsigned long long v = strtoull(seg, NULL, 10);
    *idx = errno == ERANGE || v > SIZE_MAX ? SIZE_MAX : (size_t)v;
    return 1;
}

/* A scalar (or null) where a map is needed becomes {name: scalar}; a null
 * becomes an empty map.  In place, so the parent's pointer stays valid. */
static void promote_to_map(ynode *n)
{
    ynode *scalar = NULL;
    if (n->kind == YN_SCALAR) {
        scalar = yio_node_new(YN_SCALAR, n->loc);
        scalar->str = n->str;
        scalar->quoted = n->quoted;
    } else {
        free(n->str);
    }
    n->str = NULL;
    n->quoted = 0;
    n->kind = YN_MAP;
    if (scalar)
        yio_map_add(n, "name", n->loc, scalar);
}

/* Walk segs[0..nseg) from root, creating what is missing, and put val (taken)
 * at the end.  Errors happen before anything below the failing level is
 * changed. */
static int set_path(ynode *root, char **segs, size_t nseg, ynode *val, cp_loc at, cp_err *err)
{
    char walked[512] = "the top level";
    ynode *cur = root;
    for (size_t i = 0;; i++) {
        size_t idx = 0;
        int is_idx = seg_index(segs[i], &idx);
        if (cur->kind == YN_SCALAR || cur->kind == YN_NULL) {
            if (is_idx)
                return cp_fail_at(err, at, "%s is a single value; it has no item %s", walked,
                                  segs[i]);
            promote_to_map(cur);
        }
        ynode **slot = NULL;
        if (cur->kind == YN_MAP) {
            if (is_idx)
                return cp_fail_at(err, at, "%s is a mapping, not a list; it has no index %s",
                                  walked, segs[i]);
            long k = yio_map_find(cur, segs[i]);
            slot = k >= 0 ? &cur->kids[k] : NULL;
        } else {
            if (!is_idx)
                return cp_fail_at(err, at, "%s is a list; expected an index, got \"%s\"",
                                  walked, segs[i]);
            if (idx > cur->n)
                return cp_fail_at(err, at, "index %s is beyond the end of %s (length %zu; "
                                  "index %zu appends)", segs[i], walked, cur->n, cur->n);
            slot = idx < cur->n ? &cur->kids[idx] : NULL;
        }
        if (i + 1 == nseg) {
            if (slot) {
                yio_node_free(*slot);
                *slot = val;
            } else if (cur->kind == YN_MAP) {
                yio_map_add(cur, segs[i], at, val);
            } else {
                yio_seq_add(cur, val);
            }
            return 0;
        }
        if (i == 0)
            snprintf(walked, sizeof walked, "%s", segs[0]);
        else
            snprintf(walked + strlen(walked), sizeof walked - strlen(walked), ".%s", segs[i]);
        if (!slot) {
            size_t next;
            int next_is_idx = seg_index(segs[i + 1], &next);
            if (next_is_idx && next != 0)
                return cp_fail_at(err, at, "index %s is beyond the end of %s (a new list)",
                                  segs[i + 1], walked);
            ynode *child = yio_node_new(next_is_idx ? YN_SEQ : YN_MAP, at);
            if (cur->kind == YN_MAP)
                yio_map_add(cur, segs[i], at, child);
            else
                yio_seq_add(cur, child);
            cur = child;
        } else {
            cur = *slot;
        }
    }
}

/* The path is split at '.', every part checked non-empty, and the value
 * parsed, before the tree is touched; set_path then edits it.  The origin
 * "--set <assignment>" is interned so that messages about any node made
 * here can name the option. */
int yio_set(ydoc *doc, const char *assignment, cp_err *err)
{
    char origin[600];
    snprintf(origin, sizeof origin, "--set %s", assignment);
    cp_loc at = { yio_doc_origin(doc, origin), 0, 0 };
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment)
        return cp_fail_at(err, at, "expected key.path=value");
    if (!doc->root || doc->root->kind != YN_MAP)
        return cp_fail_at(err, at, "the document is not a mapping");

    size_t plen = (size_t)(eq - assignment);
    char *path = yio_xrealloc(NULL, plen + 1);
    memcpy(path, assignment, plen);
    path[plen] = '\0';
    size_t nseg = 1;
    for (size_t i = 0; i < plen; i++)
        nseg += path[i] == '.';
    char **segs = yio_xrealloc(NULL, nseg * sizeof *segs);
    segs[0] = path;
    for (size_t i = 0, k = 1; i < plen; i++) {
        if (path[i] == '.') {
            path[i] = '\0';
            segs[k++] = path + i + 1;
        }
    }
    int rc = 0;
    for (size_t k = 0; k < nseg && rc == 0; k++)
        if (!*segs[k])
            rc = cp_fail_at(err, at, "empty key in the path (part %zu)", k + 1);
    if (rc == 0) {
        ynode *val = yio_parse_text(eq + 1, strlen(eq + 1), at.origin, 1, err);
        rc = val ? set_path(doc->root, segs, nseg, val, at, err) : -1;
        if (rc < 0)
            yio_node_free(val);
    }
    free(segs);
    free(path);
    return rc;
}

/* A replaced entry takes src's key location as well, so that a later
 * message about it points where the winning value was written. */
int yio_merge(ydoc *dst_doc, ynode *dst, const ynode *src, cp_err *err)
{
    if (yio_want_map(dst, "", err) < 0 || yio_want_map(src, "", err) < 0)
        return -1;
    for (size_t i = 0; i < src->n; i++) {
        const ynode *sv = src->kids[i];
        long k = yio_map_find(dst, src->keys[i]);
        if (k < 0) {
            yio_map_add(dst, src->keys[i], yio_loc_in(dst_doc, src->key_locs[i]), yio_clone(dst_doc, sv));
        } else if (dst->kids[k]->kind == YN_MAP && sv->kind == YN_MAP) {
            if (yio_merge(dst_doc, dst->kids[k], sv, err) < 0)
                return -1;
        } else {
            yio_node_free(dst->kids[k]);
            dst->kids[k] = yio_clone(dst_doc, sv);
            dst->key_locs[k] = yio_loc_in(dst_doc, src->key_locs[i]);
        }
    }
    return 0;
}

/* ---- dump --------------------------------------------------------------- */

/* Whether s must be quoted to read back as the same string. */
static int needs_quotes(const char *s)
{
    if (!*s || strchr("?:,[]{}#&*!|>'\"%@` ", s[0]) ||
        (s[0] == '-' && (s[1] == ' ' || s[1] == '\0')))
        return 1;
    size_t n = strlen(s);
    if (s[n - 1] == ' ' || s[n - 1] == ':' || strstr(s, ": ") || strstr(s, " #"))
        return 1;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return 1;
    return 0;
}

static void put_scalar(const char *s, int quoted, FILE *out)
{
    if (!quoted && !needs_quotes(s)) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", out);
        else if (*p == '\t')
            fputs("\\t", out);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(out, "\\x%02x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

static int is_block(const ynode *n)
{
    return (n->kind == YN_MAP || n->kind == YN_SEQ) && n->n > 0;
}

/* A scalar, null or empty container on the rest of the current line. */
static void put_inline(const ynode *n, FILE *out)
{
    if (n->kind == YN_MAP)
        fputs("{}", out);
    else if (n->kind == YN_SEQ)
        fputs("[]", out);
    else if (n->kind == YN_NULL)
        fputs("null", out);
    else
        put_scalar(n->str, n->quoted, out);
    fputc('\n', out);
}

/* A non-empty map or list, one item per line at `indent`; the first line's
 * indentation is already written when first_done (a "- " list item). */
static void put_block(const ynode *n, FILE *out, int indent, int first_done)
{
    for (size_t i = 0; i < n->n; i++) {
        const ynode *v = n->kids[i];
        if (i > 0 || !first_done)
            fprintf(out, "%*s", indent, "");
        if (n->kind == YN_MAP) {
            put_scalar(n->keys[i], 0, out);
            fputc(':', out);
            if (is_block(v)) {
                fputc('\n', out);
                put_block(v, out, indent + 2, 0);
                continue;
            }
            fputc(' ', out);
        } else {
            fputs("- ", out);
            if (is_block(v)) {
                put_block(v, out, indent + 2, 1);
                continue;
            }
        }
        put_inline(v, out);
    }
}

/* Output reads back as the same tree: quoted scalars stay quoted, and plain
 * ones are quoted when YAML would read them differently. */
void yio_dump(const ynode *n, FILE *out, int indent)
{
    if (!n)
        return;
    if (is_block(n)) {
        put_block(n, out, indent, 0);
    } else {
        fprintf(out, "%*s", indent, "");
        put_inline(n, out);
    }
}
