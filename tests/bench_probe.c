/* bench_probe (make bench): raw SimGrid, no cpsim inside, for the ceiling
 * cpsim's engine is measured against (issue 13 part 6).  P actors on P
 * hosts of one cluster (a private link per host and a backbone) pass a
 * message round a ring for R rounds: each round every actor posts a put to
 * its successor's mailbox and waits for its predecessor's, so the run has
 * P x R communications.  Prints one line:
 *   probe P=<P> rounds=<R> comms=<n> wall_s=<s> us_per_comm=<us> comms_per_s=<n>
 * Usage: bench_probe P [ROUNDS]  (one platform per process: one P a run).
 */
#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xbt/log.h>

static int P, R;
static char token[] = "t";

static void ring_actor(int argc, char **argv)
{
    (void)argc;
    int me = atoi(argv[1]);
    char to[32], from[32];
    snprintf(to, sizeof to, "m%d", (me + 1) % P);
    snprintf(from, sizeof from, "m%d", me);
    sg_mailbox_t out = sg_mailbox_by_name(to), in = sg_mailbox_by_name(from);
    for (int k = 0; k < R; k++) {
        /* 1 MiB, an NCCL chunk's order of size */
        sg_comm_t c = sg_mailbox_put_async(out, token, 1048576.0);
        sg_mailbox_get(in);
        sg_comm_wait(c);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2 || (P = atoi(argv[1])) < 2) {
        fprintf(stderr, "usage: bench_probe P [ROUNDS]  (P >= 2)\n");
        return 2;
    }
    R = argc > 2 ? atoi(argv[2]) : 0;
    if (R <= 0)
        R = P >= 200000 ? 1 : 200000 / P; /* about 200,000 comms a run */
    char path[] = "/tmp/cpsim-probe-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        perror("bench_probe: platform file");
        return 1;
    }
    /* H100 SXM figures (models-hardware.md 3.1: NVLink 450 GB/s a way); the
     * probe's times do not matter, only the simulator's cost per event */
    fprintf(f, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM "
               "\"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n"
               "<cluster id=\"c\" prefix=\"h\" suffix=\"\" radical=\"0-%d\" speed=\"1e15f\" "
               "bw=\"450GBps\" lat=\"1us\" bb_bw=\"100TBps\" bb_lat=\"1us\"/>\n</platform>\n",
            P - 1);
    fclose(f);
    int one = 1;
    char *args[] = {argv[0], NULL};
    xbt_log_control_set("root.thres:warning");
    simgrid_init(&one, args);
    simgrid_load_platform(path);
    unlink(path);
    for (int i = 0; i < P; i++) {
        char host[32], name[32], idx[16];
        snprintf(host, sizeof host, "h%d", i);
        snprintf(name, sizeof name, "a%d", i);
        snprintf(idx, sizeof idx, "%d", i);
        char *av[] = {name, idx};
        sg_actor_create(name, sg_host_by_name(host), ring_actor, 2, av);
    }
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    simgrid_run();
    clock_gettime(CLOCK_MONOTONIC, &w1);
    double wall = (double)(w1.tv_sec - w0.tv_sec) + 1e-9 * (double)(w1.tv_nsec - w0.tv_nsec);
    double comms = (double)P * R;
    printf("probe P=%d rounds=%d comms=%.0f wall_s=%.4f us_per_comm=%.3f comms_per_s=%.0f\n", P,
           R, comms, wall, 1e6 * wall / comms, comms / wall);
    return 0;
}
