/* driver_child: one scenario per child process (see driver.h). */
#include "sim/driver/driver.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/proc.h"
#include "sim/engine/engine.h"

/* Write all of buf to fd. */
static int write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The child: run (or, with s and p, simulate), report one line, exit
 * without returning to the caller. */
static void child_main(const drv_req *rq, const scenario *s, const plan *p, int fd)
{
    static char arg0[] = "cpsim";
    char *argv[] = {arg0, NULL};
    int argc = 1;
    cp_err err = {0};
    json_t *summary = NULL;
    eng_init(&argc, argv);
    /* the terminal's interrupt reaches the whole process group: the parent
     * decides (it kills its children unrecorded, sweep_exec); SimGrid's own
     * handler, installed by eng_init, would exit(1) and read as a failure */
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    json_t *line;
    int code = 0;
    int rc = s && p ? drv_simulate(rq, s, p, &summary, NULL, &err)
                    : drv_run(rq, &summary, NULL, &err);
    if (rc == 0) {
        line = summary;
    } else {
        code = err.code ? err.code : CP_EXIT_INTERNAL;
        line = json_pack("{s:s, s:i}", "error", err.msg, "exit", code);
    }
    char *text = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(line);
    int bad = !text || write_all(fd, text, strlen(text)) != 0 || write_all(fd, "\n", 1) != 0;
    free(text);
    close(fd);
    _exit(bad ? CP_EXIT_INTERNAL : code);
}

static int spawn(const drv_req *rq, const scenario *s, const plan *p, drv_child *cp,
                 cp_err *err)
{
    int fds[2];
    if (pipe(fds) != 0)
        return cp_fail(err, CP_EXIT_INTERNAL, "cannot create a pipe: %s", strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return cp_fail(err, CP_EXIT_INTERNAL, "cannot fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        child_main(rq, s, p, fds[1]);
    }
    close(fds[1]);
    cp->pid = pid;
    cp->fd = fds[0];
    return 0;
}

int drv_spawn(const drv_req *rq, drv_child *cp, cp_err *err)
{
    return spawn(rq, NULL, NULL, cp, err);
}

int drv_spawn_prepared(const drv_req *rq, const scenario *s, const plan *p, drv_child *cp,
                         cp_err *err)
{
    return spawn(rq, s, p, cp, err);
}

int drv_finish(drv_child *cp, json_t **summary, cp_err *err)
{
    *summary = NULL;
    char *text = cp_read_all(cp->fd, NULL);
    close(cp->fd);
    int status = cp_wait(cp->pid);
    json_error_t je;
    json_t *j = text[0] ? json_loads(text, 0, &je) : NULL;
    free(text);
    if (j && !json_object_get(j, "error") && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        *summary = j;
        return 0;
    }
    if (j && json_object_get(j, "error")) {
        int code = (int)json_integer_value(json_object_get(j, "exit"));
        cp_fail(err, code ? code : CP_EXIT_INTERNAL, "%s",
                json_string_value(json_object_get(j, "error")));
    } else if (WIFSIGNALED(status)) {
        cp_fail(err, CP_EXIT_INTERNAL, "the simulation process died of signal %d (%s)",
                WTERMSIG(status), strsignal(WTERMSIG(status)));
    } else {
        cp_fail(err, CP_EXIT_INTERNAL, "the simulation process exited with status %d "
                "without a result", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    json_decref(j);
    return -1;
}

int drv_child_run(const drv_req *rq, json_t **summary, cp_err *err)
{
    drv_child cp;
    if (drv_spawn(rq, &cp, err) != 0)
        return -1;
    return drv_finish(&cp, summary, err);
}
