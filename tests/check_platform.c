/* check_platform: the bundled presets and their loader (platforms/platform.c):
 * documented numbers, overrides, every validation message; the SimGrid
 * platform writer, with routes and transfer times checked inside SimGrid;
 * raw SimGrid XML platforms, good and broken (platforms/platform_xml.c).
 *
 * SimGrid allows one engine per process, so every check that loads a
 * platform in SimGrid runs it in a child of its own (whatever check's fork
 * mode), which reports success by writing "ok" to a pipe.
 */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <simgrid/mailbox.h>
#include <valgrind/valgrind.h>
#include <xbt/config.h>
#include <xbt/dynar.h>
#include <xbt/log.h>

#include "platforms/platform.h"

#ifndef CP_SRCDIR
#define CP_SRCDIR "."
#endif

#define FIXTURE(name) CP_SRCDIR "/tests/platforms/" name

/* ---- helpers --------------------------------------------------------------- */

static void load_ok(const char *spec, const ynode *ov, platform *p)
{
    cp_err err = {0};
    int rc = plat_load(spec, CP_SRCDIR, ov, p, &err);
    ck_assert_msg(rc == 0, "%s: unexpected error: %s", spec, err.msg);
}

/* plat_load fails with an input error whose message contains want1 and
 * want2 (NULL: not checked). */
static void load_fails(const char *spec, const ynode *ov, const char *want1, const char *want2)
{
    cp_err err = {0};
    platform p;
    ck_assert_int_eq(plat_load(spec, CP_SRCDIR, ov, &p, &err), -1);
    ck_assert_int_eq(err.code, CP_EXIT_INPUT);
    ck_assert_msg(strstr(err.msg, want1), "message \"%s\" lacks \"%s\"", err.msg, want1);
    ck_assert_msg(!want2 || strstr(err.msg, want2), "message \"%s\" lacks \"%s\"", err.msg,
                  want2);
}

/* A workload document "w.yaml" (its `platform` map is the override). */
static ydoc *workload(const char *text)
{
    cp_err err = {0};
    ydoc *doc = yio_parse_string(text, strlen(text), "w.yaml", &err);
    ck_assert_msg(doc != NULL, "%s", err.msg);
    return doc;
}

static const ynode *platform_map(ydoc *doc)
{
    return yio_key(yio_root(doc), "platform");
}

static void override_fails(const char *text, const char *want1, const char *want2)
{
    ydoc *doc = workload(text);
    const ynode *ov = platform_map(doc);
    cp_err err = {0};
    platform p;
    const char *spec = yio_key(ov, "name")->str;
    ck_assert_int_eq(plat_load(spec, CP_SRCDIR, ov, &p, &err), -1);
    ck_assert_int_eq(err.code, CP_EXIT_INPUT);
    ck_assert_msg(strstr(err.msg, want1), "message \"%s\" lacks \"%s\"", err.msg, want1);
    ck_assert_msg(!want2 || strstr(err.msg, want2), "message \"%s\" lacks \"%s\"", err.msg,
                  want2);
    yio_free(doc);
}

/* Write p's SimGrid platform to a new temporary file named into path. */
static void write_tmp_xml(const platform *p, char *path, size_t len)
{
    snprintf(path, len, "/tmp/check_platform_XXXXXX.xml");
    int fd = mkstemps(path, 4);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    cp_err err = {0};
    ck_assert_msg(plat_write_xml(p, f, &err) == 0, "%s", err.msg);
    fclose(f);
}

/* ---- SimGrid children ------------------------------------------------------- */

/* Inside a SimGrid child: report and leave on a failed expectation. */
#define EXPECT(cond, ...)                                                      \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: expectation failed: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            _exit(1);                                                          \
        }                                                                      \
    } while (0)

/* Load xml in SimGrid (the settings of simgrid-notes.md section 0) in a
 * child and run body there; the file is removed afterwards. */
static void in_simgrid(const char *xml, void (*body)(void))
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        int argc = 1;
        char arg0[] = "check_platform";
        char *argv[] = {arg0, NULL};
        xbt_log_control_set("root.thres:warning");
        simgrid_init(&argc, argv);
        sg_cfg_set_string("network/model", "CM02");
        sg_cfg_set_boolean("network/crosstraffic", "no");  /* a string in 3.32 */
        sg_cfg_set_double("network/TCP-gamma", 0);
        simgrid_load_platform(xml);
        body();
        ssize_t w = write(fds[1], "ok", 2);
        _exit(w == 2 ? 0 : 1);
    }
    close(fds[1]);
    char buf[4] = "";
    ssize_t r = read(fds[0], buf, 2);
    int status;
    waitpid(pid, &status, 0);
    close(fds[0]);
    unlink(xml);
    ck_assert_msg(r == 2 && memcmp(buf, "ok", 2) == 0,
                  "the SimGrid child failed (status %d, see its stderr)", status);
}

/* Route src -> dst is exactly `links` (names separated by spaces), with
 * route latency lat (s) and bottleneck bandwidth bw (bytes/s). */
static void expect_route(const char *src, const char *dst, const char *links, double lat,
                         double bw)
{
    sg_host_t a = sg_host_by_name(src), b = sg_host_by_name(dst);
    EXPECT(a && b, "hosts %s, %s", src, dst);
    xbt_dynar_t list = xbt_dynar_new(sizeof(sg_link_t), NULL);
    sg_host_get_route(a, b, list);
    char got[512] = "";
    unsigned i;
    sg_link_t l;
    xbt_dynar_foreach (list, i, l) {
        size_t o = strlen(got);
        snprintf(got + o, sizeof got - o, "%s%s", o ? " " : "", sg_link_get_name(l));
    }
    xbt_dynar_free(&list);
    EXPECT(strcmp(got, links) == 0, "route %s -> %s is \"%s\", want \"%s\"", src, dst, got, links);
    double glat = sg_host_get_route_latency(a, b), gbw = sg_host_get_route_bandwidth(a, b);
    EXPECT(fabs(glat - lat) <= 1e-12 * lat, "latency %s -> %s: %.17g, want %.17g", src, dst,
           glat, lat);
    EXPECT(fabs(gbw - bw) <= 1e-12 * bw, "bandwidth %s -> %s: %.17g, want %.17g", src, dst, gbw,
           bw);
}

/* One simulated transfer of `bytes` from src to dst. */
typedef struct xfer {
    char mailbox[64];
    double bytes;
    double end;   /* simulated time the receiver got it */
} xfer;

static void xfer_send(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    xfer *x = sg_actor_self_get_data();
    sg_mailbox_put(sg_mailbox_by_name(x->mailbox), x, (long)x->bytes);
}

