/* sortd: sorting arrays of doubles in linear time. */
#ifndef CP_SORTD_H
#define CP_SORTD_H

#include <stddef.h>

/* Sort v[0, n) ascending, in the order qsort with a (a > b) - (a < b)
 * comparison gives finite values and infinities (-0.0 before +0.0, which
 * such a comparison leaves in either order); v holds no NaN.  An LSD radix
 * sort on the values' bits, 16 bits a pass, passes whose digit every value
 * shares skipped: a serving run's percentiles sort every inter-token gap
 * (millions), where qsort's calls to its comparison cost 8 % of the run.
 * Aborts when the host is out of memory, as cp_grow. */
void cp_sort_doubles(double *v, size_t n);

#endif
