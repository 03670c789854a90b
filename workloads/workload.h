/* workload: a scenario to simulate, loaded from YAML with --set overrides,
 * resolved against its model config and platform, and validated.
 *
 * Top-level keys (README "Workload format" documents each):
 *   model       bundled name or path to a config.json
 *   platform    preset name, path, or a map {name, nodes, devices_per_node,
 *               ...preset keys to override}
 *   precision   scalar dtype or {weights, mlp_weights, activations, kv_cache,
 *                activation_quant, quant_description}
 *   parallel    {tp, sp, ep, dp, kv_storage, exchange, min_tokens, split,
 *                all_gather_tensors, all_gather_merge, ring_overlap, embed, ring_select,
 *                sequence_parallel, dsa_cp, dsa_cp_layout, layer_sharding}
 *   engine      {graph: eager|full|captured|decode_only|piecewise|full_and_piecewise,
 *                kernels, chunked_prefill, max_num_batched_tokens, max_num_seqs, router,
 *                memory}
 *   requests    list of sources: one request {prompt_tokens, arrival_s,
 *               decode_tokens, cached_tokens, name}, periodic {every_s,
 *               count}, Poisson {rate_per_s, count, seed}, closed loop
 *               {streams, think_s}, a trace file {trace}
 *   simulation  {network_model: cm02|l07, fold_layers, replay, moe_routing,
 *                duration_s, decode_reuse}
 */
#ifndef CP_WORKLOAD_H
#define CP_WORKLOAD_H

#include <stdio.h>

#include "models/scenario.h"

/* Load `path` (NULL: the bundled workloads/default.yaml; "-": standard input,
 * named "<stdin>" in messages and s->path, its relative paths taken from the
 * current directory), apply the --set
 * assignments in order, resolve model and platform (`platform_override`, the
 * --platform option, replaces the platform key when not NULL), and validate
 * everything that can be checked before simulating.  On error returns -1 with
 * err naming file:line:col or the offending key. */
int wl_load(const char *path, const char *const *sets, int nsets,
            const char *platform_override, scenario *out, cp_err *err);
void wl_free(scenario *s);

/* Every warning of s on `out`, one "cpsim: warning: ..." line each. */
void wl_print_warnings(const scenario *s, FILE *out);

/* Print the workload as written and the resolved scenario as YAML
 * (cpsim validate). */
void wl_dump(const scenario *s, FILE *out);

/* The resolved scenario as JSON (what cpsim validate prints under
 * resolved:): model structure, platform, precision, every section with its
 * defaults filled in, requests.  Caller decrefs. */
struct json_t;
struct json_t *wl_resolved(const scenario *s);

/* The files the scenario read (model config, platform file, quant
 * description, the calibration profile's files), at most cap of them into
 * paths; returns how many. */
int wl_files(const scenario *s, char (*paths)[1024], int cap);


const char *wl_exchange_name(wl_exchange e);
const char *wl_ring_select_name(wl_ring_select r);
/* precision.weights as written: "bf16", "fp8" (per-tensor scales),
 * "fp8_rowwise", "fp8_blockwise", "int8", ... */
const char *wl_weights_name(const scenario *s);
/* precision.mlp_weights as resolved, in the same names. */
const char *wl_mlp_weights_name(const scenario *s);
const char *wl_kv_storage_name(wl_kv_storage k);
const char *wl_split_name(wl_split s);
const char *wl_dsa_layout_name(wl_dsa_layout l);
/* engine.graph as resolved: eager, captured (vLLM's FULL), decode_only,
 * piecewise, full_and_piecewise. */
const char *wl_graph_name(wl_graph g);

/* The names a dotted workload key of enumerated values accepts
 * ("parallel.exchange" -> auto, ulysses, ...; precision.weights, the
 * engine and simulation enums), NULL-terminated; NULL for any other key.
 * A sweep's `where` checks its string literals against them. */
const char *const *wl_enum_names(const char *key);

#endif