static void xfer_recv(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    xfer *x = sg_actor_self_get_data();
    sg_mailbox_get(sg_mailbox_by_name(x->mailbox));
    x->end = simgrid_get_clock();
}

static void xfer_start(xfer *x, const char *src, const char *dst, double bytes)
{
    snprintf(x->mailbox, sizeof x->mailbox, "%s->%s", src, dst);
    x->bytes = bytes;
    sg_actor_t s = sg_actor_init("send", sg_host_by_name(src));
    sg_actor_set_data(s, x);
    sg_actor_start(s, xfer_send, 0, NULL);
    sg_actor_t r = sg_actor_init("recv", sg_host_by_name(dst));
    sg_actor_set_data(r, x);
    sg_actor_start(r, xfer_recv, 0, NULL);
}

static void expect_time(double got, double want, const char *what)
{
    EXPECT(fabs(got - want) <= 1e-6 * want, "%s: %.9g s, want %.9g s", what, got, want);
}

/* ---- presets ---------------------------------------------------------------- */

START_TEST(test_platform_bundled_files)
{
    int listed = 0;
    for (int i = 0; plat_bundled[i]; i++, listed++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/platforms/%s.yaml", CP_SRCDIR, plat_bundled[i]);
        ck_assert_msg(access(path, R_OK) == 0, "%s missing", path);
    }
    DIR *d = opendir(CP_SRCDIR "/platforms");
    ck_assert_ptr_nonnull(d);
    int files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n > 5 && strcmp(e->d_name + n - 5, ".yaml") == 0) {
            int found = 0;
            for (int i = 0; plat_bundled[i]; i++)
                found |= strncmp(plat_bundled[i], e->d_name, n - 5) == 0 &&
                         strlen(plat_bundled[i]) == n - 5;
            ck_assert_msg(found, "platforms/%s is not in plat_bundled", e->d_name);
            files++;
        }
    }
    closedir(d);
    ck_assert_int_eq(files, listed);
}
END_TEST

/* The documented numbers of every preset (sources in the YAML files). */
typedef struct preset_want {
    const char *name;
    int dpn;
    plat_fabric_kind fabric;
    double bf16, fp8, int8, fp32, vector, hbm, hbm_bw;
    int sm;
    double launch_eager, launch_graph, coll_eager, coll_graph;
    double gemm, attention, memory;
    const char *calibration;
    double intra_bw, intra_lat, intra_eff;
    int package;
    double pkg_bw, pkg_lat;
    double nic_bw, nic_lat, spine_lat, net_eff, oneshot;
} preset_want;

static const preset_want presets[] = {
    {"h100-sxm-8", 8, FAB_SWITCH, 989.4e12, 1978.9e12, 1978.9e12, 66.9e12, 66.9e12, 80e9,
     3.35e12, 132, 13e-6, 1.1e-6, 32.7e-6, 9.55e-6, 0.737, 0.364, 0.889, "h200", 450e9, 2e-6, 0.8,
     0, 0, 0, 50e9, 2e-6, 1e-6, 0.94, 262144},
    {"h100-sxm-8-500w", 8, FAB_SWITCH, 800e12, 1600e12, 1600e12, 54.1e12, 54.1e12, 96e9,
     2.4e12, 132, 13e-6, 1.1e-6, 32.7e-6, 9.55e-6, 0.737, 0.364, 0.889, "h200", 450e9, 2e-6,
     0.8, 0, 0, 0, 50e9, 2e-6, 1e-6, 0.94, 262144},
    {"h200-sxm-8", 8, FAB_SWITCH, 989.4e12, 1978.9e12, 1978.9e12, 66.9e12, 66.9e12,
     150109880320.0, 4.8e12, 132, 13e-6, 1.1e-6, 32.7e-6, 9.55e-6, 0.737, 0.364, 0.889, "h200",
     450e9, 2e-6, 0.8, 0, 0, 0, 50e9, 2e-6, 1e-6, 0.94, 262144},
    {"b200-8", 8, FAB_SWITCH, 2250e12, 4500e12, 4500e12, 80e12, 80e12, 180e9, 8e12, 148, 13e-6,
     2.1e-6, 32.7e-6, 9.55e-6, 0.712, 0.35, 0.9, "", 900e9, 2e-6, 0.8, 0, 0, 0, 50e9, 2e-6,
     1e-6, 0.94, 262144},
    {"ascend-910b-8", 8, FAB_MESH, 353.9e12, 0, 752e12, 99.5e12, 22e12, 68719476736.0,
     1759218604441.6, 0, 5e-6, 5e-6, 10e-6, 10e-6, 0.7, 0.7, 0.6, "", 196e9, 0.5e-6, 0.7, 0,
     0, 0, 25e9, 0.75e-6, 0.75e-6, 0.7, 0},
    {"ascend-a3-16", 16, FAB_SWITCH, 353.9e12, 0, 752e12, 99.5e12, 22e12, 68719476736.0,
     1759218604441.6, 0, 5e-6, 5e-6, 10e-6, 10e-6, 0.7, 0.7, 0.6, "", 196e9, 0.5e-6, 0.7, 2,
     224e9, 0.2e-6, 24.5e9, 2.75e-6, 2.75e-6, 0.7, 0},
};

