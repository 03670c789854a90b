/* quant_desc: a quant_model_description.json (tensor name -> quant type)
 * read and checked against the model (see quant.h). */
#include "models/quant.h"

#include <fnmatch.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct quant_desc {
    json_t *map;          /* name -> type string */
    const char **pattern; /* the keys holding a '*' (cpsim's compact form) */
    int npattern;
    char path[1024];
};

/* The patterns of d's map, longest first (the most specific wins), then
 * in byte order: the order a lookup tries them in, whatever the file's. */
static int by_specificity(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    size_t lx = strlen(x), ly = strlen(y);
    return lx != ly ? (lx < ly) - (lx > ly) : strcmp(x, y);
}

static int collect_patterns(quant_desc *d)
{
    const char *key;
    json_t *v;
    size_t n = 0;
    json_object_foreach(d->map, key, v) {
        n += strchr(key, '*') != NULL;
    }
    if (n == 0)
        return 0;
    d->pattern = calloc(n, sizeof *d->pattern);
    if (!d->pattern)
        return -1;
    json_object_foreach(d->map, key, v) {
        if (strchr(key, '*'))
            d->pattern[d->npattern++] = key;
    }
    qsort(d->pattern, (size_t)d->npattern, sizeof *d->pattern, by_specificity);
    return 0;
}

quant_desc *quant_desc_load(const char *path, cp_err *err)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        cp_fail(err, CP_EXIT_INPUT, "%s: a folder; quant_description names the "
                "quant_model_description.json file inside it", path);
        return NULL;
    }
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j) {
        if (je.line > 0)
            cp_fail(err, CP_EXIT_INPUT, "%s:%d:%d: %s", path, je.line, je.column, je.text);
        else
            cp_fail(err, CP_EXIT_INPUT, "%s: %s", path, je.text);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        cp_fail(err, CP_EXIT_INPUT,
                "%s: a quant_model_description.json is a JSON object (tensor name -> quant type)",
                path);
        return NULL;
    }
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v) {
        if (!json_is_string(v)) {
            json_decref(j);
            cp_fail(err, CP_EXIT_INPUT, "%s: \"%s\": expected a quant type string", path, key);
            return NULL;
        }
    }
    quant_desc *d = calloc(1, sizeof *d);
    if (!d) {
        json_decref(j);
        cp_fail(err, CP_EXIT_INTERNAL, "out of memory reading %s", path);
        return NULL;
    }
    d->map = j;
    snprintf(d->path, sizeof d->path, "%s", path);
    if (collect_patterns(d) < 0) {
        quant_desc_free(d);
        cp_fail(err, CP_EXIT_INTERNAL, "out of memory reading %s", path);
        return NULL;
    }
    return d;
}

void quant_desc_free(quant_desc *d)
{
    if (!d)
        return;
    json_decref(d->map);
    free(d->pattern);
    free(d);
}

const char *quant_desc_path(const quant_desc *d)
{
    return d->path;
}

int quant_desc_type(const quant_desc *d, const char *name)
{
    const char *v = json_string_value(json_object_get(d->map, name));
    for (int i = 0; !v && i < d->npattern; i++)
        if (fnmatch(d->pattern[i], name, 0) == 0)
            v = json_string_value(json_object_get(d->map, d->pattern[i]));
    if (!v)
        return QT_COUNT;
    for (int t = QT_FLOAT; t <= QT_W8A8_DYNAMIC; t++)
        if (strcmp(v, quant_type_name((quant_type)t)) == 0)
            return t;
    return -1;
}

typedef struct check_ctx {
    const quant_desc *d;
    const arch *a;
    cp_err *err;
    int rc;
} check_ctx;

static void check_tensor(void *ctx, const mem_tensor *t)
{
    check_ctx *c = ctx;
    if (c->rc < 0 || !t->linear)
        return;
    int ty = quant_desc_type(c->d, t->name);
    if (ty == QT_COUNT)
        c->rc = cp_fail(c->err, CP_EXIT_INPUT,
                        "%s: no entry for %s (is it the description of %s?)", c->d->path,
                        t->name, c->a->name);
    else if (ty < 0)
        c->rc = cp_fail(c->err, CP_EXIT_INPUT,
                        "%s: %s: quant type \"%s\" is not modelled (cpsim knows FLOAT, W8A8, "
                        "W8A8_DYNAMIC)", c->d->path, t->name,
                        json_string_value(json_object_get(c->d->map, t->name)));
    else if (ty != QT_FLOAT && t->proj == MP_KV_B && c->a->has_dsa)
        c->rc = cp_fail(c->err, CP_EXIT_INPUT,
                        "%s: %s is %s, but the sparse-attention path needs kv_b_proj "
                        "unquantized (vllm-ascend sfa_v1.py asserts it)", c->d->path, t->name,
                        quant_type_name((quant_type)ty));
}

int quant_desc_check(const quant_desc *d, const arch *a, cp_err *err)
{
    check_ctx c = {d, a, err, 0};
    mem_each_tensor(a, MEM_ALL_LAYERS, 1, check_tensor, &c);
    return c.rc;
}

