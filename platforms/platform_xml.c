/* platform_xml: the SimGrid platform written for a preset (plat_write_xml,
 * see platform.h and simgrid-notes.md section 2); the reader of raw SimGrid
 * XML platforms is platform_raw.c.
 *
 * Generated layout (SimGrid 3.32, DTD version 4.1):
 *   zone "cluster" (Full)
 *     zone "node<k>" (Full): hosts n<k>g<i> (speed = peak bf16 flop/s,
 *         one core), router n<k>_gw, and the links
 *         switch fabric  fab_n<k>g<i>       SPLITDUPLEX port per device;
 *                        route i -> j = fab_i UP, fab_j DOWN
 *         mesh fabric    mesh_n<k>_<i>_<j>  SPLITDUPLEX per device pair
 *                        of bandwidth / (devices_per_node - 1)
 *         package tier   pkg_n<k>_<i>_<j>   SPLITDUPLEX per pair of devices
 *                        of one package; replaces the fabric route
 *         NIC            nic_n<k>g<i>       SPLITDUPLEX, device -> n<k>_gw
 *     spine_n<k>: one FATPIPE link per node, the route of node k to the
 *         group core (above GROUP_NODES nodes); spine_n<a>_n<b>: one FATPIPE
 *         link per node pair of a zone of nodes, the zoneRoute node a ->
 *         node b, of the spine's bandwidth and latency (the two halves a
 *         route crosses): no link is shared by the flows of two node pairs,
 *         so the solver's components stay small (a 16-node ring: 1.6x
 *         faster than two shared per-node links, which gave the same rates).
 *   Above GROUP_NODES nodes, the node zones sit in zones "group<g>" of
 *   GROUP_NODES nodes, and group a -> group b adds the FATPIPE link
 *   xg_<a>_<b> of zero latency (inter-node timings are unchanged).
 * A tier's latency is what a transfer pays to cross it, split evenly over
 * the links of the route: switch ports and NICs get latency / 2 each (two
 * per route), spine links spine.latency / 2, mesh and package links the
 * whole tier latency.  Bandwidths are line rates; the collectives apply
 * the efficiencies.  Every host also carries the <prop>s of the raw format
 * below, so a written platform can be edited and loaded back as raw XML.
 */
#include "platforms/platform_xml.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmlesc.h"

const char *const plat_peak_prop[DT_COUNT] = {
    "peak_bf16_flops", "peak_fp16_flops", "peak_fp8_flops",
    "peak_int8_flops", "peak_fp32_flops", "peak_int4_flops"};

/* ---- writer ----------------------------------------------------------- */

char *plat_num(char *buf, size_t len, double v)
{
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return buf;
}

/* Nodes per group zone when the cluster is large: the top zone of a Full
 * routing holds a route per pair of its children, so above this many nodes
 * they are grouped (64 groups of 64 nodes: ~135 k routes instead of 8.4 M
 * for 4096 nodes).  Our own choice; route latencies and bandwidths do not
 * depend on it. */
#define GROUP_NODES 64


static void write_str_prop(FILE *out, int ind, const char *id, const char *v)
{
    fprintf(out, "%*s<prop id=\"%s\" value=\"", ind, "", id);
    cp_xml_escape(out, v);
    fputs("\"/>\n", out);
}

static void write_prop(FILE *out, int ind, const char *id, double v)
{
    char num[32];
    fprintf(out, "%*s<prop id=\"%s\" value=\"%s\"/>\n", ind, "", id,
            plat_num(num, sizeof num, v));
}

/* An integer prop, in digits (the raw reader takes "node" as an integer:
 * the shortest round-tripping %g of 10 is "1e+01"). */
static void write_int_prop(FILE *out, int ind, const char *id, long v)
{
    fprintf(out, "%*s<prop id=\"%s\" value=\"%ld\"/>\n", ind, "", id, v);
}