START_TEST(test_platform_presets)
{
    ck_assert_int_eq((int)(sizeof presets / sizeof presets[0]), 6);
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        const preset_want *w = &presets[i];
        platform p;
        load_ok(w->name, NULL, &p);
        ck_assert_str_eq(p.name, w->name);
        ck_assert_int_eq(p.raw_xml, 0);
        ck_assert_int_eq(p.nodes, 1);
        ck_assert_int_eq(p.devices_per_node, w->dpn);
        ck_assert_int_eq(plat_devices(&p), w->dpn);
        ck_assert_int_eq(p.fabric, w->fabric);
        ck_assert_double_eq(p.peak_flops[DT_BF16], w->bf16);
        ck_assert_double_eq(p.peak_flops[DT_FP8], w->fp8);
        ck_assert_double_eq(p.peak_flops[DT_INT8], w->int8);
        ck_assert_double_eq(p.peak_flops[DT_FP32], w->fp32);
        ck_assert_double_eq(p.peak_flops[DT_INT4], 0);
        ck_assert_double_eq(p.vector_flops, w->vector);
        ck_assert_double_eq(p.hbm_bytes, w->hbm);
        ck_assert_double_eq(p.hbm_bw, w->hbm_bw);
        ck_assert_int_eq(p.sm_count, w->sm);
        ck_assert_double_eq(p.launch_eager, w->launch_eager);
        ck_assert_double_eq(p.launch_graph, w->launch_graph);
        ck_assert_double_eq(p.coll_latency_eager, w->coll_eager);
        ck_assert_double_eq(p.coll_latency_graph, w->coll_graph);
        ck_assert_double_eq(p.eff_gemm, w->gemm);
        ck_assert_double_eq(p.eff_attention, w->attention);
        ck_assert_double_eq(p.eff_memory, w->memory);
        ck_assert_str_eq(p.calibration, w->calibration);
        ck_assert_double_eq(p.intra.bandwidth, w->intra_bw);
        ck_assert_double_eq(p.intra.latency, w->intra_lat);
        ck_assert_double_eq(p.intra.efficiency, w->intra_eff);
        ck_assert_int_eq(p.package_devices, w->package);
        ck_assert_double_eq(p.package.bandwidth, w->pkg_bw);
        ck_assert_double_eq(p.package.latency, w->pkg_lat);
        ck_assert_double_eq(p.nic.bandwidth, w->nic_bw);
        ck_assert_double_eq(p.nic.latency, w->nic_lat);
        ck_assert_double_eq(p.spine.bandwidth, w->nic_bw);
        ck_assert_double_eq(p.spine.latency, w->spine_lat);
        ck_assert_double_eq(p.nic.efficiency, w->net_eff);
        ck_assert_double_eq(p.allreduce_oneshot_max, w->oneshot);
        /* fp16 equals bf16 on every bundled device */
        ck_assert_double_eq(p.peak_flops[DT_FP16], w->name[0] == 'a' ? 376e12 : w->bf16);
    }
}
END_TEST

/* The dump reads back as the same platform. */
START_TEST(test_platform_dump_roundtrip)
{
    for (int i = 0; plat_bundled[i]; i++) {
        platform a, b;
        load_ok(plat_bundled[i], NULL, &a);
        if (i == 0)
            snprintf(a.device, sizeof a.device, "quote \" and \\ backslash");
        char path[] = "/tmp/check_platform_XXXXXX.yaml";
        int fd = mkstemps(path, 5);
        ck_assert_int_ge(fd, 0);
        FILE *f = fdopen(fd, "w");
        plat_dump(&a, f);
        fclose(f);
        load_ok(path, NULL, &b);
        unlink(path);
        ck_assert_str_eq(b.source, path);
        memcpy(b.source, a.source, sizeof b.source); /* whole array: tails too */
        ck_assert_msg(memcmp(&a, &b, sizeof a) == 0, "%s: dump does not read back the same",
                      plat_bundled[i]);
    }
}
END_TEST

START_TEST(test_platform_host_name)
{
    platform p;
    load_ok("ascend-a3-16", NULL, &p);
    p.nodes = 3;
    char name[32];
    plat_host_name(&p, 0, name, sizeof name);
    ck_assert_str_eq(name, "n0g0");
    plat_host_name(&p, 15, name, sizeof name);
    ck_assert_str_eq(name, "n0g15");
    plat_host_name(&p, 37, name, sizeof name);
    ck_assert_str_eq(name, "n2g5");
    ck_assert_int_eq(plat_devices(&p), 48);
}
END_TEST

/* ---- overrides ---------------------------------------------------------------- */

START_TEST(test_platform_overrides)
{
    ydoc *doc = workload("platform: {name: h100-sxm-8, nodes: 2, devices_per_node: 4,\n"
                         "  device: {hbm_bytes: 40e9, efficiency: {gemm: 0.6}},\n"
                         "  network: {spine_bandwidth: 400e9}}\n");
    platform p;
    load_ok("h100-sxm-8", platform_map(doc), &p);
    ck_assert_str_eq(p.name, "h100-sxm-8");
    ck_assert_int_eq(p.nodes, 2);
    ck_assert_int_eq(p.devices_per_node, 4);
    ck_assert_int_eq(plat_devices(&p), 8);
    ck_assert_double_eq(p.hbm_bytes, 40e9);
    ck_assert_double_eq(p.eff_gemm, 0.6);
    ck_assert_double_eq(p.spine.bandwidth, 400e9);
    /* untouched keys keep the preset's values */
    ck_assert_double_eq(p.hbm_bw, 3.35e12);
    ck_assert_double_eq(p.eff_attention, 0.364);
    ck_assert_double_eq(p.nic.bandwidth, 50e9);
    yio_free(doc);

    /* a package tier added by override to a preset without one */
    doc = workload("platform:\n  name: b200-8\n  package: {devices: 2, bandwidth: 1e12, "
                   "latency: 1e-7, efficiency: 0.9}\n");
    load_ok("b200-8", platform_map(doc), &p);
    ck_assert_int_eq(p.package_devices, 2);
    ck_assert_double_eq(p.package.bandwidth, 1e12);
    yio_free(doc);
}
END_TEST

/* Bad override values are reported at the override (w.yaml), not the preset. */
START_TEST(test_platform_override_errors)
{
    override_fails("platform: {name: h100-sxm-8, nodes: 0}\n", "w.yaml:1:",
                   "nodes: expected an integer in [1, 4096], got \"0\"");
    override_fails("platform: {name: h100-sxm-8, nodes: two}\n", "w.yaml:1:",
                   "nodes: expected an integer");
    override_fails("platform:\n  name: h100-sxm-8\n  device: {hbm_byte: 1e9}\n", "w.yaml:3:",
                   "unknown key \"hbm_byte\" in device (did you mean \"hbm_bytes\"?)");
    override_fails("platform:\n  name: h100-sxm-8\n  device:\n    efficiency: {gemm: 1.5}\n",
                   "w.yaml:4:",
                   "device.efficiency.gemm: expected a number in [0.001, 1], got \"1.5\"");
    override_fails("platform: {name: h100-sxm-8, fabric: {latency: 0}}\n", "w.yaml:1:",
                   "fabric.latency: expected a number in (0, 1], got \"0\"");
    override_fails("platform: {name: h100-sxm-8, device: {hbm_bandwidth: 1e15}}\n",
                   "w.yaml:1:", "device.hbm_bandwidth: expected a number in [1e+06, 1e+14]");
    override_fails("platform: {name: h100-sxm-8, device: {peak_flops: {bf16: -1}}}\n",
                   "w.yaml:1:", "device.peak_flops.bf16: expected a number in [1e+06, 1e+18]");
    override_fails("platform: {name: h100-sxm-8, device: {vector_flops: [1]}}\n", "w.yaml:1:",
                   "device.vector_flops: expected a number in [1e+06, 1e+18], got a list");
    override_fails("platform: {name: h100-sxm-8, device: 5}\n", "w.yaml:1:",
                   "device: expected a mapping, got \"5\"");
    override_fails("platform: {name: ascend-a3-16, package: {devices: 3}}\n", "w.yaml:1:",
                   "package.devices: 3 does not divide devices_per_node (16)");
    /* a conflict with the preset is reported where the override is */
    override_fails("platform: {name: ascend-910b-8, devices_per_node: 1}\n", "w.yaml:1:",
                   "a mesh needs devices_per_node >= 2, got 1");
    override_fails("platform: {name: ascend-a3-16, devices_per_node: 15}\n", "w.yaml:1:",
                   "package.devices: 2 does not divide devices_per_node (15)");
    override_fails("platform: {name: h100-sxm-8, nodes: 4096, devices_per_node: 1024}\n",
                   "w.yaml:1:", "4096 x 1024 = 4194304 devices; at most 65536");
    override_fails("platform: {name: h100-sxm-8, device: {calibration: h100}}\n", "w.yaml:1:",
                   "no calibration profile \"h100\"");
    override_fails("platform: {name: h100-sxm-8, fabric: {kind: torus}}\n", "w.yaml:1:",
                   "fabric.kind: expected one of switch, mesh");
    override_fails("platform: {name: h100-sxm8, nodes: 2}\n", "w.yaml:1:",
                   "unknown platform preset \"h100-sxm8\" (did you mean \"h100-sxm-8\"?)");
    override_fails("platform: {name: " FIXTURE("raw-ok.xml") ", nodes: 2}\n", "w.yaml:1:",
                   "platform.nodes: a raw SimGrid platform");
}
END_TEST

