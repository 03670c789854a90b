/* datadir: where bundled data (models/configs, platforms, calibration tables,
 * workloads) is found.
 *
 * Order: $CPSIM_DATADIR; the directory of the running binary when it holds
 * platforms/ (a source or build tree, `./cpsim`); the configured source tree
 * (VPATH builds, tests); the installed pkgdatadir.  The layout below the data
 * directory is the same in all cases: models/configs/<name>.json,
 * platforms/<name>.yaml, platforms/calibration/<profile>/<table>.csv,
 * workloads/<name>.yaml.
 */
#ifndef CP_DATADIR_H
#define CP_DATADIR_H

#include <stddef.h>

const char *cp_datadir(void);

/* <datadir>/<rel> into buf; returns buf. */
char *cp_data_path(char *buf, size_t len, const char *rel);

/* Directory part of a file path ("." when none) into buf; returns buf. */
char *cp_dirname(char *buf, size_t len, const char *path);

/* The folder of calibration profile `profile` into buf: a name (no '/')
 * is <datadir>/platforms/calibration/<name>, a path (holding a '/': the
 * platform file resolved it against its own folder) is itself.  A profile
 * is data: its tables and machine.json, which describes the device they
 * were measured on (models/cost.c).  Returns buf. */
char *cp_calib_dir(char *buf, size_t len, const char *profile);

/* The path of table `table` (<table>.csv) of a calibration profile into
 * buf; returns buf. */
char *cp_calib_table(char *buf, size_t len, const char *profile, const char *table);

/* Resolve `p` against `base_dir` unless absolute or base_dir is NULL. */
char *cp_resolve(char *buf, size_t len, const char *base_dir, const char *p);

#endif
