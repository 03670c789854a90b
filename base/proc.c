/* proc: see proc.h. */
#include "base/proc.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/grow.h"

char *cp_read_all(int fd, size_t *len_out)
{
    size_t len = 0, cap = 0;
    char *buf = NULL;
    for (;;) {
        buf = cp_grow(buf, &cap, len + 4096, 1);
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    if (len_out)
        *len_out = len;
    return buf;
}

int cp_wait(pid_t pid)
{
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        continue;
    return status;
}