/* ---- errors in preset files -------------------------------------------------- */

START_TEST(test_platform_file_errors)
{
    load_fails("h100-sxm8", NULL, "unknown platform preset \"h100-sxm8\" (did you mean "
               "\"h100-sxm-8\"?)", "bundled presets: ascend-910b-8, ascend-a3-16, b200-8, "
               "h100-sxm-8, h100-sxm-8-500w, h200-sxm-8");
    load_fails("", NULL, "unknown platform preset \"\"", NULL);
    load_fails("nope/none.yaml", NULL, "nope/none.yaml", "cannot open");
    load_fails(FIXTURE("bad-typo.yaml"), NULL, "bad-typo.yaml:11:3: unknown key "
               "\"hbm_bandwith\" in device (did you mean \"hbm_bandwidth\"?)", NULL);
    load_fails(FIXTURE("bad-missing.yaml"), NULL, "bad-missing.yaml:7:3: device: missing key "
               "\"hbm_bytes\"", NULL);
    load_fails(FIXTURE("bad-syntax.yaml"), NULL, "bad-syntax.yaml:5:", NULL);
    platform p;
    /* a relative path is taken from base_dir (the workload's directory) */
    load_ok("tests/platforms/tiny.yaml", NULL, &p);
    ck_assert_str_eq(p.source, CP_SRCDIR "/tests/platforms/tiny.yaml");
    ck_assert_double_eq(p.peak_flops[DT_FP16], 0);
    ck_assert_double_eq(p.spine.bandwidth, 10e9);
    ck_assert_int_eq(p.sm_count, 0);
    ck_assert_double_eq(p.allreduce_oneshot_max, 0);
}
END_TEST

/* ---- generated SimGrid platforms ---------------------------------------------- */

static void h100_routes(void)
{
    expect_route("n0g1", "n0g6", "fab_n0g1_UP fab_n0g6_DOWN", 2e-6, 450e9 * 0.8);
    expect_route("n0g6", "n0g1", "fab_n0g6_UP fab_n0g1_DOWN", 2e-6, 450e9 * 0.8);
    expect_route("n1g7", "n1g0", "fab_n1g7_UP fab_n1g0_DOWN", 2e-6, 450e9 * 0.8);
    expect_route("n0g3", "n1g5", "nic_n0g3_UP spine_n0_n1 nic_n1g5_DOWN", 3e-6, 50e9 * 0.94);
    expect_route("n1g5", "n0g3", "nic_n1g5_UP spine_n0_n1 nic_n0g3_DOWN", 3e-6, 50e9 * 0.94);

    /* 1 GB over NVLink: latency + size / bandwidth */
    xfer one, two[2], both[2], inter[2];
    xfer_start(&one, "n0g0", "n0g1", 1e9);
    simgrid_run();
    expect_time(one.end, 2e-6 + 1e9 / (450e9 * 0.8), "1 GB n0g0 -> n0g1");
    /* two senders into one port share its DOWN direction */
    double t0 = simgrid_get_clock();
    xfer_start(&two[0], "n0g4", "n0g3", 1e9);
    xfer_start(&two[1], "n0g5", "n0g3", 1e9);
    simgrid_run();
    expect_time(two[0].end - t0, 2e-6 + 2e9 / (450e9 * 0.8), "n0g4 -> n0g3 sharing the port");
    expect_time(two[1].end - t0, 2e-6 + 2e9 / (450e9 * 0.8), "n0g5 -> n0g3 sharing the port");
    /* both directions of one port at full rate (SPLITDUPLEX) */
    t0 = simgrid_get_clock();
    xfer_start(&both[0], "n0g6", "n0g7", 1e9);
    xfer_start(&both[1], "n0g7", "n0g6", 1e9);
    simgrid_run();
    expect_time(both[0].end - t0, 2e-6 + 1e9 / (450e9 * 0.8), "n0g6 -> n0g7 duplex");
    expect_time(both[1].end - t0, 2e-6 + 1e9 / (450e9 * 0.8), "n0g7 -> n0g6 duplex");
    /* between nodes, each GPU has its own NIC and no spine link is shared */
    t0 = simgrid_get_clock();
    xfer_start(&inter[0], "n0g1", "n1g1", 1e9);
    xfer_start(&inter[1], "n0g2", "n1g2", 1e9);
    simgrid_run();
    expect_time(inter[0].end - t0, 3e-6 + 1e9 / (50e9 * 0.94), "n0g1 -> n1g1");
    expect_time(inter[1].end - t0, 3e-6 + 1e9 / (50e9 * 0.94), "n0g2 -> n1g2");
}

START_TEST(test_platform_xml_h100)
{
    platform p;
    load_ok("h100-sxm-8", NULL, &p);
    p.nodes = 2;
    char xml[64];
    write_tmp_xml(&p, xml, sizeof xml);
    in_simgrid(xml, h100_routes);
}
END_TEST

