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

/* The key of d that types tensor `name`: its exact entry, else the first
 * pattern (longest) it matches; NULL when none. */
static const char *deciding_key(const quant_desc *d, const char *name)
{
    if (json_object_get(d->map, name))
        return name;
    for (int i = 0; i < d->npattern; i++)
        if (fnmatch(d->pattern[i], name, 0) == 0)
            return d->pattern[i];
    return NULL;
}

int quant_desc_type(const quant_desc *d, const char *name)
{
    const char *k = deciding_key(d, name);
    const char *v = k ? json_string_value(json_object_get(d->map, k)) : NULL;
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


/* Keys that decide a tensor's type as written (json_true) or only of
 * tensors cpsim keeps in floating point whatever they say (json_false). */
typedef struct use_ctx {
    const quant_desc *d;
    json_t *used;
} use_ctx;

static void note_use(void *ctx, const mem_tensor *t)
{
    use_ctx *u = ctx;
    const char *k = deciding_key(u->d, t->name);
    if (!k)
        return;
    int as_written = (t->linear && !t->keep_float) ||
                     !strcmp(json_string_value(json_object_get(u->d->map, k)), "FLOAT");
    if (as_written || !json_object_get(u->used, k))
        json_object_set_new(u->used, k, json_boolean(as_written));
}

/* The key whose use decides key's: a quantized linear's companion tensors
 * (msModelSlim writes <linear>.weight_scale, .weight_offset and, for W8A8,
 * .input_scale, .input_offset, .quant_bias, .deq_scale, models-hardware.md
 * 2.3) are read when the key typing <linear>.weight is; any other key
 * decides for itself. */
static const char *companion_base(const quant_desc *d, const char *key)
{
    static const char *const suffix[] = {".weight_scale", ".weight_offset", ".input_scale",
                                         ".input_offset", ".quant_bias", ".deq_scale"};
    size_t len = strlen(key);
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        size_t sl = strlen(suffix[i]);
        char base[512];
        if (len <= sl || strcmp(key + len - sl, suffix[i]) || len - sl + 8 > sizeof base)
            continue;
        snprintf(base, sizeof base, "%.*s.weight", (int)(len - sl), key);
        const char *k = deciding_key(d, base);
        return k ? k : key;
    }
    return key;
}

/* key names a tensor of an MTP layer (model.layers.N. with N past the
 * decoder layers, within num_nextn_predict_layers): checkpoints list them,
 * engines load them for speculative decoding only, which cpsim does not
 * run. */
static int mtp_entry(const arch *a, const char *key)
{
    static const char prefix[] = "model.layers.";
    char *end;
    if (strncmp(key, prefix, sizeof prefix - 1))
        return 0;
    long long l = strtoll(key + sizeof prefix - 1, &end, 10);
    return *end == '.' && l >= a->layers && l < a->layers + a->mtp_layers;
}

int quant_desc_unread(const quant_desc *d, const arch *a, char *buf, size_t n)
{
    use_ctx u = {d, json_object()};
    const char *key;
    json_t *v;
    int count = 0;
    size_t off = 0;
    if (!u.used)
        abort(); /* a small object: out of memory before any work */
    buf[0] = 0;
    mem_each_tensor(a, MEM_ALL_LAYERS, 1, note_use, &u);
    json_object_foreach(d->map, key, v) {
        const json_t *use = json_object_get(u.used, companion_base(d, key));
        if (key[0] == '_' || !strcmp(key, "model_quant_type") || json_is_true(use) ||
            mtp_entry(a, key) ||
            !strcmp(json_string_value(v) ? json_string_value(v) : "", "FLOAT"))
            continue;
        count++;
        if (off + strlen(key) + 32 < n)
            off += (size_t)snprintf(buf + off, n - off, "%s\"%s\"%s", off ? ", " : "", key,
                                    use ? " (kept FLOAT)" : "");
    }
    json_decref(u.used);
    return count;
}
