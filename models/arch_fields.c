/* arch_fields: reading a config's fields, recording which were read and
 * warned, and the warnings (arch_int.h). */
#include "models/arch_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cp_loc arch_at(const cfg *c)
{
    return (cp_loc){c->path, 0, 0};
}

/* Record the field named qname as read (warned = 0) or warned (1). */
void arch_note(const cfg *c, const char *qname, int warned)
{
    seen *s = c->seen;
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->name[i], qname) == 0) {
            s->warned[i] |= (uint8_t)warned;
            return;
        }
    if (s->n == SEEN_MAX)
        return; /* more fields than any config: the rest count as not read */
    snprintf(s->name[s->n], sizeof s->name[0], "%s", qname);
    s->warned[s->n++] = (uint8_t)warned;
}

/* The value of `key` (nested text config first, then top level) and, in
 * qname, the dotted name it was found under; NULL when absent or null.  A
 * value found is recorded as read. */
const json_t *arch_lookup(const cfg *c, const char *key, char *qname, size_t n)
{
    const json_t *v = c->text ? json_object_get(c->text, key) : NULL;
    if (v && !json_is_null(v)) {
        snprintf(qname, n, "%s.%s", c->text_name, key);
        arch_note(c, qname, 0);
        return v;
    }
    snprintf(qname, n, "%s", key);
    v = json_object_get(c->top, key);
    if (v && !json_is_null(v))
        arch_note(c, qname, 0);
    return json_is_null(v) ? NULL : v;
}

/* Compact JSON text of v for messages, cut to fit buf. */
char *arch_show(const json_t *v, char *buf, size_t n)
{
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    snprintf(buf, n, "%s", s ? s : "?");
    free(s);
    return buf;
}

/* Member `key` of the object o whose dotted name is oname, with its own
 * dotted name in qname; NULL when absent or null. */
const json_t *arch_member(const json_t *o, const char *oname, const char *key, char *qname,
                          size_t n)
{
    snprintf(qname, n, "%s.%s", oname, key);
    const json_t *v = json_object_get(o, key);
    return json_is_null(v) ? NULL : v;
}

/* member of the config's object named oname, recorded as read when found. */
const json_t *arch_field(const cfg *c, const json_t *o, const char *oname, const char *key,
                         char *qname, size_t n)
{
    const json_t *v = arch_member(o, oname, key, qname, n);
    if (v)
        arch_note(c, qname, 0);
    return v;
}

/* The present value v, named qname, as an integer in [lo, hi]; 0 or -1. */
int arch_want_int(const cfg *c, const json_t *v, const char *qname, int64_t lo, int64_t hi,
                  int64_t *out)
{
    char got[64];
    if (json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi) {
        *out = json_integer_value(v);
        return 0;
    }
    return cp_fail_at(c->err, arch_at(c),
                      "field \"%s\" must be an integer in [%" PRId64 ", %" PRId64 "], got %s",
                      qname, lo, hi, arch_show(v, got, sizeof got));
}

/* The present value v as true/false (or 0/1 as in hand-written configs). */
int arch_want_bool(const cfg *c, const json_t *v, const char *qname, int *out)
{
    char got[64];
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return 0;
    }
    if (json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1)) {
        *out = (int)json_integer_value(v);
        return 0;
    }
    return cp_fail_at(c->err, arch_at(c), "field \"%s\" must be true or false, got %s", qname,
                      arch_show(v, got, sizeof got));
}

/* The present value v as a string shorter than n into buf; `what` says what
 * was expected. */
int arch_want_str(const cfg *c, const json_t *v, const char *qname, char *buf, size_t n,
                  const char *what)
{
    char got[64];
    if (json_is_string(v) && json_string_length(v) < n) {
        snprintf(buf, n, "%s", json_string_value(v));
        return 0;
    }
    return cp_fail_at(c->err, arch_at(c), "field \"%s\" must be %s, got %s", qname, what,
                      arch_show(v, got, sizeof got));
}

/* --- warnings ------------------------------------------------------------ */

const char *arch_base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

void arch_warn(arch *a, const char *fmt, ...)
{
    if (a->nwarn == ARCH_MAX_WARN) {
        snprintf(a->warn[ARCH_MAX_WARN - 1], sizeof a->warn[0],
                 "%.120s: further warnings omitted (more than %d)", arch_base_name(a->path),
                 ARCH_MAX_WARN - 1);
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->warn[a->nwarn++], sizeof a->warn[0], fmt, ap);
    va_end(ap);
}

/* A field, shown as `value`, that changes the `work` of the simulated
 * forward pass in a way that is not modelled; `what` says what it does,
 * `how` what is simulated instead. */
void arch_warn_field(const cfg *c, arch *a, const char *qname, const char *value,
                     const char *what, const char *work, const char *how)
{
    arch_note(c, qname, 1);
    arch_warn(a, "%s: field \"%s\" = %s (%s) changes the %s work and is not modelled: %s",
              arch_base_name(c->path), qname, value, what, work, how);
}