static void a3_routes(void)
{
    /* dies of one package: the SIO link */
    expect_route("n0g0", "n0g1", "pkg_n0_0_1_UP", 0.2e-6, 224e9 * 0.7);
    expect_route("n0g1", "n0g0", "pkg_n0_0_1_DOWN", 0.2e-6, 224e9 * 0.7);
    expect_route("n1g14", "n1g15", "pkg_n1_14_15_UP", 0.2e-6, 224e9 * 0.7);
    /* different packages: two UB switch ports */
    expect_route("n0g1", "n0g2", "fab_n0g1_UP fab_n0g2_DOWN", 0.5e-6, 196e9 * 0.7);
    expect_route("n0g15", "n0g0", "fab_n0g15_UP fab_n0g0_DOWN", 0.5e-6, 196e9 * 0.7);
    /* different nodes: RoCE */
    expect_route("n0g10", "n1g2", "nic_n0g10_UP spine_n0_n1 nic_n1g2_DOWN", 5.5e-6,
                 24.5e9 * 0.7);
    xfer one;
    xfer_start(&one, "n0g2", "n0g3", 1e9);
    simgrid_run();
    expect_time(one.end, 0.2e-6 + 1e9 / (224e9 * 0.7), "1 GB over SIO");
}

START_TEST(test_platform_xml_a3)
{
    platform p;
    load_ok("ascend-a3-16", NULL, &p);
    p.nodes = 2;
    char xml[64];
    write_tmp_xml(&p, xml, sizeof xml);
    in_simgrid(xml, a3_routes);
}
END_TEST

static void mesh_routes(void)
{
    /* a link per pair: 196 GB/s over 7 peers, at fabric.efficiency 0.7 */
    expect_route("n0g0", "n0g5", "mesh_n0_0_5_UP", 0.5e-6, 28e9 * 0.7);
    expect_route("n0g5", "n0g0", "mesh_n0_0_5_DOWN", 0.5e-6, 28e9 * 0.7);
    expect_route("n0g6", "n0g7", "mesh_n0_6_7_UP", 0.5e-6, 28e9 * 0.7);
    /* all-to-all from one device: 7 links in parallel, no shared port */
    xfer out[7];
    char dst[8][16];
    for (int j = 1; j < 8; j++) {
        snprintf(dst[j], sizeof dst[j], "n0g%d", j);
        xfer_start(&out[j - 1], "n0g0", dst[j], 1e9);
    }
    simgrid_run();
    for (int j = 0; j < 7; j++)
        expect_time(out[j].end, 0.5e-6 + 1e9 / (28e9 * 0.7), "1 GB to each mesh peer");
}

START_TEST(test_platform_xml_910b)
{
    platform p;
    load_ok("ascend-910b-8", NULL, &p);
    char xml[64];
    write_tmp_xml(&p, xml, sizeof xml);
    in_simgrid(xml, mesh_routes);
}
END_TEST

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void grouped_routes(void)
{
    /* 130 nodes: groups of 64 nodes; same latency and bandwidth inside a
     * group and across groups */
    expect_route("n0g0", "n63g7", "nic_n0g0_UP spine_n0_n63 nic_n63g7_DOWN", 3e-6,
                 50e9 * 0.94);
    expect_route("n0g0", "n129g7", "nic_n0g0_UP spine_n0 xg_0_2 spine_n129 nic_n129g7_DOWN",
                 3e-6, 50e9 * 0.94);
    expect_route("n129g7", "n64g1", "nic_n129g7_UP spine_n129 xg_1_2 spine_n64 nic_n64g1_DOWN",
                 3e-6, 50e9 * 0.94);
    expect_route("n129g3", "n129g4", "fab_n129g3_UP fab_n129g4_DOWN", 2e-6, 450e9 * 0.8);
    EXPECT(sg_host_count() == 1040, "%zu hosts", sg_host_count());
}

START_TEST(test_platform_xml_large)
{
    platform p;
    load_ok("h100-sxm-8", NULL, &p);
    p.nodes = 130;
    char xml[64];
    write_tmp_xml(&p, xml, sizeof xml);
    in_simgrid(xml, grouped_routes);
}
END_TEST

static void nothing(void)
{
    EXPECT(sg_host_count() == 1024, "%zu hosts", sg_host_count());
}

/* 128 nodes x 8 devices: write and load (simgrid-notes.md 0.3: 0.08-0.17 s). */
START_TEST(test_platform_xml_speed)
{
    platform p;
    load_ok("h100-sxm-8", NULL, &p);
    p.nodes = 128;
    double t0 = now();
    char xml[64];
    write_tmp_xml(&p, xml, sizeof xml);
    in_simgrid(xml, nothing);
    double t = now() - t0;
    if (!RUNNING_ON_VALGRIND)
        ck_assert_msg(t < 1.0, "write + load of 128 x 8 took %.3f s", t);
}
END_TEST

/* ---- a platform cut to its first devices (plat_first_devices) ----------------- */

/* What the SimGrid children of test_platform_cut_routes_as_whole look at. */
static struct {
    platform p;          /* the whole platform */
    int block;           /* devices per block of the disjointness check */
    int cut;             /* devices of the cut platform */
    char out[64];        /* where a child writes the compared routes */
    sg_host_t *host;     /* [devices] by device index, in the child */
} cutq;

static void cut_hosts(int n)
{
    cutq.host = malloc((size_t)n * sizeof *cutq.host);
    EXPECT(cutq.host, "out of memory");
    for (int d = 0; d < n; d++) {
        char name[64];
        plat_host_name(&cutq.p, d, name, sizeof name);
        cutq.host[d] = sg_host_by_name(name);
        EXPECT(cutq.host[d], "no host %s", name);
    }
}

/* The routes of the cut's devices that are compared, one line each (link
 * names, latency, bottleneck bandwidth): every pair of one block, and
 * device 0 of each node to device 0 of every other node. */
static void cut_routes(void)
{
    FILE *f = fopen(cutq.out, "w");
    EXPECT(f, "cannot write %s", cutq.out);
    int dpn = cutq.p.devices_per_node;
    xbt_dynar_t list = xbt_dynar_new(sizeof(sg_link_t), NULL);
    for (int a = 0; a < cutq.cut; a++)
        for (int b = 0; b < cutq.cut; b++) {
            if (a == b || (a / cutq.block != b / cutq.block && (a % dpn || b % dpn)))
                continue;
            xbt_dynar_reset(list);
            sg_host_get_route(cutq.host[a], cutq.host[b], list);
            fprintf(f, "%d %d", a, b);
            unsigned i;
            sg_link_t l;
            xbt_dynar_foreach (list, i, l)
                fprintf(f, " %s", sg_link_get_name(l));
            fprintf(f, " %.17g %.17g\n", sg_host_get_route_latency(cutq.host[a], cutq.host[b]),
                    sg_host_get_route_bandwidth(cutq.host[a], cutq.host[b]));
        }
    xbt_dynar_free(&list);
    EXPECT(fclose(f) == 0, "cannot write %s", cutq.out);
}

