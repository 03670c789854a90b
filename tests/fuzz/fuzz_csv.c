/* fuzz_csv: a calibration table through calib_load_file and its column
 * readers. */
#include "tests/fuzz/fuzz.h"

#include "base/calib.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cp_err err = {0};
    calib_table *t = calib_load_file(fuzz_file("table.csv", data, size), &err);
    if (!t)
        return 0;
    int c = calib_num_col(t, "t_kernel", &err);
    for (int r = 0; c >= 0 && r < calib_rows(t); r++)
        (void)calib_num(t, r, c);
    calib_free(t);
    return 0;
}
