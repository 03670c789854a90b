/* atomic: outputs appear complete or not at all (see report.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <sys/stat.h>

#include "reports/report.h"

int rep_open(rep_file *rf, const char *path, cp_err *err)
{
    memset(rf, 0, sizeof *rf);
    snprintf(rf->path, sizeof rf->path, "%s", path);
    snprintf(rf->tmp, sizeof rf->tmp, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(rf->tmp);
    if (fd < 0)
        return cp_fail(err, CP_EXIT_INPUT, "%s: cannot create output file: %s", path,
                       strerror(errno));
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask); /* mkstemp makes 0600; outputs are ordinary files */
    rf->f = fdopen(fd, "w");
    if (!rf->f) {
        close(fd);
        unlink(rf->tmp);
        return cp_fail(err, CP_EXIT_INTERNAL, "%s: cannot open output stream", path);
    }
    return 0;
}

int rep_close(rep_file *rf, int ok, cp_err *err)
{
    if (!rf->f)
        return -1;
    int bad = ferror(rf->f) || fflush(rf->f) != 0;
    if (!bad)
        bad = fsync(fileno(rf->f)) != 0 && errno != EINVAL;
    if (fclose(rf->f) != 0)
        bad = 1;
    rf->f = NULL;
    if (!ok || bad) {
        unlink(rf->tmp);
        if (ok)
            return cp_fail(err, CP_EXIT_INPUT, "%s: write failed", rf->path);
        return -1;
    }
    if (rename(rf->tmp, rf->path) != 0) {
        unlink(rf->tmp);
        return cp_fail(err, CP_EXIT_INPUT, "%s: cannot rename output into place: %s",
                       rf->path, strerror(errno));
    }
    return 0;
}