static void cut_child(void)
{
    int want = (cutq.cut + cutq.p.devices_per_node - 1) / cutq.p.devices_per_node;
    EXPECT((int)sg_host_count() == want * cutq.p.devices_per_node, "%zu hosts, want %d nodes",
           sg_host_count(), want);
    cut_hosts(cutq.cut);
    cut_routes();
    free(cutq.host);
}

typedef struct link_use {
    sg_link_t link;
    int block;
} link_use;

static int link_use_cmp(const void *a, const void *b)
{
    const link_use *x = a, *y = b;
    if (x->link != y->link)
        return (uintptr_t)x->link < (uintptr_t)y->link ? -1 : 1;
    return x->block - y->block;
}

/* On the whole platform: the cut's routes, and no link on the routes of
 * two blocks. */
static void whole_child(void)
{
    int nd = plat_devices(&cutq.p);
    cut_hosts(nd);
    cut_routes();
    size_t n = 0, cap = 1024;
    link_use *use = malloc(cap * sizeof *use);
    xbt_dynar_t list = xbt_dynar_new(sizeof(sg_link_t), NULL);
    for (int a = 0; a < nd; a++)
        for (int b = a / cutq.block * cutq.block; b < (a / cutq.block + 1) * cutq.block; b++) {
            if (a == b)
                continue;
            xbt_dynar_reset(list);
            sg_host_get_route(cutq.host[a], cutq.host[b], list);
            unsigned i;
            sg_link_t l;
            xbt_dynar_foreach (list, i, l) {
                if (n == cap)
                    use = realloc(use, (cap *= 2) * sizeof *use);
                EXPECT(use, "out of memory");
                use[n++] = (link_use){l, a / cutq.block};
            }
        }
    xbt_dynar_free(&list);
    qsort(use, n, sizeof *use, link_use_cmp);
    for (size_t k = 1; k < n; k++)
        EXPECT(use[k].link != use[k - 1].link || use[k].block == use[k - 1].block,
               "link %s serves blocks %d and %d", sg_link_get_name(use[k].link),
               use[k - 1].block, use[k].block);
    free(use);
    free(cutq.host);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    for (int c; (c = fgetc(f)) != EOF;)
        fputc(c, m);
    fclose(f);
    fclose(m);
    return buf;
}

/* The contract of plat_first_devices (platform.h) that shared DP replicas
 * rest on (sim/engine/engine.c): on the grouped layout (129 nodes, a cut of
 * 66 that ends in a partial group, blocks of 3 nodes across the group
 * borders), the package and switch tiers (blocks of 4 devices of an A3
 * node) and the mesh (pairs of a 910B node), the cut platform holds the
 * cut's nodes and routes them as the whole one, and no link of the whole
 * one serves two blocks. */
START_TEST(test_platform_cut_routes_as_whole)
{
    static const struct {
        const char *preset;
        int nodes, block, cut;
    } cases[] = {{"h100-sxm-8", 129, 24, 66 * 8}, {"h100-sxm-8", 4, 8, 8},
                 {"ascend-a3-16", 3, 4, 16}, {"ascend-910b-8", 2, 2, 8}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        load_ok(cases[c].preset, NULL, &cutq.p);
        cutq.p.nodes = cases[c].nodes;
        cutq.block = cases[c].block;
        cutq.cut = cases[c].cut;
        platform cut = plat_first_devices(&cutq.p, cutq.cut);
        ck_assert_int_eq(cut.nodes, (cutq.cut + cut.devices_per_node - 1) / cut.devices_per_node);
        char xml[64], whole[64];
        snprintf(whole, sizeof whole, "/tmp/check_platform_cut_XXXXXX");
        int fd = mkstemp(whole);
        ck_assert_int_ge(fd, 0);
        close(fd);
        snprintf(cutq.out, sizeof cutq.out, "%s", whole);
        write_tmp_xml(&cutq.p, xml, sizeof xml);
        in_simgrid(xml, whole_child);
        char *a = slurp(whole);
        write_tmp_xml(&cut, xml, sizeof xml);
        in_simgrid(xml, cut_child);
        char *b = slurp(whole);
        unlink(whole);
        ck_assert_msg(strlen(a) > 0 && strcmp(a, b) == 0, "%s, %d nodes: the cut to %d devices "
                      "routes otherwise", cases[c].preset, cases[c].nodes, cutq.cut);
        free(a);
        free(b);
    }
}
END_TEST

/* ---- raw SimGrid platforms ------------------------------------------------------- */

START_TEST(test_platform_raw_ok)
{
    platform p;
    load_ok(FIXTURE("raw-ok.xml"), NULL, &p);
    ck_assert_int_eq(p.raw_xml, 1);
    ck_assert_str_eq(p.source, FIXTURE("raw-ok.xml"));
    ck_assert_int_eq(p.nodes, 2);
    ck_assert_int_eq(p.devices_per_node, 2);
    static const char *const order[] = {"a-gpu2", "a-gpu10", "b-gpu2", "b-gpu10"};
    for (int d = 0; d < 4; d++) {
        char name[32];
        plat_host_name(&p, d, name, sizeof name);
        ck_assert_str_eq(name, order[d]);
    }
    ck_assert_double_eq(p.peak_flops[DT_BF16], 100e12);
    ck_assert_double_eq(p.peak_flops[DT_FP16], 100e12);
    ck_assert_double_eq(p.peak_flops[DT_FP8], 0);
    ck_assert_double_eq(p.hbm_bytes, 16e9);
    ck_assert_double_eq(p.hbm_bw, 1e12);
    ck_assert_str_eq(p.calibration, "h200");
    /* what the file does not say is the h200-sxm-8 preset's, field by
     * field (platform_xml.c read_device) */
    platform h200;
    load_ok("h200-sxm-8", NULL, &h200);
    ck_assert_double_eq(p.launch_eager, h200.launch_eager);
    ck_assert_double_eq(p.launch_graph, h200.launch_graph);
    ck_assert_double_eq(p.coll_latency_eager, h200.coll_latency_eager);
    ck_assert_double_eq(p.coll_latency_graph, h200.coll_latency_graph);
    ck_assert_double_eq(p.eff_gemm, h200.eff_gemm);
    ck_assert_double_eq(p.eff_attention, h200.eff_attention);
    ck_assert_double_eq(p.eff_memory, h200.eff_memory);
    ck_assert_double_eq(p.intra.efficiency, h200.intra.efficiency);
    ck_assert_double_eq(p.nic.efficiency, h200.nic.efficiency);
    ck_assert_double_eq(p.allreduce_oneshot_max, h200.allreduce_oneshot_max);
    ck_assert_double_eq(p.reserved_bytes, h200.reserved_bytes);
    ck_assert_double_eq(p.workspace_bytes, h200.workspace_bytes);
    ck_assert_double_eq(p.eff_gemm, 0.737); /* the preset's value today */
    ck_assert_double_eq(p.vector_flops, 100e12 / 14.8);
    /* links from the file's routes: every route is the 10 GB/s, 1 us bus */
    ck_assert_double_eq(p.intra.bandwidth, 10e9);
    ck_assert_double_eq(p.intra.latency, 1e-6);
    ck_assert_double_eq(p.nic.bandwidth, 10e9);
    ck_assert_double_eq(p.nic.latency + p.spine.latency, 1e-6);
    cp_err err = {0};
    ck_assert_int_eq(plat_write_xml(&p, stdout, &err), -1);
    ck_assert_int_eq(err.code, CP_EXIT_INTERNAL);
    /* the dump says what it is */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    plat_dump(&p, f);
    fclose(f);
    ck_assert_msg(strstr(buf, "# raw SimGrid platform") && strstr(buf, "nodes: 2") &&
                  strstr(buf, "inside a node 1e+10 B/s, 1e-06 s"), "%s", buf);
    free(buf);
}
END_TEST

