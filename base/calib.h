/* calib: reader for the CSV tables of a calibration profile
 * (platforms/calibration/<profile>/<table>.csv, see that directory's README).
 *
 * A table is a header row of column names followed by data rows, all with the
 * same number of comma-separated fields.  Fields may be double-quoted (a
 * quoted field may hold commas and newlines; "" stands for one quote); CRLF
 * line ends are accepted and blank lines skipped.  Columns are found
 * by name; a numeric column is checked once (calib_num_col) so that every cell
 * of it parses strictly as a finite number, and then read without error
 * handling.  Every error names file:line:col.
 */
#ifndef CP_CALIB_H
#define CP_CALIB_H

#include "base/diag.h"

typedef struct calib_table calib_table;

/* Table `table` of profile `profile`, read from
 * <datadir>/platforms/calibration/<profile>/<table>.csv.  A missing profile
 * directory or table is an input error naming the path. */
calib_table *calib_load(const char *profile, const char *table, cp_err *err);
/* Same from an explicit file path. */
calib_table *calib_load_file(const char *path, cp_err *err);
void calib_free(calib_table *t);

int calib_rows(const calib_table *t);   /* data rows, header excluded */
const char *calib_path(const calib_table *t);

/* Index of the column named `name`; -1 and an input error naming the file and
 * the closest column name when absent. */
int calib_col(const calib_table *t, const char *name, cp_err *err);
/* Same, and every cell of the column must be a finite number (strtod syntax,
 * no blanks); otherwise -1 and an error at the offending cell. */
int calib_num_col(const calib_table *t, const char *name, cp_err *err);
/* The group-size column of a collective table: "nranks", else "P" (its
 * name into *name); -1 when there is neither (err untouched, *name NULL)
 * or, with err set, when it is not numeric. */
int calib_group_col(const calib_table *t, const char **name, cp_err *err);

/* Cell text (unquoted); "" for an empty cell. */
const char *calib_str(const calib_table *t, int row, int col);
/* Cell value; NaN when the cell is not a number (never after calib_num_col). */
double calib_num(const calib_table *t, int row, int col);
/* Place of a cell in the file, for cp_fail_at(). */
cp_loc calib_loc(const calib_table *t, int row, int col);

#endif