/* Host n<k>g<i> with the device description as props (raw-XML format). */
static void write_host(const platform *p, int k, int i, int ind, FILE *out)
{
    char num[32];
    fprintf(out, "%*s<host id=\"n%dg%d\" speed=\"%sf\" core=\"1\">\n", ind, "", k, i,
            plat_num(num, sizeof num, p->peak_flops[DT_BF16]));
    ind += 2;
    for (int t = 0; t < DT_COUNT; t++)
        write_prop(out, ind, plat_peak_prop[t], p->peak_flops[t]);
    write_prop(out, ind, "vector_flops", p->vector_flops);
    write_prop(out, ind, "hbm_bytes", p->hbm_bytes);
    write_prop(out, ind, "hbm_bandwidth", p->hbm_bw);
    write_prop(out, ind, "launch_eager", p->launch_eager);
    write_prop(out, ind, "launch_graph", p->launch_graph);
    write_prop(out, ind, "collective_latency_eager", p->coll_latency_eager);
    write_prop(out, ind, "collective_latency_graph", p->coll_latency_graph);
    write_prop(out, ind, "efficiency_gemm", p->eff_gemm);
    write_prop(out, ind, "efficiency_attention", p->eff_attention);
    write_prop(out, ind, "efficiency_memory", p->eff_memory);
    /* the links already run at bandwidth * efficiency (plat_link_rate: a
     * generated platform's links carry the fraction of line rate it states) */
    write_prop(out, ind, "link_efficiency", 1.0);
    write_prop(out, ind, "allreduce_oneshot_max", p->allreduce_oneshot_max);
    write_prop(out, ind, "reserved_bytes", p->reserved_bytes);
    write_prop(out, ind, "workspace_bytes", p->workspace_bytes);
    write_prop(out, ind, "sm_count", p->sm_count);
    write_int_prop(out, ind, "node", k);
    if (p->calibration[0])
        write_str_prop(out, ind, "calibration", p->calibration);
    write_str_prop(out, ind, "model", p->device);
    fprintf(out, "%*s</host>\n", ind - 2, "");
}

static void write_link(FILE *out, int ind, const char *id, double bw, double lat,
                       const char *policy)
{
    char b[32], l[32];
    fprintf(out, "%*s<link id=\"%s\" bandwidth=\"%sBps\" latency=\"%ss\" "
            "sharing_policy=\"%s\"/>\n", ind, "", id, plat_num(b, sizeof b, bw),
            plat_num(l, sizeof l, lat), policy);
}

static int same_package(const platform *p, int i, int j)
{
    return p->package_devices > 1 && i / p->package_devices == j / p->package_devices;
}

static void write_node_links(const platform *p, int k, int ind, FILE *out)
{
    int n = p->devices_per_node;
    char id[96];
    for (int i = 0; i < n; i++) {
        if (p->fabric == FAB_SWITCH) {
            snprintf(id, sizeof id, "fab_n%dg%d", k, i);
            write_link(out, ind, id, plat_link_rate(p, &p->intra), p->intra.latency / 2,
                       "SPLITDUPLEX");
        }
        snprintf(id, sizeof id, "nic_n%dg%d", k, i);
        write_link(out, ind, id, plat_link_rate(p, &p->nic), p->nic.latency / 2, "SPLITDUPLEX");
    }
    for (int i = 0; i < n; i++) {
        for (int j = i + 1; j < n; j++) {
            if (same_package(p, i, j)) {
                snprintf(id, sizeof id, "pkg_n%d_%d_%d", k, i, j);
                write_link(out, ind, id, plat_link_rate(p, &p->package), p->package.latency,
                           "SPLITDUPLEX");
            } else if (p->fabric == FAB_MESH) {
                snprintf(id, sizeof id, "mesh_n%d_%d_%d", k, i, j);
                write_link(out, ind, id, plat_link_rate(p, &p->intra) / (n - 1), p->intra.latency,
                           "SPLITDUPLEX");
            }
        }
    }
}

/* Appends "<id>_UP" and "<id>_DOWN" (a SPLITDUPLEX link's two directions). */
static int add_duplex(char (*names)[48], int n, int cap, const char *id)
{
    static const char *const dir[] = {"_UP", "_DOWN"};
    for (int k = 0; k < 2; k++, n++) {
        if (n >= cap)
            continue;
        size_t len = strlen(id);
        if (len + strlen(dir[k]) >= sizeof names[n])
            len = sizeof names[n] - 1 - strlen(dir[k]);
        memcpy(names[n], id, len);
        strcpy(names[n] + len, dir[k]);
    }
    return n;
}

