/* platform_xml: the SimGrid side of platforms (internal to platforms/).
 *
 * plat_write_xml (declared in platform.h) lives in platform_xml.c; the
 * reader of raw SimGrid XML platforms declared here in platform_raw.c.
 */
#ifndef CP_PLATFORM_XML_H
#define CP_PLATFORM_XML_H

#include "platforms/platform.h"

/* Sanity bounds of our own on every platform number (presets and raw XML),
 * far above any device of models-hardware.md 3 (B200: 4.5e15 flop/s,
 * 8e12 B/s HBM, 9e11 B/s NVLink, 1.8e11 B of HBM). */
#define PLAT_FLOPS_MAX 1e18     /* flop/s */
#define PLAT_BW_MAX 1e14        /* bytes/s */
#define PLAT_HBM_MAX 1e15       /* bytes */
#define PLAT_ONESHOT_MAX 1e12   /* bytes */
#define PLAT_SM_MAX 1000000
/* Lower bounds: a tiny positive rate (hbm_bandwidth: 1e-320) makes every
 * cost infinite and the simulation meaningless; these sit far below any
 * device (a 1990s workstation: ~1e8 flop/s, 1e7 B/s) and keep every time
 * finite. */
#define PLAT_FLOPS_MIN 1e6      /* flop/s */
#define PLAT_BW_MIN 1e6         /* bytes/s */
#define PLAT_EFF_MIN 1e-3       /* an efficiency (fraction of the peak) */

/* Read a raw SimGrid XML platform: the file is loaded by SimGrid in a forked
 * child (so that a bad file cannot abort us), which sends back the <prop>s
 * of every host.  The cluster's devices are the hosts carrying
 * peak_bf16_flops, ordered by their integer prop `rank` when every device has
 * one, else by (node, name in natural order).  On success fills *out (raw_xml
 * = 1, source = path) and *names with plat_devices(out) malloc'ed host names
 * in device order (free each and the array).  A device prop the file does
 * not give takes its value from dflt (the h200-sxm-8 preset, read by
 * plat_load), see read_device in platform_xml.c. */
int plat_xml_read(const char *path, const platform *dflt, platform *out, char ***names,
                  cp_err *err);

/* The host prop of the peak rate of each dtype, in cp_dtype order (the
 * raw format both files speak). */
extern const char *const plat_peak_prop[DT_COUNT];

/* Shortest "%.<N>g" text of v that reads back as exactly v, into buf
 * (at least 32 bytes); returns buf. */
char *plat_num(char *buf, size_t len, double v);

#endif
