/* sweep_hash: the hashes a sweep keys its points by (see sweep.h): input
 * files read and hashed once per process, the scenario hash and the
 * simulation key of a priced plan. */
#include "sim/sweep/sweep.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "base/datadir.h"
#include "base/grow.h"
#include "reports/report.h"

/* ---- file hashes ------------------------------------------------------------------- */

/* FNV-1a 64 from any state h over a file's n bytes is h * P^n + T[h & 255]
 * (mod 2^64, P the FNV prime): a byte's xor changes only the low 8 bits of
 * the state, by an amount those bits and the byte decide, and the low 8
 * bits of a product depend on the low 8 bits alone; so T[l] is FNV-1a from
 * state l, less l * P^n.  A file is read once and run from the 256 low
 * states together; every hash after is a multiply and a lookup, the value
 * the byte-wise hash gives.  Kept per path while its size, modification
 * time and inode stay. */
#define FNV_PRIME 0x100000001b3ULL /* FNV-1a 64 prime (sweep_fnv1a64) */

typedef struct file_digest {
    char *path;
    uint64_t path_hash;
    struct stat st;          /* size, mtime, device and inode when read */
    uint64_t pn;             /* FNV_PRIME^n */
    uint64_t t[256];
} file_digest;

static struct {
    file_digest *v;
    size_t n, cap;
    long reads;
} digests;

long sweep_file_reads(void)
{
    return digests.reads;
}

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
           a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_ino == b->st_ino &&
           a->st_dev == b->st_dev;
}

/* Read path into d (its 256 lanes); -1 when it cannot be read. */
static int digest_read(file_digest *d, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    uint64_t lane[256];
    for (int l = 0; l < 256; l++)
        lane[l] = (uint64_t)l;
    unsigned char buf[65536];
    size_t n;
    uint64_t total = 0;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        for (size_t i = 0; i < n; i++)
            for (int l = 0; l < 256; l++)
                lane[l] = (lane[l] ^ buf[i]) * FNV_PRIME;
        total += n;
    }
    fclose(f); /* a read error ends the bytes hashed, as it ended fread's */
    uint64_t pn = 1, b = FNV_PRIME;
    for (uint64_t e = total; e; e >>= 1, b *= b)
        if (e & 1)
            pn *= b;
    d->pn = pn;
    for (int l = 0; l < 256; l++)
        d->t[l] = lane[l] - (uint64_t)l * pn;
    digests.reads++;
    return 0;
}

uint64_t sweep_file_hash(uint64_t h, const char *path)
{
    struct stat st;
    uint64_t ph = sweep_fnv1a64(SWEEP_FNV_INIT, path, strlen(path));
    if (stat(path, &st) != 0)
        return sweep_fnv1a64(h, path, strlen(path));
    file_digest *d = NULL;
    for (size_t i = 0; i < digests.n && !d; i++)
        if (digests.v[i].path_hash == ph && strcmp(digests.v[i].path, path) == 0)
            d = &digests.v[i];
    if (!d) {
        digests.v = cp_grow(digests.v, &digests.cap, digests.n + 1, sizeof *digests.v);
        d = &digests.v[digests.n++];
        memset(d, 0, sizeof *d);
        d->path = strdup(path);
        if (!d->path)
            abort();
        d->path_hash = ph;
        d->st.st_size = -1; /* read below */
    }
    if (!same_file(&d->st, &st)) {
        if (digest_read(d, path) != 0) {
            d->st.st_size = -1;
            return sweep_fnv1a64(h, path, strlen(path));
        }
        d->st = st;
    }
    return h * d->pn + d->t[h & 255];
}

/* ---- scenario hash ----------------------------------------------------------------- */

/* The scenario's identity: the resolved scenario as canonical JSON (keys
 * sorted, numbers at 17 digits, the file-path entries left out, so the same
 * workload in two folders hashes alike), then the bytes of every file it
 * read (model config, platform file, quant description, calibration
 * tables), each followed by the hash before it, so the boundary between two
 * files counts.  resolved() gives the JSON, text_hash() and files_hash() the
 * two halves. */
static json_t *resolved(const scenario *s)
{
    json_t *j = wl_resolved(s);
    json_object_del(j, "workload");
    json_object_del(json_object_get(j, "model"), "config");
    json_object_del(json_object_get(j, "platform"), "source");
    json_object_del(json_object_get(j, "precision"), "quant_description");
    return j;
}

static int text_hash(const json_t *j, uint64_t *out, cp_err *err)
{
    char *text = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT | JSON_REAL_PRECISION(17));
    if (!text)
        return cp_fail(err, CP_EXIT_INTERNAL, "scenario hash: out of memory");
    *out = sweep_fnv1a64(SWEEP_FNV_INIT, text, strlen(text) + 1);
    free(text);
    return 0;
}

static uint64_t files_hash(const scenario *s, uint64_t h)
{
    enum { MAX_FILES = 64 }; /* config, platform, quant, ~15 calibration tables */
    char (*paths)[1024] = cp_xcalloc(MAX_FILES, sizeof *paths);
    int n = wl_files(s, paths, MAX_FILES);
    for (int i = 0; i < n; i++) {
        uint64_t before = h;
        h = sweep_file_hash(h, paths[i]);
        h = sweep_fnv1a64(h, &before, sizeof before);
    }
    free(paths);
    return h;
}

