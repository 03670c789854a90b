/* kset: kernel sets (see kset.h). */
#include "models/kset.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/datadir.h"
#include "base/yamlio.h"

const char *const ks_bundled[] = {"pytorch", "vllm", "sglang", "meta", NULL};

const char *const ks_graph_names[] = {"eager", "full", "decode_only", "piecewise",
                                      "full_and_piecewise", NULL};

static const char *const slot_keys[KS_COUNT] = {
    [KS_ATTENTION] = "attention",     [KS_LSE_MERGE] = "lse_merge",
    [KS_NORM] = "norm",               [KS_ROPE] = "rope",
    [KS_ACTIVATION] = "activation",   [KS_MOE_ROUTING] = "moe_routing",
    [KS_ALLREDUCE] = "allreduce",     [KS_GEMM_FP8] = "gemm_fp8",
};

/* The names each slot accepts, the first being the pytorch set's. */
static const char *const attention_names[] = {"fa2", "cudnn", "fa3", NULL};
static const char *const torch_fused[] = {"torch", "fused", NULL};
static const char *const norm_names[] = {"torch", "fused_add", NULL};
static const char *const rope_names[] = {"torch", "fused", "fused_kv_write", NULL};
static const char *const allreduce_names[] = {"nccl", "custom", NULL};
static const char *const fp8_names[] = {"scaled_mm", NULL};
static const char *const *const slot_names[KS_COUNT] = {
    [KS_ATTENTION] = attention_names, [KS_LSE_MERGE] = torch_fused, [KS_NORM] = norm_names,
    [KS_ROPE] = rope_names,           [KS_ACTIVATION] = torch_fused,
    [KS_MOE_ROUTING] = torch_fused,   [KS_ALLREDUCE] = allreduce_names,
    [KS_GEMM_FP8] = fp8_names,
};

const char *const *ks_slot_names(ks_slot s)
{
    return (unsigned)s < KS_COUNT ? slot_names[s] : NULL;
}

const char *ks_slot_key(ks_slot s)
{
    return (unsigned)s < KS_COUNT ? slot_keys[s] : "?";
}

const char *ks_graph_name(ks_graph g)
{
    return (unsigned)g < KG_COUNT ? ks_graph_names[g] : "?";
}

static plan_impl impl_of(const char *name)
{
    for (int i = 0; i < IMPL_COUNT; i++)
        if (strcmp(plan_impl_names[i], name) == 0)
            return (plan_impl)i;
    return IMPL_TORCH; /* every slot name is an impl name (ks_load checks) */
}

void ks_default(kset *k)
{
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "pytorch");
    for (int s = 0; s < KS_COUNT; s++)
        k->impl[s] = (uint8_t)impl_of(slot_names[s][0]);
    k->graph = -1;
    k->eager_locals = 1; /* PyTorch modules run eagerly from Python */
    k->ncapture = 0; /* a loop of one's own captures the batches it runs */
}

int ks_padded_batch(const kset *k, int b, int *captured)
{
    *captured = 1;
    if (k->ncapture == 0)
        return b;
    for (int i = 0; i < k->ncapture; i++)
        if (k->capture[i] >= b) {
            *captured = 1;
            return k->capture[i];
        }
    *captured = 0;
    return b;
}

static const char *const file_keys[] = {"name", "attention", "lse_merge", "norm", "rope",
                                        "activation", "moe_routing", "allreduce", "gemm_fp8",
                                        "varlen", "eager_locals", "graph", "capture_sizes",
                                        NULL};

static int read_sizes(const ynode *seq, kset *k, cp_err *err)
{
    if (yio_want_seq(seq, "capture_sizes", err) < 0)
        return -1;
    if (seq->n == 0 || seq->n > KS_MAX_CAPTURE)
        return cp_fail_at(err, seq->loc, "capture_sizes: 1 to %d batch sizes", KS_MAX_CAPTURE);
    k->ncapture = 0;
    for (size_t i = 0; i < seq->n; i++) {
        long long v;
        char what[48];
        snprintf(what, sizeof what, "capture_sizes.%zu", i);
        /* 65536: engine.max_num_seqs's bound (workload.c WL_MAX_SEQS) */
        if (yio_int(seq->kids[i], what, 1, 65536, &v, err) < 0)
            return -1;
        if (i > 0 && v <= k->capture[i - 1])
            return cp_fail_at(err, seq->kids[i]->loc, "%s: the sizes ascend (%lld after %d)",
                              what, v, k->capture[i - 1]);
        k->capture[k->ncapture++] = (int)v;
    }
    return 0;
}

static int read_set(ydoc *doc, kset *k, cp_err *err)
{
    const ynode *root = yio_root(doc);
    if (yio_want_map(root, "a kernel set", err) < 0)
        return -1;
    const char *name = NULL;
    if (yio_opt_str(root, "", "name", &name, err) < 0)
        return -1;
    if (!name)
        return cp_fail_at(err, root->loc, "a kernel set needs a name");
    snprintf(k->name, sizeof k->name, "%s", name);
    for (int s = 0; s < KS_COUNT; s++) {
        int idx = -1;
        if (yio_opt_enum(root, "", slot_keys[s], slot_names[s], &idx, err) < 0)
            return -1;
        if (idx >= 0)
            k->impl[s] = (uint8_t)impl_of(slot_names[s][idx]);
    }
    int graph = -1;
    if (yio_opt_bool(root, "", "varlen", &k->varlen, err) < 0 ||
        yio_opt_bool(root, "", "eager_locals", &k->eager_locals, err) < 0 ||
        yio_opt_enum(root, "", "graph", ks_graph_names, &graph, err) < 0)
        return -1;
    k->graph = graph;
    const ynode *sz = yio_key(root, "capture_sizes");
    if (sz && read_sizes(sz, k, err) < 0)
        return -1;
    return yio_no_unknown(root, "", file_keys, err);
}

int ks_load(const char *spec, const char *base_dir, kset *out, cp_err *err)
{
    ks_default(out);
    char path[1024];
    if (!strchr(spec, '/') && !strstr(spec, ".yaml")) {
        int known = 0;
        for (int i = 0; ks_bundled[i]; i++)
            known |= strcmp(ks_bundled[i], spec) == 0;
        if (!known) {
            char hint[96];
            return cp_fail(err, CP_EXIT_INPUT, "no bundled kernel set \"%s\" "
                           "(bundled: pytorch, vllm, sglang, meta; or the path of a set file)%s",
                           spec, cp_suggest(hint, sizeof hint, spec, ks_bundled));
        }
        char rel[128];
        snprintf(rel, sizeof rel, "models/kernels/%s.yaml", spec);
        cp_data_path(path, sizeof path, rel);
    } else {
        cp_resolve(path, sizeof path, base_dir, spec);
    }
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return cp_fail(err, CP_EXIT_INPUT, "%s is a folder, not a kernel set "
                       "file", path);
    ydoc *doc = yio_parse_file(path, err);
    if (!doc)
        return -1;
    int rc = read_set(doc, out, err);
    yio_free(doc);
    if (rc == 0)
        snprintf(out->path, sizeof out->path, "%s", path);
    return rc;
}
