/* fuzz_main: the set-up every target shares (see fuzz.h). */
#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz: could not remove %s\n", dir);
}

const char *fuzz_dir(void)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/cpsim-fuzz-XXXXXX");
        if (!mkdtemp(dir))
            abort();
        atexit(remove_dir);
        /* the data the loaders read (model configs, presets, calibration) */
        setenv("CPSIM_DATADIR", CP_SRCDIR, 0);
    }
    return dir;
}

const char *fuzz_file(const char *name, const uint8_t *data, size_t size)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        abort();
    return path;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_dir();
    return 0;
}
