/* interference: how a rank's compute kernels and its communication kernels
 * slow each other down while both run (NCCL kernels take SMs and HBM
 * bandwidth from the compute kernels, and the compute kernels starve them).
 *
 * Fitted to the profile's overlap.csv: a compute loop on the main stream
 * and an NCCL loop on a side stream, each timed alone and concurrently.
 * While both run, compute runs f_c times slower and communication f_m times
 * slower; whichever finishes first ran overlapped all the time, and the
 * other finished its remaining work alone at full speed, so for each row
 * (D = the earlier of the two concurrent end times):
 *     the earlier one:  f = D / its time alone
 *     the later one:    f = D / (its time alone - (its concurrent end - D))
 * The factors depend on the kind of compute kernel (GEMM-like or
 * attention, which starves NCCL far more), on the message size and on the
 * group size of the collective (column nranks or P, 2 without either: NCCL
 * runs more channels on more ranks); a kind/group/size cell is the median
 * over the measured collectives, sizes are interpolated in log(size) and
 * group sizes in log(n), both clamped at the ends.  A platform without the
 * table has no interference (factors 1).
 */
#ifndef CP_INTERFERENCE_H
#define CP_INTERFERENCE_H

#include "models/plan.h"
#include "platforms/platform.h"
#include "base/diag.h"

enum { IK_GEMM = 0, IK_ATTENTION = 1, IK_COUNT = 2 };

#define INTERF_MAX_SIZES 8
#define INTERF_MAX_GROUPS 8   /* group sizes per kind (ours: 2, 4, 8 and spares) */

/* The factors of one kind at one group size. */
typedef struct interf_curve {
    int procs;                     /* the collective's group size */
    int n;                         /* sizes measured */
    double size[INTERF_MAX_SIZES]; /* message bytes, ascending */
    double fc[INTERF_MAX_SIZES];   /* compute slowdown while overlapped */
    double fm[INTERF_MAX_SIZES];   /* communication slowdown */
} interf_curve;

typedef struct interf_model {
    int ngroups[IK_COUNT];                       /* group sizes measured; 0: none */
    interf_curve c[IK_COUNT][INTERF_MAX_GROUPS]; /* by group size, ascending */
} interf_model;

/* Fit from <profile>/overlap.csv; an empty model (no interference) when the
 * platform has no profile or the profile no such table. */
int interf_load(interf_model *m, const platform *p, cp_err *err);

/* Interference kind of a compute kernel class. */
int interf_kind(plan_kclass kc);

/* Slowdowns (>= 1) of compute kind `kind` overlapped with a collective of
 * `bytes` per call on n ranks (n <= 0: the smallest group measured). */
void interf_factors_at(const interf_model *m, int kind, int n, double bytes, double *fc,
                       double *fm);
void interf_factors(const interf_model *m, int kind, double bytes, double *fc, double *fm);

#endif
