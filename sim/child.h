/* child: run one scenario in a child process.
 *
 * SimGrid runs one simulation per process, so every scenario of a
 * comparison or a sweep runs in a fork of its own.  The child runs the
 * pipeline (pipeline.h) and writes one line to a pipe: the summary JSON, or
 * {"error": "<message>", "exit": <code>}.  A child that dies (a crash, an
 * abort inside SimGrid, a signal) is reported by the parent; nothing the
 * child does can take the parent down.
 */
#ifndef CP_CHILD_H
#define CP_CHILD_H

#include <sys/types.h>

#include "sim/pipeline.h"

typedef struct child_proc {
    pid_t pid;
    int fd;          /* read end of the child's pipe */
} child_proc;

/* Start a child for rq.  -1 with err when fork or pipe fail. */
int child_spawn(const pipe_req *rq, child_proc *cp, cp_err *err);

/* Same for a scenario and plan already prepared in this process: the child
 * inherits them and only simulates (pipeline_simulate).  The caller keeps
 * and frees s and p. */
int child_spawn_prepared(const pipe_req *rq, const scenario *s, const plan *p, child_proc *cp,
                         cp_err *err);

/* Read the child's line (blocking), reap it and return its outcome: 0 when it
 * produced a summary (*summary set, caller decrefs), else -1 with err naming
 * the failure (the child's own message, or how it died) and its exit code. */
int child_finish(child_proc *cp, json_t **summary, cp_err *err);

/* spawn + finish. */
int child_run(const pipe_req *rq, json_t **summary, cp_err *err);

#endif