int plat_device_links(const platform *p, int d, char (*names)[48], int cap)
{
    if (p->raw_xml)
        return 0;
    int dpn = p->devices_per_node, k = d / dpn, i = d % dpn, n = 0;
    char id[40];
    if (p->fabric == FAB_SWITCH) {
        snprintf(id, sizeof id, "fab_n%dg%d", k, i);
        n = add_duplex(names, n, cap, id);
    }
    for (int j = 0; j < dpn; j++) {
        if (j == i)
            continue;
        int lo = i < j ? i : j, hi = i < j ? j : i;
        if (same_package(p, i, j))
            snprintf(id, sizeof id, "pkg_n%d_%d_%d", k, lo, hi);
        else if (p->fabric == FAB_MESH)
            snprintf(id, sizeof id, "mesh_n%d_%d_%d", k, lo, hi);
        else
            continue;
        n = add_duplex(names, n, cap, id);
    }
    snprintf(id, sizeof id, "nic_n%dg%d", k, i);
    n = add_duplex(names, n, cap, id);
    return n < cap ? n : cap;
}

/* Routes are symmetrical: SimGrid flips UP/DOWN for the way back. */
static void write_node_routes(const platform *p, int k, int ind, FILE *out)
{
    int n = p->devices_per_node;
    for (int i = 0; i < n; i++) {
        for (int j = i + 1; j < n; j++) {
            fprintf(out, "%*s<route src=\"n%dg%d\" dst=\"n%dg%d\">", ind, "", k, i, k, j);
            if (same_package(p, i, j))
                fprintf(out, "<link_ctn id=\"pkg_n%d_%d_%d\" direction=\"UP\"/>", k, i, j);
            else if (p->fabric == FAB_MESH)
                fprintf(out, "<link_ctn id=\"mesh_n%d_%d_%d\" direction=\"UP\"/>", k, i, j);
            else
                fprintf(out, "<link_ctn id=\"fab_n%dg%d\" direction=\"UP\"/>"
                        "<link_ctn id=\"fab_n%dg%d\" direction=\"DOWN\"/>", k, i, k, j);
            fprintf(out, "</route>\n");
        }
        fprintf(out, "%*s<route src=\"n%dg%d\" dst=\"n%d_gw\">"
                "<link_ctn id=\"nic_n%dg%d\" direction=\"UP\"/></route>\n", ind, "", k, i, k,
                k, i);
    }
}

static void write_node(const platform *p, int k, int ind, FILE *out)
{
    fprintf(out, "%*s<zone id=\"node%d\" routing=\"Full\">\n", ind, "", k);
    for (int i = 0; i < p->devices_per_node; i++)
        write_host(p, k, i, ind + 2, out);
    fprintf(out, "%*s<router id=\"n%d_gw\"/>\n", ind + 2, "", k);
    write_node_links(p, k, ind + 2, out);
    write_node_routes(p, k, ind + 2, out);
    fprintf(out, "%*s</zone>\n", ind, "");
}

/* Nodes first..last-1 as sibling zones, their spine links and the
 * node-to-node routes between them.  core >= 0: also a zone holding the
 * router g<core>_core that every node reaches through its spine link. */