/* A generated platform is also a raw one: same devices, same order
 * (n0g2 before n0g10), node 10's "node" prop an integer (it was "1e+01",
 * which the reader refused). */
START_TEST(test_platform_raw_roundtrip)
{
    platform a, b;
    load_ok("ascend-a3-16", NULL, &a);
    a.nodes = 11;
    snprintf(a.device, sizeof a.device, "die \"A&B\" <x>");
    char xml[64];
    write_tmp_xml(&a, xml, sizeof xml);
    load_ok(xml, NULL, &b);
    unlink(xml);
    ck_assert_int_eq(b.nodes, 11);
    ck_assert_int_eq(b.devices_per_node, 16);
    for (int d = 0; d < 11 * 16; d++) {
        char got[32], want[32];
        plat_host_name(&a, d, want, sizeof want);
        plat_host_name(&b, d, got, sizeof got);
        ck_assert_str_eq(got, want);
    }
    ck_assert_mem_eq(b.peak_flops, a.peak_flops, sizeof a.peak_flops);
    ck_assert_double_eq(b.vector_flops, a.vector_flops);
    ck_assert_double_eq(b.hbm_bytes, a.hbm_bytes);
    ck_assert_double_eq(b.hbm_bw, a.hbm_bw);
    ck_assert_double_eq(b.launch_eager, a.launch_eager);
    ck_assert_double_eq(b.launch_graph, a.launch_graph);
    ck_assert_double_eq(b.coll_latency_eager, a.coll_latency_eager);
    ck_assert_double_eq(b.coll_latency_graph, a.coll_latency_graph);
    ck_assert_double_eq(b.eff_gemm, a.eff_gemm);
    ck_assert_double_eq(b.eff_attention, a.eff_attention);
    ck_assert_double_eq(b.eff_memory, a.eff_memory);
    /* the generated links run at bandwidth * efficiency: read back as raw
     * links of that rate, which carry no further efficiency */
    ck_assert_double_eq(b.intra.efficiency, 1.0);
    ck_assert_double_eq(b.allreduce_oneshot_max, a.allreduce_oneshot_max);
    /* the engine's memory of the preset (Ascend: 1.6e9), not the defaults */
    ck_assert_double_eq(b.reserved_bytes, a.reserved_bytes);
    ck_assert_double_eq(b.workspace_bytes, a.workspace_bytes);
    ck_assert_int_eq(b.sm_count, a.sm_count);
    ck_assert_str_eq(b.device, a.device);
    /* from the routes: the UB fabric (slower than SIO) and RoCE */
    ck_assert_double_eq(b.intra.bandwidth, a.intra.bandwidth * a.intra.efficiency);
    ck_assert_double_eq(b.intra.latency, a.intra.latency);
    ck_assert_double_eq(b.nic.bandwidth, a.nic.bandwidth * a.nic.efficiency);
    ck_assert_double_eq_tol(b.nic.latency + b.spine.latency, a.nic.latency + a.spine.latency,
                            1e-18);
}
END_TEST

START_TEST(test_platform_raw_broken)
{
    load_fails(FIXTURE("raw-malformed.xml"), NULL,
               "raw-malformed.xml: SimGrid refused the platform: Parse error at ",
               "raw-malformed.xml:13");
    load_fails(FIXTURE("raw-noprop.xml"), NULL,
               "raw-noprop.xml: host \"g1\" lacks property \"hbm_bytes\"", NULL);
    /* the same message every time (the probe's progress used to be reset
     * after the fork, racing with the child) */
    for (int k = 0; k < 20; k++)
        load_fails(FIXTURE("raw-noroute.xml"), NULL, "raw-noroute.xml: SimGrid refused the "
                   "platform: no route from host \"g0\" to host \"g1\"", NULL);
    load_fails("nope.xml", NULL, "nope.xml: cannot read the SimGrid platform", NULL);
}
END_TEST

/* Broken raw platforms written on the fly: bad prop values and layouts. */
static void raw_text_fails(const char *hosts, const char *want)
{
    char path[] = "/tmp/check_platform_XXXXXX.xml";
    int fd = mkstemps(path, 4);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "<?xml version='1.0'?>\n"
            "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
            "<platform version=\"4.1\"><zone id=\"w\" routing=\"Full\">\n%s"
            "<link id=\"l\" bandwidth=\"1GBps\" latency=\"1us\"/>\n"
            "<route src=\"a\" dst=\"b\"><link_ctn id=\"l\"/></route>\n"
            "<route src=\"a\" dst=\"c\"><link_ctn id=\"l\"/></route>\n"
            "<route src=\"b\" dst=\"c\"><link_ctn id=\"l\"/></route>\n"
            "</zone></platform>\n", hosts);
    fclose(f);
    load_fails(path, NULL, want, NULL);
    unlink(path);
}

#define RAW_HOST(id, props)                                                        \
    "<host id=\"" id "\" speed=\"1Gf\"><prop id=\"peak_bf16_flops\" value=\"1e12\"/>" \
    "<prop id=\"hbm_bytes\" value=\"1e9\"/><prop id=\"hbm_bandwidth\" value=\"1e11\"/>" \
    props "</host>\n"