int sweep_scenario_hash(const scenario *s, uint64_t *out, cp_err *err)
{
    json_t *j = resolved(s);
    uint64_t h;
    int rc = text_hash(j, &h, err);
    json_decref(j);
    if (rc == 0)
        *out = files_hash(s, h);
    return rc;
}

int sweep_scenario_hashes(const scenario *s, sweep_hashes *out, cp_err *err)
{
    json_t *j = resolved(s);
    uint64_t h[3] = {0, 0, 0};
    int rc = text_hash(j, &h[0], err);
    json_object_del(json_object_get(j, "parallel"), "min_tokens");
    if (rc == 0)
        rc = text_hash(j, &h[1], err);
    json_object_del(j, "parallel");
    if (rc == 0)
        rc = text_hash(j, &h[2], err);
    json_decref(j);
    if (rc == 0) {
        out->whole = files_hash(s, h[0]);
        out->sans_min = files_hash(s, h[1]);
        out->sans_parallel = files_hash(s, h[2]);
    }
    return rc;
}

/* Hash a large block a 64-bit word at a time (plans are megabytes; the
 * byte-wise FNV-1a would cost a multiply per byte): per word a xor, a
 * multiply by 2^64 / golden ratio (Knuth's multiplicative hashing) and a
 * fold of the high half onto the low one; the tail byte-wise. */
static uint64_t hash_words(uint64_t h, const void *data, size_t len)
{
    const unsigned char *b = data;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, sizeof w);
        h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
        h ^= h >> 32;
    }
    return sweep_fnv1a64(h, b + i, len - i);
}

/* Every field of a plan_op, packed without the struct's padding (whose
 * bytes are undefined): a new field must be added here, which the size
 * check below (LP64) enforces. */
_Static_assert(sizeof(plan_op) == 360, "plan_op changed: hash its new fields in op_key");

static uint64_t bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static uint64_t shape_key(uint64_t h, const plan_shape *sh)
{
    int64_t v[1 + PLAN_MAX_DIMS] = {sh->nd};
    for (int i = 0; i < sh->nd && i < PLAN_MAX_DIMS; i++)
        v[1 + i] = sh->d[i];
    return hash_words(h, v, sizeof v);
}

static uint64_t op_key(uint64_t h, const plan_op *o)
{
    h = sweep_fnv1a64(h, o->name, strlen(o->name) + 1);
    uint64_t v[] = {
        (uint64_t)o->layer, (uint64_t)o->step, o->kind, o->stream, o->kclass, o->coll,
        o->group, o->alg, o->dtype, o->layout, o->mem_cat, o->eager, o->qscale, o->route,
        o->nkern, o->phase, o->impl, o->shared_launch, o->attn.unfolded, o->cost_table,
        o->eager_gap,
        bits(o->cost_dist), (uint64_t)o->attn.batch,
        (uint64_t)o->m, (uint64_t)o->k, (uint64_t)o->n, (uint64_t)o->g,
        (uint64_t)o->attn.q_len, (uint64_t)o->attn.kv_len, (uint64_t)o->attn.heads,
        (uint64_t)o->attn.kv_heads, (uint64_t)o->attn.d_qk, (uint64_t)o->attn.d_v,
        bits(o->attn.pairs), o->attn.causal, bits(o->flops), bits(o->bytes),
        bits(o->comm_bytes), bits(o->recv_bytes), (uint64_t)o->send_off,
        (uint64_t)o->recv_off, bits(o->mem_bytes), bits(o->arrival_s), (uint64_t)o->request,
        o->dep_first, o->ndeps, bits(o->cost_s), bits(o->launch_s)};
    h = hash_words(h, v, sizeof v);
    h = shape_key(h, &o->in);
    h = shape_key(h, &o->w);
    return shape_key(h, &o->out);
}

int sweep_sim_key(const scenario *s, const plan *p, uint64_t *out, cp_err *err)
{
    sweep_hashes hs;
    if (sweep_scenario_hashes(s, &hs, err) < 0)
        return -1;
    *out = sweep_plan_key(s, &hs, p);
    return 0;
}

uint64_t sweep_plan_key(const scenario *s, const sweep_hashes *hs, const plan *p)
{
    /* a serving run's steps depend on every request and on the scheduler:
     * its plan is only the first step's, so the whole scenario is the key */
    if (s->serving)
        return hs->whole;
    uint64_t h = hs->sans_parallel;
    int lay[5] = {p->lay.tp, p->lay.sp, p->lay.ep, p->lay.dp, p->lay.devices_per_node};
    h = hash_words(h, lay, sizeof lay);
    int counts[4] = {p->nranks, p->nprogs, p->nsteps, p->nrequests};
    h = hash_words(h, counts, sizeof counts);
    h = hash_words(h, p->prog_of_rank, (size_t)p->nranks * sizeof *p->prog_of_rank);
    for (int g = 0; g < p->nprogs; g++) {
        const plan_prog *pg = &p->progs[g];
        uint32_t sizes[4] = {pg->nops, pg->ndeps, pg->nregions, 0};
        double pool[2] = {pg->kv_pool, pg->kv_need};
        h = hash_words(h, pool, sizeof pool);
        h = hash_words(h, sizes, sizeof sizes);
        for (uint32_t i = 0; i < pg->nops; i++)
            h = op_key(h, &pg->ops[i]);
        h = hash_words(h, pg->deps, pg->ndeps * sizeof *pg->deps);
        h = hash_words(h, pg->regions, pg->nregions * sizeof *pg->regions);
    }
    return h;
}
