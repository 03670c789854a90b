/* platform_xml: the SimGrid platform written for a preset, and the reader of
 * raw SimGrid XML platforms (see platform.h and simgrid-notes.md section 2).
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
 *     spine_n<k>: one FATPIPE link per node; zoneRoute node a -> node b =
 *         spine_a, spine_b (no single link is crossed by every flow).
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
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <xbt/dict.h>
#include <xbt/dynar.h>
#include <xbt/log.h>

/* Host prop of the peak rate of each dtype, in cp_dtype order. */
static const char *const peak_prop[DT_COUNT] = {
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

/* s as XML attribute text. */
static void put_escaped(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", out);
            break;
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        default:
            fputc(*s, out);
        }
    }
}

static void write_str_prop(FILE *out, int ind, const char *id, const char *v)
{
    fprintf(out, "%*s<prop id=\"%s\" value=\"", ind, "", id);
    put_escaped(out, v);
    fputs("\"/>\n", out);
}

static void write_prop(FILE *out, int ind, const char *id, double v)
{
    char num[32];
    fprintf(out, "%*s<prop id=\"%s\" value=\"%s\"/>\n", ind, "", id,
            plat_num(num, sizeof num, v));
}

/* Host n<k>g<i> with the device description as props (raw-XML format). */
static void write_host(const platform *p, int k, int i, int ind, FILE *out)
{
    char num[32];
    fprintf(out, "%*s<host id=\"n%dg%d\" speed=\"%sf\" core=\"1\">\n", ind, "", k, i,
            plat_num(num, sizeof num, p->peak_flops[DT_BF16]));
    ind += 2;
    for (int t = 0; t < DT_COUNT; t++)
        write_prop(out, ind, peak_prop[t], p->peak_flops[t]);
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
    /* the links already run at bandwidth * efficiency (rate()) */
    write_prop(out, ind, "link_efficiency", 1.0);
    write_prop(out, ind, "allreduce_oneshot_max", p->allreduce_oneshot_max);
    write_prop(out, ind, "sm_count", p->sm_count);
    write_prop(out, ind, "node", k);
    if (p->calibration[0])
        write_str_prop(out, ind, "calibration", p->calibration);
    write_str_prop(out, ind, "model", p->device);
    fprintf(out, "%*s</host>\n", ind - 2, "");
}

/* A link at its achievable rate: the tier's line rate times its efficiency
 * (plat_link), so that every transfer, collective or not, runs at the
 * fraction of line rate the platform states. */