START_TEST(test_platform_raw_values)
{
    raw_text_fails(RAW_HOST("a", "<prop id=\"launch_eager\" value=\"-1\"/>") RAW_HOST("b", "")
                   RAW_HOST("c", ""), "host \"a\": property \"launch_eager\" = \"-1\" is not "
                   "a number in [0, 1]");
    raw_text_fails(RAW_HOST("a", "<prop id=\"link_efficiency\" value=\"0\"/>")
                   RAW_HOST("b", "") RAW_HOST("c", ""), "host \"a\": property "
                   "\"link_efficiency\" = \"0\" is not a number in [0.001, 1]");
    raw_text_fails(RAW_HOST("a", "<prop id=\"hbm_bandwith\" value=\"1\"/>") RAW_HOST("b", "")
                   RAW_HOST("c", ""), "host \"a\": unknown property \"hbm_bandwith\" (did you "
                   "mean \"hbm_bandwidth\"?)");
    /* SimGrid keeps one of two values silently: refused, with the line */
    raw_text_fails(RAW_HOST("a", "") RAW_HOST("b", "<!-- <prop id=\"hbm_bytes\"> -->"
                                                  "<prop id=\"hbm_bytes\" value=\"2e9\"/>")
                   RAW_HOST("c", ""), ".xml:5:1: host \"b\": property \"hbm_bytes\" given twice");
    raw_text_fails(RAW_HOST("a", "<prop id=\"node\" value=\"1\"/>") RAW_HOST("b", "")
                   RAW_HOST("c", ""), "must fill nodes 0..1 equally");
    raw_text_fails(RAW_HOST("a", "<prop id=\"rank\" value=\"0\"/>") RAW_HOST("b", "")
                   RAW_HOST("c", ""), "property \"rank\" is on 1 of the 3 devices");
    raw_text_fails(RAW_HOST("a", "<prop id=\"rank\" value=\"0\"/>")
                   RAW_HOST("b", "<prop id=\"rank\" value=\"0\"/>")
                   RAW_HOST("c", "<prop id=\"rank\" value=\"2\"/>"),
                   "device ranks must be 0..2, each once");
    raw_text_fails(RAW_HOST("a", "") RAW_HOST("b", "<prop id=\"sm_count\" value=\"7\"/>")
                   RAW_HOST("c", ""), "host \"b\" differs from host \"a\" in device "
                   "properties; cpsim needs identical devices");
    raw_text_fails(RAW_HOST("a", "<prop id=\"calibration\" value=\"x9\"/>")
                   RAW_HOST("b", "<prop id=\"calibration\" value=\"x9\"/>")
                   RAW_HOST("c", "<prop id=\"calibration\" value=\"x9\"/>"),
                   "no calibration profile \"x9\"");
    raw_text_fails("<host id=\"a\" speed=\"1Gf\"/><host id=\"b\" speed=\"1Gf\"/>"
                   "<host id=\"c\" speed=\"1Gf\"/>", "no host carries the property "
                   "\"peak_bf16_flops\"");
}
END_TEST

/* The integer prop `rank` orders the devices. */
START_TEST(test_platform_raw_rank)
{
    char path[] = "/tmp/check_platform_XXXXXX.xml";
    int fd = mkstemps(path, 4);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "<?xml version='1.0'?>\n"
            "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
            "<platform version=\"4.1\"><zone id=\"w\" routing=\"Full\">\n"
            RAW_HOST("a", "<prop id=\"rank\" value=\"2\"/><prop id=\"node\" value=\"1\"/>")
            RAW_HOST("b", "<prop id=\"rank\" value=\"0\"/>")
            RAW_HOST("c", "<prop id=\"rank\" value=\"1\"/>")
            RAW_HOST("d", "<prop id=\"rank\" value=\"3\"/><prop id=\"node\" value=\"1\"/>")
            "<link id=\"l\" bandwidth=\"1GBps\" latency=\"1us\"/>\n"
            "<route src=\"a\" dst=\"b\"><link_ctn id=\"l\"/></route>\n"
            "<route src=\"a\" dst=\"c\"><link_ctn id=\"l\"/></route>\n"
            "<route src=\"a\" dst=\"d\"><link_ctn id=\"l\"/></route>\n"
            "<route src=\"b\" dst=\"c\"><link_ctn id=\"l\"/></route>\n"
            "<route src=\"b\" dst=\"d\"><link_ctn id=\"l\"/></route>\n"
            "<route src=\"c\" dst=\"d\"><link_ctn id=\"l\"/></route>\n"
            "</zone></platform>\n");
    fclose(f);
    platform p;
    load_ok(path, NULL, &p);
    unlink(path);
    ck_assert_int_eq(p.nodes, 2);
    ck_assert_int_eq(p.devices_per_node, 2);
    static const char *const order[] = {"b", "c", "a", "d"};
    for (int d = 0; d < 4; d++) {
        char name[8];
        plat_host_name(&p, d, name, sizeof name);
        ck_assert_str_eq(name, order[d]);
    }
}
END_TEST

static Suite *platform_suite(void)
{
    Suite *s = suite_create("platform");
    TCase *presets_tc = tcase_create("Presets");
    tcase_add_test(presets_tc, test_platform_bundled_files);
    tcase_add_test(presets_tc, test_platform_presets);
    tcase_add_test(presets_tc, test_platform_dump_roundtrip);
    tcase_add_test(presets_tc, test_platform_host_name);
    suite_add_tcase(s, presets_tc);
    TCase *ov = tcase_create("Overrides");
    tcase_add_test(ov, test_platform_overrides);
    tcase_add_test(ov, test_platform_override_errors);
    tcase_add_test(ov, test_platform_file_errors);
    suite_add_tcase(s, ov);
    TCase *xml = tcase_create("SimGrid");
    tcase_set_timeout(xml, 120);
    tcase_add_test(xml, test_platform_xml_h100);
    tcase_add_test(xml, test_platform_xml_a3);
    tcase_add_test(xml, test_platform_xml_910b);
    tcase_add_test(xml, test_platform_xml_large);
    tcase_add_test(xml, test_platform_xml_speed);
    tcase_add_test(xml, test_platform_cut_routes_as_whole);
    suite_add_tcase(s, xml);
    TCase *raw = tcase_create("Raw");
    tcase_set_timeout(raw, 120);
    tcase_add_test(raw, test_platform_raw_ok);
    tcase_add_test(raw, test_platform_raw_roundtrip);
    tcase_add_test(raw, test_platform_raw_broken);
    tcase_add_test(raw, test_platform_raw_values);
    tcase_add_test(raw, test_platform_raw_rank);
    suite_add_tcase(s, raw);
    return s;
}

int main(void)
{
    setenv("CPSIM_DATADIR", CP_SRCDIR, 1);
    SRunner *sr = srunner_create(platform_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
