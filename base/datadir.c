/* datadir: locating bundled data (see datadir.h). */
#include "base/datadir.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CP_PKGDATADIR
#define CP_PKGDATADIR "/usr/local/share/cpsim"
#endif
#ifndef CP_SRCDIR
#define CP_SRCDIR "."
#endif

static int has_data(const char *dir)
{
    char probe[PATH_MAX];
    struct stat st;
    int n = snprintf(probe, sizeof probe, "%s/platforms/calibration", dir);
    if (n < 0 || (size_t)n >= sizeof probe)
        return 0;
    return stat(probe, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *cp_datadir(void)
{
    static char dir[PATH_MAX];
    if (dir[0])
        return dir;
    const char *env = getenv("CPSIM_DATADIR");
    if (env && *env) {
        snprintf(dir, sizeof dir, "%s", env);
        return dir;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            if (has_data(exe)) {
                snprintf(dir, sizeof dir, "%s", exe);
                return dir;
            }
        }
    }
    if (has_data(CP_SRCDIR) && !has_data(CP_PKGDATADIR)) {
        snprintf(dir, sizeof dir, "%s", CP_SRCDIR);
        return dir;
    }
    snprintf(dir, sizeof dir, "%s", has_data(CP_PKGDATADIR) ? CP_PKGDATADIR : CP_SRCDIR);
    return dir;
}

char *cp_data_path(char *buf, size_t len, const char *rel)
{
    snprintf(buf, len, "%s/%s", cp_datadir(), rel);
    return buf;
}

char *cp_calib_dir(char *buf, size_t len, const char *profile)
{
    if (strchr(profile, '/'))
        snprintf(buf, len, "%s", profile);
    else
        snprintf(buf, len, "%s/platforms/calibration/%s", cp_datadir(), profile);
    return buf;
}

char *cp_calib_table(char *buf, size_t len, const char *profile, const char *table)
{
    char dir[PATH_MAX];
    snprintf(buf, len, "%s/%s.csv", cp_calib_dir(dir, sizeof dir, profile), table);
    return buf;
}

char *cp_dirname(char *buf, size_t len, const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (!slash)
        snprintf(buf, len, ".");
    else if (slash == path)
        snprintf(buf, len, "/");
    else
        snprintf(buf, len, "%.*s", (int)(slash - path), path);
    return buf;
}

char *cp_resolve(char *buf, size_t len, const char *base_dir, const char *p)
{
    if (!base_dir || !*base_dir || p[0] == '/')
        snprintf(buf, len, "%s", p);
    else
        snprintf(buf, len, "%s/%s", base_dir, p);
    return buf;
}
