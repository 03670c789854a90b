/* platform: a cluster of accelerators described by a YAML preset (or a raw
 * SimGrid XML file), and the SimGrid platform generated from it.
 *
 * Units everywhere: bytes, seconds, flop/s, bytes/s (per direction for links).
 * Every number in a preset carries its source in a comment
 * (shared design notes: models-hardware.md).
 *
 * Topology model (see simgrid-notes.md section 2):
 *   - a node holds devices_per_node devices;
 *   - intra-node fabric: "switch" (NVSwitch/UB star: each device has one
 *     SPLITDUPLEX port of `bandwidth` per direction to a non-blocking switch)
 *     or "mesh" (HCCS full mesh: a SPLITDUPLEX link per device pair, each
 *     of bandwidth / (devices_per_node - 1));
 *   - optional package tier: devices grouped by `package.devices` (e.g. the
 *     two dies of an Ascend 910C) talk over a direct link of their own (SIO);
 *   - inter-node: one NIC per device (SPLITDUPLEX, nic_bandwidth) to the
 *     node's gateway, gateways joined by a non-blocking spine (FATPIPE).
 * Every route has non-zero latency; SimGrid runs CM02 with crosstraffic off
 * and TCP-gamma 0, which makes ring and pairwise times exact.
 */
#ifndef CP_PLATFORM_H
#define CP_PLATFORM_H

#include <stdio.h>
#include "base/dtype.h"
#include "base/diag.h"
#include "base/yamlio.h"

typedef enum { FAB_SWITCH, FAB_MESH } plat_fabric_kind;

typedef struct plat_link {
    double bandwidth;     /* bytes/s per direction (line rate) */
    double latency;       /* seconds one transfer pays to cross the tier (>0) */
    double efficiency;    /* achieved / line rate for large transfers, (0,1]:
                             the generated links run at bandwidth * efficiency */
} plat_link;

typedef struct platform {
    char name[64];
    char source[1024];    /* preset file (or XML file) read */
    int nodes;
    int devices_per_node;

    /* accelerator */
    char device[64];               /* model name, e.g. "H100 SXM5" */
    double peak_flops[DT_COUNT];   /* dense tensor-core flop/s per dtype, 0 = unsupported */
    double vector_flops;           /* non-matrix (vector unit) flop/s, for elementwise */
    double hbm_bytes;              /* capacity */
    double reserved_bytes;         /* device memory an engine holds outside
                                      tensors: context, communicator buffers */
    double workspace_bytes;        /* kernel workspaces, captured-graph pool */
    double hbm_bw;                 /* bytes/s */
    double launch_eager;           /* host cost per kernel launch, eager (s) */
    double launch_graph;           /* per-kernel cost inside a captured graph (s) */
    double coll_latency_eager;     /* fixed cost per collective call, eager (s) */
    double coll_latency_graph;     /* same, captured */
    int sm_count;                  /* compute units, for wave quantisation (0: ignore) */
    /* roofline efficiencies per kernel class (used when no table covers an op) */
    double eff_gemm, eff_attention, eff_memory;

    /* measured profile (directory under platforms/calibration), "" if none */
    char calibration[1024];   /* a profile name, or the path of its folder */

    /* interconnect */
    plat_fabric_kind fabric;
    plat_link intra;               /* switch port or mesh (per device aggregate) */
    int package_devices;           /* 0/1: no package tier */
    plat_link package;             /* die-to-die link inside a package */
    plat_link nic;                 /* per device, to other nodes */
    plat_link spine;               /* between node gateways (FATPIPE) */
    double allreduce_oneshot_max;  /* bytes: all-reduce at or below uses one-shot */

    /* The fabric as the preset file states it, before a workload's
     * overrides (what-ifs): the fabric the calibration profile's collective
     * tables are fitted on (collectives/fit.c).  Equal to intra and the
     * collective latencies when nothing is overridden. */
    plat_link cal_intra;
    double cal_coll_latency_eager, cal_coll_latency_graph;

    /* raw SimGrid XML platform instead of a generated one */
    int raw_xml;
} platform;

/* Load a preset by name (<datadir>/platforms/<name>.yaml) or path (contains
 * '/' or ends in .yaml/.yml/.xml; relative to base_dir).  `overrides` is the
 * workload's platform map (may be NULL): its keys other than `name` are
 * deep-merged over the preset before validation, so a workload can say
 * `platform: {name: h100-sxm-8, nodes: 2, device: {hbm_bytes: 40e9}}`.
 * Raw XML: hosts must carry <prop> ids peak_bf16_flops, hbm_bytes, hbm_bandwidth
 * (others optional, see README); the file is test-loaded in a child process
 * so that SimGrid cannot abort cpsim. */
int plat_load(const char *spec, const char *base_dir, const ynode *overrides,
              platform *out, cp_err *err);

/* The rate a tier's links run at in the simulation: bandwidth * efficiency
 * (generated presets), the file's bandwidth (raw XML). */
double plat_link_rate(const platform *p, const plat_link *l);

/* Total devices (nodes * devices_per_node). */
int plat_devices(const platform *p);

/* Host name of global device index d ("n<node>g<i>"). */
void plat_host_name(const platform *p, int d, char *buf, size_t len);

/* Names of the SimGrid links that carry device d's traffic and nothing
 * between two other devices (generated presets: its fabric port or mesh
 * links, its package links, its NIC; both directions).  Returns how many
 * were written into names (at most cap); 0 for raw XML platforms. */
int plat_device_links(const platform *p, int d, char (*names)[48], int cap);

/* Write the SimGrid XML platform of p (generated presets only). */
int plat_write_xml(const platform *p, FILE *out, cp_err *err);

/* p cut to the nodes that hold its first `devices` devices: nodes =
 * ceil(devices / devices_per_node), at most p->nodes, everything else as in
 * p (a raw XML platform is returned as it is: its file is loaded whole).
 * The generated layout (platform_xml.c) guarantees, and check_platform
 * tests, that
 *   - the hosts, links and routes between the devices of the cut platform
 *     are those of p: the same names, bandwidths, latencies and order (a
 *     node's zone, its spine links and its group do not depend on how many
 *     nodes follow it);
 *   - a route between two devices of one block of whole nodes, or of one
 *     block of devices_per_node / k devices of one node (k dividing
 *     devices_per_node), crosses only links that no route between two
 *     devices outside that block crosses (ports, NICs and mesh or package
 *     links are a device's or a device pair's, spine links a node's or a
 *     node pair's, a group link xg_a_b serves node pairs across groups a
 *     and b, which one contiguous block at most holds).
 * So a block of devices that talks only within itself runs on the cut
 * platform exactly as on p, beside any other block (the engine's shared DP
 * replicas, sim/engine/engine.h). */
platform plat_first_devices(const platform *p, int devices);

/* Names of the bundled presets, NULL-terminated (for messages/tests). */
extern const char *const plat_bundled[];

/* Print the resolved platform as YAML (a preset file's format). */
void plat_dump(const platform *p, FILE *out);
/* The resolved platform as JSON (the keys of a preset, plus source and
 * devices); caller decrefs. */
struct json_t;
struct json_t *plat_json(const platform *p);

#endif
