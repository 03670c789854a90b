/* proc: the child-process chores shared by the driver's children, the
 * SimGrid probe of raw XML platforms and gnuplot: everything a pipe
 * carries, and the wait that survives signals. */
#ifndef CP_PROC_H
#define CP_PROC_H

#include <stddef.h>
#include <sys/types.h>

/* Everything read from fd until its end (NUL-terminated, malloc'ed; the
 * caller frees), its length into *len when not NULL.  Aborts when the host
 * is out of memory. */
char *cp_read_all(int fd, size_t *len);

/* waitpid(pid) again after each interrupting signal; its status. */
int cp_wait(pid_t pid);

#endif