static void write_nodes(const platform *p, int first, int last, int core, int ind, FILE *out)
{
    char id[32];
    for (int k = first; k < last; k++)
        write_node(p, k, ind, out);
    if (core >= 0)
        fprintf(out, "%*s<zone id=\"group%d_core\" routing=\"Full\"><router id=\"g%d_core\"/>"
                "</zone>\n", ind, "", core, core);
    for (int k = first; k < last && p->nodes > 1 && core >= 0; k++) {
        snprintf(id, sizeof id, "spine_n%d", k);
        write_link(out, ind, id, plat_link_rate(p, &p->spine), p->spine.latency / 2, "FATPIPE");
    }
    /* node a to node b of one zone: a FATPIPE link of their own, the two
     * spine halves' latency, so that flows between other node pairs never
     * share a constraint with them (the solver works on small components) */
    for (int a = first; a < last; a++)
        for (int b = a + 1; b < last; b++) {
            snprintf(id, sizeof id, "spine_n%d_n%d", a, b);
            write_link(out, ind, id, plat_link_rate(p, &p->spine), p->spine.latency, "FATPIPE");
        }
    for (int a = first; a < last; a++) {
        for (int b = a + 1; b < last; b++)
            fprintf(out, "%*s<zoneRoute src=\"node%d\" dst=\"node%d\" gw_src=\"n%d_gw\" "
                    "gw_dst=\"n%d_gw\"><link_ctn id=\"spine_n%d_n%d\"/>"
                    "</zoneRoute>\n", ind, "", a, b, a, b, a, b);
        if (core >= 0)
            fprintf(out, "%*s<zoneRoute src=\"node%d\" dst=\"group%d_core\" gw_src=\"n%d_gw\" "
                    "gw_dst=\"g%d_core\"><link_ctn id=\"spine_n%d\"/></zoneRoute>\n", ind, "",
                    a, core, a, core, a);
    }
}

/* Groups of GROUP_NODES nodes; group a to group b crosses the FATPIPE link
 * xg_<a>_<b> of zero latency (so that every inter-node route is NIC, spine,
 * spine, NIC in latency and bandwidth, with no link shared by all flows). */
static void write_groups(const platform *p, FILE *out)
{
    int ngroups = (p->nodes + GROUP_NODES - 1) / GROUP_NODES;
    char id[48];
    for (int g = 0; g < ngroups; g++) {
        int last = (g + 1) * GROUP_NODES < p->nodes ? (g + 1) * GROUP_NODES : p->nodes;
        fprintf(out, "    <zone id=\"group%d\" routing=\"Full\">\n", g);
        write_nodes(p, g * GROUP_NODES, last, g, 6, out);
        fprintf(out, "    </zone>\n");
    }
    for (int a = 0; a < ngroups; a++) {
        for (int b = a + 1; b < ngroups; b++) {
            snprintf(id, sizeof id, "xg_%d_%d", a, b);
            write_link(out, 4, id, plat_link_rate(p, &p->spine), 0, "FATPIPE");
        }
    }
    for (int a = 0; a < ngroups; a++)
        for (int b = a + 1; b < ngroups; b++)
            fprintf(out, "    <zoneRoute src=\"group%d\" dst=\"group%d\" gw_src=\"g%d_core\" "
                    "gw_dst=\"g%d_core\"><link_ctn id=\"xg_%d_%d\"/></zoneRoute>\n", a, b, a,
                    b, a, b);
}

platform plat_first_devices(const platform *p, int devices)
{
    platform cut = *p;
    int dpn = p->devices_per_node;
    if (!p->raw_xml && dpn > 0 && devices > 0) {
        int nodes = (devices + dpn - 1) / dpn;
        if (nodes < cut.nodes)
            cut.nodes = nodes;
    }
    return cut;
}

int plat_write_xml(const platform *p, FILE *out, cp_err *err)
{
    if (p->raw_xml)
        return cp_fail(err, CP_EXIT_INTERNAL,
                       "%s: a raw SimGrid platform is loaded as it is, not written", p->source);
    fprintf(out, "<?xml version='1.0'?>\n"
            "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
            "<platform version=\"4.1\">\n"
            "  <zone id=\"cluster\" routing=\"Full\">\n");
    write_str_prop(out, 4, "generated_by_cpsim_from", p->source);
    if (p->nodes > GROUP_NODES)
        write_groups(p, out);
    else
        write_nodes(p, 0, p->nodes, -1, 4, out);
    fprintf(out, "  </zone>\n</platform>\n");
    if (fflush(out) != 0 || ferror(out))
        return cp_fail(err, CP_EXIT_INTERNAL, "cannot write the SimGrid platform: %s",
                       strerror(errno));
    return 0;
}
