/* bench_collectives: simulation speed of the collectives on SimGrid.
 *
 * A ring all-gather storm: every rank of the world runs `calls` back-to-back
 * all-gathers of `bytes` over all ranks (P(P-1) messages per call) on the
 * h100-sxm-8 preset (8 devices per node, P/8 nodes) in graph mode (the
 * preset has no calibration profile: its graph collective latency is the
 * fixed overhead of every call).  Prints wall time of simgrid_run(),
 * simulated messages and messages per wall second (simgrid-notes.md section 3: raw SimGrid does
 * 100-330 k/s on this machine; our target is >= 100 k/s).
 *
 *   bench_collectives                 P = 8, 64, 256, one process each
 *   bench_collectives P CALLS [BYTES] one configuration
 *
 * Exits non-zero when a rank did not finish or the message count is wrong.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <xbt/config.h>
#include <xbt/log.h>

#include "collectives/coll.h"
#include "collectives/sg_transport.h"

static struct bench {
    coll_model model;
    int *members;
    int n, calls;
    double bytes;
    int finished;
} B;

static void rank_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    sgt_ctx *c = sg_actor_self_get_data();
    tr_port tp = sgt_port(c);
    coll_call call = {.kind = CK_ALL_GATHER, .alg = ALG_RING, .members = B.members, .n = B.n,
                      .me = c->rank, .bytes = B.bytes, .graph = 1};
    for (int i = 0; i < B.calls; i++)
        if (coll_run(&tp, &B.model, &call) < 0)
            return;
    B.finished++;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* h100-sxm-8 with P ranks (P/8 nodes of 8, or one node of P < 8), written
 * as SimGrid XML to path. */
static int write_platform(int ranks, const char *path, platform *p)
{
    char text[128];
    cp_err err = {0};
    int dpn = ranks < 8 ? ranks : 8;
    snprintf(text, sizeof text, "{nodes: %d, devices_per_node: %d}", ranks / dpn, dpn);
    ydoc *doc = yio_parse_string(text, strlen(text), "bench", &err);
    int rc = doc ? plat_load("h100-sxm-8", NULL, yio_root(doc), p, &err) : -1;
    yio_free(doc);
    FILE *f = rc == 0 ? fopen(path, "w") : NULL;
    if (f) {
        rc = plat_write_xml(p, f, &err);
        fclose(f);
    }
    if (rc < 0 || !f)
        fprintf(stderr, "bench_collectives: %s\n", err.code ? err.msg : path);
    return rc < 0 || !f ? -1 : 0;
}

static int bench_one(int ranks, int calls, double bytes)
{
    char path[] = "/tmp/bench_collectives_XXXXXX";
    int fd = mkstemp(path);
    platform p;
    cp_err err = {0};
    if (fd < 0 || (close(fd), write_platform(ranks, path, &p)) < 0 ||
        coll_model_init(&B.model, &p, &err) < 0) {
        if (err.code)
            fprintf(stderr, "bench_collectives: %s\n", err.msg);
        if (fd >= 0)
            unlink(path);
        return 1;
    }
    static char arg0[] = "bench_collectives";
    static char *argv[] = {arg0, NULL};
    int argc = 1;
    xbt_log_control_set("root.thres:warning");
    simgrid_init(&argc, argv);
    sg_cfg_set_string("network/model", "CM02");
    sg_cfg_set_boolean("network/crosstraffic", "no");
    sg_cfg_set_double("network/TCP-gamma", 0);
    simgrid_load_platform(path);
    unlink(path);

    B.n = ranks;
    B.calls = calls;
    B.bytes = bytes;
    B.members = malloc((size_t)ranks * sizeof *B.members);
    sgt_ctx *ctx = malloc((size_t)ranks * sizeof *ctx);
    sgt_world *w = sgt_new(ranks, 1);
    if (!B.members || !ctx || !w)
        abort(); /* out of host memory */
    for (int r = 0; r < ranks; r++) {
        char host[64], name[32];
        B.members[r] = r;
        plat_host_name(&p, r, host, sizeof host);
        snprintf(name, sizeof name, "rank%d", r);
        sgt_ctx_init(&ctx[r], w, r, 0);
        sg_actor_t a = sg_actor_init(name, sg_host_by_name(host));
        sg_actor_set_data(a, &ctx[r]);
        sg_actor_start(a, rank_main, 0, NULL);
    }
    double t0 = wall_now();
    simgrid_run();
    double wall = wall_now() - t0;
    long msgs = sgt_messages(w);
    long want = (long)ranks * (ranks - 1) * calls;
    printf("%5d ranks %5d calls  %9ld messages  simulated %10.6f s  wall %7.3f s  "
           "%8.0f messages/s\n", ranks, calls, msgs, simgrid_get_clock(), wall, msgs / wall);
    int bad = B.finished != ranks || msgs != want;
    if (bad)
        fprintf(stderr, "bench_collectives: %d of %d ranks finished, %ld of %ld messages\n",
                B.finished, ranks, msgs, want);
    sgt_free(w);
    free(ctx);
    free(B.members);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc >= 3)
        return bench_one(atoi(argv[1]), atoi(argv[2]), argc > 3 ? atof(argv[3]) : 64e6);
    /* calls sized for ~2e5 messages each (simgrid-notes.md section 3 table) */
    static const int ranks[] = {8, 64, 256};
    static const int calls[] = {3600, 50, 3};
    int bad = 0;
    for (int i = 0; i < 3; i++) {
        fflush(stdout);
        pid_t pid = fork(); /* SimGrid allows one engine per process */
        if (pid == 0) {
            int rc = bench_one(ranks[i], calls[i], 64e6);
            fflush(stdout);
            _exit(rc);
        }
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
            bad = 1;
    }
    return bad;
}