static double rate(const plat_link *l)
{
    return l->bandwidth * l->efficiency;
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
            write_link(out, ind, id, rate(&p->intra), p->intra.latency / 2, "SPLITDUPLEX");
        }
        snprintf(id, sizeof id, "nic_n%dg%d", k, i);
        write_link(out, ind, id, rate(&p->nic), p->nic.latency / 2, "SPLITDUPLEX");
    }
    for (int i = 0; i < n; i++) {
        for (int j = i + 1; j < n; j++) {
            if (same_package(p, i, j)) {
                snprintf(id, sizeof id, "pkg_n%d_%d_%d", k, i, j);
                write_link(out, ind, id, rate(&p->package), p->package.latency,
                           "SPLITDUPLEX");
            } else if (p->fabric == FAB_MESH) {
                snprintf(id, sizeof id, "mesh_n%d_%d_%d", k, i, j);
                write_link(out, ind, id, rate(&p->intra) / (n - 1), p->intra.latency,
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
    for (int k = first; k < last && p->nodes > 1; k++) {
        snprintf(id, sizeof id, "spine_n%d", k);
        write_link(out, ind, id, rate(&p->spine), p->spine.latency / 2, "FATPIPE");
    }
    for (int a = first; a < last; a++) {
        for (int b = a + 1; b < last; b++)
            fprintf(out, "%*s<zoneRoute src=\"node%d\" dst=\"node%d\" gw_src=\"n%d_gw\" "
                    "gw_dst=\"n%d_gw\"><link_ctn id=\"spine_n%d\"/><link_ctn id=\"spine_n%d\"/>"
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
            write_link(out, 4, id, rate(&p->spine), 0, "FATPIPE");
        }
    }
    for (int a = 0; a < ngroups; a++)
        for (int b = a + 1; b < ngroups; b++)
            fprintf(out, "    <zoneRoute src=\"group%d\" dst=\"group%d\" gw_src=\"g%d_core\" "
                    "gw_dst=\"g%d_core\"><link_ctn id=\"xg_%d_%d\"/></zoneRoute>\n", a, b, a,
                    b, a, b);
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

/* ---- raw XML: probe in a child ---------------------------------------- */

/* Child -> parent records: "H<len>:<host name>", "P<len>:<key><len>:<value>"
 * for the props of hosts carrying peak_bf16_flops (in sg_host_list order);
 * once every route between them was resolved, "L<len>:<j><len>:<bandwidth>
 * <len>:<latency>" for the route from the first of them to the j-th, then
 * "E". */
static void put_str(FILE *f, const char *s)
{
    fprintf(f, "%zu:%s", strlen(s), s);
}

/* Resolving the routes between the devices makes SimGrid fail here, not in
 * the simulation: all pairs up to this many devices, else every device to
 * and from device 0 and its ring neighbour.  A missing route in a Full zone
 * crashes SimGrid without a message, so the pair being resolved is kept in
 * memory shared with the parent (at[0], at[1]: indices in record order). */
#define PROBE_ALL_PAIRS_MAX 256

static void probe_routes(sg_host_t *dev, int n, volatile int *at)
{
    xbt_dynar_t links = xbt_dynar_new(sizeof(void *), NULL);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
            int wanted = n <= PROBE_ALL_PAIRS_MAX || i == 0 || j == 0 || j == (i + 1) % n;
            if (i == j || !wanted)
                continue;
            at[0] = i;
            at[1] = j;
            xbt_dynar_reset(links);
            sg_host_get_route(dev[i], dev[j], links);
        }
    }
    at[0] = at[1] = -1;
    xbt_dynar_free(&links);
}

static void probe_child(const char *path, int fd, volatile int *at)
{
    FILE *f = fdopen(fd, "w");
    if (!f)
        _exit(3);
    int argc = 1;
    char arg0[] = "cpsim";
    char *argv[] = {arg0, NULL};
    xbt_log_control_set("root.thres:error");
    simgrid_init(&argc, argv);
    simgrid_load_platform(path);
    size_t nhosts = sg_host_count();
    sg_host_t *hosts = sg_host_list();
    sg_host_t *dev = malloc((nhosts + 1) * sizeof *dev);
    int ndev = 0;
    for (size_t h = 0; h < nhosts; h++) {
        if (!sg_host_get_property_value(hosts[h], "peak_bf16_flops"))
            continue;
        dev[ndev++] = hosts[h];
        fputc('H', f);
        put_str(f, sg_host_get_name(hosts[h]));
        xbt_dict_t props = sg_host_get_properties(hosts[h]);
        xbt_dict_cursor_t cur = NULL;
        char *key;
        char *val;
        xbt_dict_foreach (props, cur, key, val) {
            fputc('P', f);
            put_str(f, key);
            put_str(f, val);
        }
        xbt_dict_free(&props);
    }
    fflush(f);
    probe_routes(dev, ndev, at);
    for (int j = 1; j < ndev; j++) {
        char num[32];
        fputc('L', f);
        snprintf(num, sizeof num, "%d", j);
        put_str(f, num);
        put_str(f, plat_num(num, sizeof num, sg_host_get_route_bandwidth(dev[0], dev[j])));
        put_str(f, plat_num(num, sizeof num, sg_host_get_route_latency(dev[0], dev[j])));
    }
    free(dev);
    free(hosts);
    fputc('E', f);
    fclose(f);
    _exit(0);
}

/* SimGrid's first error line without its "[time] file:line: [cat/ERROR] "
 * prefix, into buf ("" when none). */
static void first_error(FILE *log, char *buf, size_t len)
{
    char line[1024];
    buf[0] = '\0';
    rewind(log);
    while (fgets(line, sizeof line, log)) {
        char *tag = strstr(line, "/ERROR] ");
        if (!tag)
            tag = strstr(line, "/CRITICAL] ");
        if (!tag)
            continue;
        char *msg = strchr(tag, ' ') + 1;
        msg[strcspn(msg, "\r\n")] = '\0';
        snprintf(buf, len, "%s", msg);
        return;
    }
}

/* Read everything the child writes on fd (malloc'ed, NUL-terminated). */
static char *slurp_fd(int fd, size_t *len_out)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (len + 1 >= cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    *len_out = len;
    return buf;
}

typedef struct probe {
    char *data;       /* records (malloc'ed), complete when ok */
    size_t len;
    int ok;           /* the end marker arrived */
    int at[2];        /* failed: route being resolved (record indices), or -1 */
    int signal;       /* failed: signal that ended the child, 0 if none */
    char why[800];    /* failed: SimGrid's first error line, or "" */
} probe;

/* Fork the probe and collect what it says. -1 only when it cannot start. */
static int run_probe(const char *path, probe *pr, cp_err *err)
{
    memset(pr, 0, sizeof *pr);
    FILE *log = tmpfile();
    int fds[2] = {-1, -1};
    int *at = mmap(NULL, 2 * sizeof *at, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    fflush(NULL);
    pid_t pid = log && at != MAP_FAILED && pipe(fds) == 0 ? fork() : -1;
    if (pid == 0) {
        close(fds[0]);
        dup2(fileno(log), STDERR_FILENO);
        dup2(fileno(log), STDOUT_FILENO);
        probe_child(path, fds[1], at);
    }
    int rc = 0;
    if (pid < 0) {
        rc = cp_fail(err, CP_EXIT_INTERNAL, "%s: cannot start the SimGrid probe: %s", path,
                     strerror(errno));
    } else {
        close(fds[1]);
        at[0] = at[1] = -1;
        pr->data = slurp_fd(fds[0], &pr->len);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            continue;
        /* Success is the end marker: under valgrind the child's exit status
         * can report SimGrid's own leaks. */
        pr->ok = pr->len > 0 && pr->data[pr->len - 1] == 'E';
        pr->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        pr->at[0] = at[0];
        pr->at[1] = at[1];
        first_error(log, pr->why, sizeof pr->why);
    }
    if (fds[0] >= 0)
        close(fds[0]);
    if (at != MAP_FAILED)
        munmap(at, 2 * sizeof *at);
    if (log)
        fclose(log);
    return rc;
}

/* ---- raw XML: records to devices --------------------------------------- */

#define RAW_MAX_PROPS 32

typedef struct raw_host {
    char *name;
    int nprops;
    char *key[RAW_MAX_PROPS];
    char *val[RAW_MAX_PROPS];
    long node, rank;   /* rank -1: none */
    int first;         /* the first host of the records (route origin) */
    double bw, lat;    /* route from the first host: bytes/s, s (0: none) */
} raw_host;

/* Parse "<len>:<bytes>" at *pos; NULL when malformed. */
static char *get_str(const char *data, size_t len, size_t *pos)
{
    char *end;
    unsigned long n = strtoul(data + *pos, &end, 10);
    if (end == data + *pos || *end != ':' || n > len - (size_t)(end + 1 - data))
        return NULL;
    char *s = strndup(end + 1, n);
    *pos = (size_t)(end + 1 - data) + n;
    return s;
}

static void free_hosts(raw_host *h, int n)
{
    for (int i = 0; i < n; i++) {
        free(h[i].name);
        for (int j = 0; j < h[i].nprops; j++) {
            free(h[i].key[j]);
            free(h[i].val[j]);
        }
    }
    free(h);
}

/* An "L" record: route from the first host to host j. */
static int parse_route(const char *data, size_t len, size_t *pos, raw_host *h, int n)
{
    char *f[3] = {NULL, NULL, NULL};
    int ok = 1;
    for (int i = 0; i < 3 && ok; i++)
        ok = (f[i] = get_str(data, len, pos)) != NULL;
    long j = ok ? strtol(f[0], NULL, 10) : 0;
    ok = ok && j > 0 && j < n;
    if (ok) {
        h[j].bw = strtod(f[1], NULL);
        h[j].lat = strtod(f[2], NULL);
    }
    for (int i = 0; i < 3; i++)
        free(f[i]);
    return ok ? 0 : -1;
}

/* The host records of a probe's answer; complete: the answer must end with
 * the end marker, else whatever arrived before the child stopped is kept. */
static int parse_records(const char *path, const char *data, size_t len, int complete,
                         raw_host **out, int *nout, cp_err *err)
{
    raw_host *h = NULL;
    int n = 0, cap = 0;
    size_t pos = 0;
    while (pos < len && data[pos] != 'E') {
        char tag = data[pos++];
        if (tag == 'H') {
            if (n == cap) {
                cap = cap ? 2 * cap : 64;
                h = realloc(h, (size_t)cap * sizeof *h);
            }
            memset(&h[n], 0, sizeof h[n]);
            h[n].name = get_str(data, len, &pos);
            if (!h[n].name)
                break;
            n++;
        } else if (tag == 'P' && n > 0 && h[n - 1].nprops < RAW_MAX_PROPS) {
            raw_host *c = &h[n - 1];
            c->key[c->nprops] = get_str(data, len, &pos);
            c->val[c->nprops] = c->key[c->nprops] ? get_str(data, len, &pos) : NULL;
            if (!c->val[c->nprops++])
                break;
        } else if (tag == 'L') {
            if (parse_route(data, len, &pos, h, n) < 0)
                break;
        } else if (tag == 'P' && n > 0) {
            *out = h;
            *nout = n;
            return cp_fail(err, CP_EXIT_INPUT, "%s: host \"%s\" has more than %d properties",
                           path, h[n - 1].name, RAW_MAX_PROPS);
        } else {
            break;
        }
    }
    if (n > 0)
        h[0].first = 1;
    *out = h;
    *nout = n;
    if (complete && (pos >= len || data[pos] != 'E'))
        return cp_fail(err, CP_EXIT_INTERNAL, "%s: garbled answer from the SimGrid probe", path);
    return 0;
}

/* The message for a probe that did not finish. */
static int refused(const char *path, const probe *pr, const raw_host *h, int n, cp_err *err)
{
    char why[900];
    if (pr->why[0])
        snprintf(why, sizeof why, "%s", pr->why);
    else if (pr->at[0] >= 0 && pr->at[0] < n && pr->at[1] >= 0 && pr->at[1] < n)
        snprintf(why, sizeof why, "no route from host \"%s\" to host \"%s\"",
                 h[pr->at[0]].name, h[pr->at[1]].name);
    else if (pr->signal)
        snprintf(why, sizeof why, "the SimGrid probe died of signal %d", pr->signal);
    else
        snprintf(why, sizeof why, "the SimGrid probe stopped without a message");
    return cp_fail(err, CP_EXIT_INPUT, "%s: SimGrid refused the platform: %s", path, why);
}

static const char *prop(const raw_host *h, const char *key)
{
    for (int i = 0; i < h->nprops; i++)
        if (h->key[i] && strcmp(h->key[i], key) == 0)
            return h->val[i];
    return NULL;
}

/* Compare names with digit runs taken as numbers: n0g2 < n0g10 (names equal
 * that way, such as g2 and g02, fall back to plain order). */
static int natural_cmp(const char *a, const char *b)
{
    const char *x = a, *y = b;
    while (*x && *y) {
        if (*x >= '0' && *x <= '9' && *y >= '0' && *y <= '9') {
            char *ex, *ey;
            unsigned long long u = strtoull(x, &ex, 10), v = strtoull(y, &ey, 10);
            if (u != v)
                return u < v ? -1 : 1;
            x = ex;
            y = ey;
        } else if (*x != *y) {
            return (unsigned char)*x < (unsigned char)*y ? -1 : 1;
        } else {
            x++;
            y++;
        }
    }
    if (*x || *y)
        return *x ? 1 : -1;
    return strcmp(a, b);
}

static int by_rank(const void *x, const void *y)
{
    const raw_host *a = x, *b = y;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

static int by_node_name(const void *x, const void *y)
{
    const raw_host *a = x, *b = y;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    return natural_cmp(a->name, b->name);
}

/* Integer prop in [lo, hi], or dflt when absent. */
static int int_prop(const char *path, const raw_host *h, const char *key, long lo, long hi,
                    long dflt, long *out, cp_err *err)
{
    const char *v = prop(h, key);
    if (!v) {
        *out = dflt;
        return 0;
    }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi)
        return cp_fail(err, CP_EXIT_INPUT,
                       "%s: host \"%s\": property \"%s\" = \"%s\" is not an integer in [%ld, %ld]",
                       path, h->name, key, v, lo, hi);
    *out = x;
    return 0;
}

/* Number prop in (lo, hi] (lo_incl: [lo, hi]); required or default dflt. */
static int num_prop(const char *path, const raw_host *h, const char *key, int required,
                    double lo, int lo_incl, double hi, double dflt, double *out, cp_err *err)
{
    const char *v = prop(h, key);
    if (!v && required)
        return cp_fail(err, CP_EXIT_INPUT, "%s: host \"%s\" lacks property \"%s\"", path,
                       h->name, key);
    if (!v) {
        *out = dflt;
        return 0;
    }
    char *end;
    double x = strtod(v, &end);
    int ok = end != v && !*end && x <= hi && (lo_incl ? x >= lo : x > lo);
    if (!ok)
        return cp_fail(err, CP_EXIT_INPUT,
                       "%s: host \"%s\": property \"%s\" = \"%s\" is not a number in %c%g, %g]",
                       path, h->name, key, v, lo_incl ? '[' : '(', lo, hi);
    *out = x;
    return 0;
}

/* Raw-XML props of a device. */
static const char *const raw_props[] = {
    "peak_bf16_flops", "peak_fp16_flops", "peak_fp8_flops", "peak_int8_flops",
    "peak_fp32_flops", "peak_int4_flops", "vector_flops", "hbm_bytes", "hbm_bandwidth",
    "launch_eager", "launch_graph", "collective_latency_eager", "collective_latency_graph",
    "efficiency_gemm", "efficiency_attention", "efficiency_memory", "link_efficiency",
    "allreduce_oneshot_max", "sm_count", "node", "rank", "calibration", "model", NULL};

/* A prop close to a known one but not known is a typo, not a foreign prop. */
static int check_prop_names(const char *path, const raw_host *h, cp_err *err)
{
    for (int i = 0; i < h->nprops; i++) {
        int known = 0;
        for (const char *const *k = raw_props; *k && !known; k++)
            known = strcmp(*k, h->key[i]) == 0;
        const char *close = known ? NULL : cp_did_you_mean(h->key[i], raw_props);
        if (close)
            return cp_fail(err, CP_EXIT_INPUT,
                           "%s: host \"%s\": unknown property \"%s\" (did you mean \"%s\"?)",
                           path, h->name, h->key[i], close);
    }
    return 0;
}

/* Defaults for what a raw platform does not say (each used only when the
 * host lacks the prop):
 *   peak_fp16_flops      = peak_bf16_flops (equal on the NVIDIA devices of
 *                          models-hardware.md 3.1; the Ascend profiles of
 *                          3.2 differ, so give it for them)
 *   other peaks          0 (unsupported)
 *   vector_flops         peak_fp32_flops when given, else peak_bf16 / 14.8
 *                        (derived: H100 989.4 / 66.9 TF, models-hardware 3.1)
 *   launch_eager 13e-6 s, launch_graph 4.5e-6 s, collective latencies
 *   32.7e-6 / 9.55e-6 s, efficiencies gemm 0.80, attention 0.35, memory 0.9,
 *   link 0.8, allreduce_oneshot_max 262144 B: the h200-sxm-8 preset's
 *   values (sources there);
 *   sm_count 0 (no wave quantisation), node 0, no calibration.
 * Link bandwidths and latencies come from the file's routes (set_links). */
static int read_device(const char *path, const raw_host *h, platform *p, cp_err *err)
{
    const double fmax = PLAT_FLOPS_MAX;
    if (check_prop_names(path, h, err) < 0 ||
        num_prop(path, h, "peak_bf16_flops", 1, 0, 0, fmax, 0, &p->peak_flops[DT_BF16], err) < 0 ||
        num_prop(path, h, "hbm_bytes", 1, 0, 0, PLAT_HBM_MAX, 0, &p->hbm_bytes, err) < 0 ||
        num_prop(path, h, "hbm_bandwidth", 1, 0, 0, PLAT_BW_MAX, 0, &p->hbm_bw, err) < 0)
        return -1;
    for (int t = DT_FP16; t < DT_COUNT; t++) {
        double dflt = t == DT_FP16 ? p->peak_flops[DT_BF16] : 0;
        if (num_prop(path, h, peak_prop[t], 0, 0, 1, fmax, dflt, &p->peak_flops[t], err) < 0)
            return -1;
    }
    double vdflt = p->peak_flops[DT_FP32] > 0 ? p->peak_flops[DT_FP32]
                                              : p->peak_flops[DT_BF16] / 14.8;
    double link_eff, sm;
    if (num_prop(path, h, "vector_flops", 0, 0, 0, fmax, vdflt, &p->vector_flops, err) < 0 ||
        num_prop(path, h, "launch_eager", 0, 0, 1, 1, 13e-6, &p->launch_eager, err) < 0 ||
        num_prop(path, h, "launch_graph", 0, 0, 1, 1, 4.5e-6, &p->launch_graph, err) < 0 ||
        num_prop(path, h, "collective_latency_eager", 0, 0, 1, 1, 32.7e-6,
                 &p->coll_latency_eager, err) < 0 ||
        num_prop(path, h, "collective_latency_graph", 0, 0, 1, 1, 9.55e-6,
                 &p->coll_latency_graph, err) < 0 ||
        num_prop(path, h, "efficiency_gemm", 0, 0, 0, 1, 0.80, &p->eff_gemm, err) < 0 ||
        num_prop(path, h, "efficiency_attention", 0, 0, 0, 1, 0.35, &p->eff_attention, err) < 0 ||
        num_prop(path, h, "efficiency_memory", 0, 0, 0, 1, 0.9, &p->eff_memory, err) < 0 ||
        num_prop(path, h, "link_efficiency", 0, 0, 0, 1, 0.8, &link_eff, err) < 0 ||
        num_prop(path, h, "allreduce_oneshot_max", 0, 0, 1, PLAT_ONESHOT_MAX, 262144,
                 &p->allreduce_oneshot_max, err) < 0 ||
        num_prop(path, h, "sm_count", 0, 0, 1, PLAT_SM_MAX, 0, &sm, err) < 0)
        return -1;
    if (sm != floor(sm))
        return cp_fail(err, CP_EXIT_INPUT, "%s: host \"%s\": property \"sm_count\" must be an "
                       "integer", path, h->name);
    p->sm_count = (int)sm;
    p->intra.efficiency = p->nic.efficiency = p->spine.efficiency = link_eff;
    p->package.efficiency = link_eff;
    const char *cal = prop(h, "calibration"), *model = prop(h, "model");
    snprintf(p->calibration, sizeof p->calibration, "%s", cal ? cal : "");
    snprintf(p->device, sizeof p->device, "%s", model ? model : "raw SimGrid host");
    return 0;
}

/* The device fields of two platforms, compared field by field. */
static const char *device_differs(const platform *a, const platform *b)
{
    for (int t = 0; t < DT_COUNT; t++)
        if (a->peak_flops[t] != b->peak_flops[t])
            return peak_prop[t];
    if (a->hbm_bytes != b->hbm_bytes)
        return "hbm_bytes";
    if (a->hbm_bw != b->hbm_bw)
        return "hbm_bandwidth";
    if (a->vector_flops != b->vector_flops || a->launch_eager != b->launch_eager ||
        a->launch_graph != b->launch_graph || a->coll_latency_eager != b->coll_latency_eager ||
        a->coll_latency_graph != b->coll_latency_graph || a->eff_gemm != b->eff_gemm ||
        a->eff_attention != b->eff_attention || a->eff_memory != b->eff_memory ||
        a->intra.efficiency != b->intra.efficiency || a->sm_count != b->sm_count ||
        a->allreduce_oneshot_max != b->allreduce_oneshot_max ||
        strcmp(a->calibration, b->calibration) != 0)
        return "device properties";
    return NULL;
}

/* Order the devices and derive nodes / devices_per_node. */
static int arrange(const char *path, raw_host *h, int n, platform *p, cp_err *err)
{
    int with_rank = 0;
    for (int i = 0; i < n; i++) {
        if (int_prop(path, &h[i], "node", 0, 4095, 0, &h[i].node, err) < 0 ||
            int_prop(path, &h[i], "rank", 0, 65535, -1, &h[i].rank, err) < 0)
            return -1;
        with_rank += h[i].rank >= 0;
    }
    if (with_rank && with_rank != n)
        return cp_fail(err, CP_EXIT_INPUT, "%s: property \"rank\" is on %d of the %d devices: "
                       "give it to all or none", path, with_rank, n);
    qsort(h, (size_t)n, sizeof *h, with_rank ? by_rank : by_node_name);
    long nodes = 0;
    for (int i = 0; i < n; i++) {
        if (with_rank && h[i].rank != i)
            return cp_fail(err, CP_EXIT_INPUT, "%s: device ranks must be 0..%d, each once "
                           "(host \"%s\" has %ld)", path, n - 1, h[i].name, h[i].rank);
        if (h[i].node + 1 > nodes)
            nodes = h[i].node + 1;
    }
    int per = n / (int)nodes;
    for (int i = 0; i < n; i++)
        if (per * nodes != n || h[i].node != i / per)
            return cp_fail(err, CP_EXIT_INPUT, "%s: the %d devices must fill nodes 0..%ld "
                           "equally, in rank order (host \"%s\" is on node %ld)", path, n,
                           nodes - 1, h[i].name, h[i].node);
    p->nodes = (int)nodes;
    p->devices_per_node = per;
    return 0;
}

/* Whether route a is a worse bottleneck than route b (NULL: none yet). */
static int slower(const raw_host *a, const raw_host *b)
{
    return !b || a->bw < b->bw || (a->bw == b->bw && a->lat > b->lat);
}

/* Line rates and latencies of a raw platform, read from its routes (after
 * arrange): intra = the slowest route from the first host of the records
 * to another device of its node (the fabric rather than a package link),
 * nic + spine = the slowest one to a device of another node (its latency
 * split in halves, like a preset's NIC and spine stages).  A tier without
 * such a pair takes the other's values; a lone device copies within its
 * memory (intra = HBM bandwidth, no latency). */
static void set_links(const raw_host *h, int n, platform *p)
{
    const raw_host *ref = NULL, *near = NULL, *far = NULL;
    for (int i = 0; i < n; i++)
        if (h[i].first)
            ref = &h[i];
    for (int i = 0; i < n; i++) {
        if (&h[i] == ref)
            continue;
        if (h[i].node == ref->node && slower(&h[i], near))
            near = &h[i];
        if (h[i].node != ref->node && slower(&h[i], far))
            far = &h[i];
    }
    near = near ? near : far;
    far = far ? far : near;
    p->intra.bandwidth = near ? near->bw : p->hbm_bw;
    p->intra.latency = near ? near->lat : 0;
    p->nic.bandwidth = p->spine.bandwidth = far ? far->bw : p->hbm_bw;
    p->nic.latency = p->spine.latency = far ? far->lat / 2 : 0;
}

static int build(const char *path, raw_host *h, int n, platform *out, char ***names,
                 cp_err *err)
{
    if (n <= 0)
        return cp_fail(err, CP_EXIT_INPUT, "%s: no host carries the property "
                       "\"peak_bf16_flops\", so the platform has no devices", path);
    if (n > 65536)
        return cp_fail(err, CP_EXIT_INPUT, "%s: %d devices; at most 65536 are supported (as "
                       "for presets)", path, n);
    if (arrange(path, h, n, out, err) < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        platform dev = *out;
        if (read_device(path, &h[i], i ? &dev : out, err) < 0)
            return -1;
        const char *what = i ? device_differs(out, &dev) : NULL;
        if (what)
            return cp_fail(err, CP_EXIT_INPUT, "%s: host \"%s\" differs from host \"%s\" in %s; "
                           "cpsim needs identical devices", path, h[i].name, h[0].name, what);
    }
    set_links(h, n, out);
    *names = malloc((size_t)n * sizeof **names);
    for (int i = 0; i < n; i++) {
        (*names)[i] = h[i].name;
        h[i].name = NULL;
    }
    return 0;
}

int plat_xml_read(const char *path, platform *out, char ***names, cp_err *err)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return cp_fail(err, CP_EXIT_INPUT, "%s: cannot read the SimGrid platform: %s", path,
                       errno ? strerror(errno) : "not a regular file");
    probe pr;
    if (run_probe(path, &pr, err) < 0)
        return -1;
    raw_host *h = NULL;
    int n = 0;
    int rc = parse_records(path, pr.data, pr.len, pr.ok, &h, &n, err);
    if (rc == 0 && !pr.ok)
        rc = refused(path, &pr, h, n, err);
    free(pr.data);
    if (rc == 0) {
        memset(out, 0, sizeof *out);
        out->raw_xml = 1;
        out->fabric = FAB_SWITCH;
        snprintf(out->source, sizeof out->source, "%s", path);
        const char *base = strrchr(path, '/');
        snprintf(out->name, sizeof out->name, "%s", base ? base + 1 : path);
        rc = build(path, h, n, out, names, err);
    }
    free_hosts(h, n);
    return rc;
}
