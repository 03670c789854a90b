/* calib: calibration CSV tables (see calib.h). */
#include "base/calib.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/datadir.h"

typedef struct calib_cell {
    size_t text;        /* offset of the NUL-terminated text in calib_table.text */
    double num;         /* NaN when the text is not a number */
    int line, col;      /* 1-based place of the field in the file */
} calib_cell;

struct calib_table {
    char path[1024];
    char *text;         /* unquoted field texts, one after the other */
    int ncols, nrows;   /* nrows: data rows, the header excluded */
    calib_cell *cells;  /* (nrows + 1) * ncols, the header row first */
    size_t ncells, cap;
};

/* Strict number: only [0-9+-.eE] (no blanks, hex, inf or nan), all of it
 * consumed by strtod, finite. */
static double parse_number(const char *s)
{
    if (!*s || strspn(s, "0123456789+-.eE") != strlen(s))
        return NAN;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || errno || !isfinite(v))
        return NAN;
    return v;
}

static char *read_file(const char *path, size_t *len_out, cp_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        cp_fail(err, CP_EXIT_INPUT, "cannot read calibration table %s: %s", path,
                strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0, n;
    char *buf = malloc(cap);
    while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (len + 1 == cap) {
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        cp_fail(err, bad ? CP_EXIT_INPUT : CP_EXIT_INTERNAL,
                "cannot read calibration table %s", path);
        return NULL;
    }
    buf[len] = '\0';
    *len_out = len;
    return buf;
}

/* Parser position: `p` reads the file, `w` appends unquoted text. */
typedef struct csv_state {
    calib_table *t;
    const char *p;
    const char *line_start;
    int line;
    size_t w;
} csv_state;

static int at_eol(const char *p)
{
    return *p == '\n' || *p == '\0' || (p[0] == '\r' && p[1] == '\n');
}

static int push_cell(calib_table *t, calib_cell c, cp_err *err)
{
    if (t->ncells == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        calib_cell *cells = realloc(t->cells, sizeof *cells * cap);
        if (!cells)
            return cp_fail(err, CP_EXIT_INTERNAL, "out of memory reading %s", t->path);
        t->cells = cells;
        t->cap = cap;
    }
    t->cells[t->ncells++] = c;
    return 0;
}

/* One field from s->p up to its terminator (',' or end of line), copied
 * unquoted to the text buffer. */
static int parse_field(csv_state *s, cp_err *err)
{
    calib_cell c = {s->w, NAN, s->line, (int)(s->p - s->line_start) + 1};
    cp_loc loc = {s->t->path, s->line, c.col};
    if (*s->p == '"') {
        for (s->p++;; s->p++) {
            if (*s->p == '\0')
                return cp_fail_at(err, loc, "unterminated quoted field");
            if (*s->p == '"' && s->p[1] != '"')
                break;
            if (*s->p == '"') {
                s->p++;           /* "" stands for one quote */
            } else if (*s->p == '\n') {
                s->line++;
                s->line_start = s->p + 1;
            }
            s->t->text[s->w++] = *s->p;
        }
        s->p++;
        if (*s->p != ',' && !at_eol(s->p)) {
            loc.line = s->line;
            loc.col = (int)(s->p - s->line_start) + 1;
            return cp_fail_at(err, loc, "expected ',' or end of line after a quoted field");
        }
    } else {
        for (; *s->p != ',' && !at_eol(s->p); s->p++) {
            if (*s->p == '"') {
                loc.col = (int)(s->p - s->line_start) + 1;
                return cp_fail_at(err, loc, "quote inside an unquoted field");
            }
            s->t->text[s->w++] = *s->p;
        }
    }
    s->t->text[s->w++] = '\0';
    c.num = parse_number(s->t->text + c.text);
    return push_cell(s->t, c, err);
}

/* One record (a line, or more when a quoted field holds newlines); returns
 * its field count, 0 for a blank line, -1 on error. */
static int parse_record(csv_state *s, cp_err *err)
{
    int first_line = s->line;
    if (at_eol(s->p)) {
        s->p += *s->p == '\r' ? 2 : (*s->p == '\n');
        s->line++;
        s->line_start = s->p;
        return 0;
    }
    int nf = 0;
    for (;;) {
        if (parse_field(s, err) < 0)
            return -1;
        nf++;
        if (*s->p != ',')
            break;
        s->p++;
    }
    if (*s->p)
        s->p += *s->p == '\r' ? 2 : 1;
    s->line++;
    s->line_start = s->p;
    int ncols = s->t->ncols ? s->t->ncols : nf;
    if (nf != ncols) {
        cp_loc loc = {s->t->path, first_line, 1};
        return cp_fail_at(err, loc, "%d fields, the header has %d", nf, ncols);
    }
    return nf;
}

static int check_header(calib_table *t, cp_err *err)
{
    for (int i = 0; i < t->ncols; i++) {
        const calib_cell *c = &t->cells[i];
        const char *name = t->text + c->text;
        cp_loc loc = {t->path, c->line, c->col};
        if (!*name)
            return cp_fail_at(err, loc, "empty column name in the header");
        for (int j = 0; j < i; j++)
            if (!strcmp(name, t->text + t->cells[j].text))
                return cp_fail_at(err, loc, "column \"%s\" appears twice in the header", name);
    }
    return 0;
}

static int parse_table(calib_table *t, const char *src, cp_err *err)
{
    csv_state s = {t, src, src, 1, 0};
    while (*s.p) {
        int nf = parse_record(&s, err);
        if (nf < 0)
            return -1;
        if (nf > 0 && !t->ncols)
            t->ncols = nf;
    }
    if (!t->ncols) {
        cp_loc loc = {t->path, 0, 0};
        return cp_fail_at(err, loc, "empty table, expected a header row of column names");
    }
    t->nrows = (int)(t->ncells / (size_t)t->ncols) - 1;
    return check_header(t, err);
}

calib_table *calib_load_file(const char *path, cp_err *err)
{
    size_t len;
    char *src = read_file(path, &len, err);
    if (!src)
        return NULL;
    calib_table *t = calloc(1, sizeof *t);
    /* Unquoted text is never longer than the source, plus one NUL per field
     * (at most one field per source byte, plus one). */
    if (t)
        t->text = malloc(2 * len + 2);
    if (!t || !t->text) {
        free(src);
        calib_free(t);
        cp_fail(err, CP_EXIT_INTERNAL, "out of memory reading %s", path);
        return NULL;
    }
    snprintf(t->path, sizeof t->path, "%s", path);
    int rc = parse_table(t, src, err);
    free(src);
    if (rc < 0) {
        calib_free(t);
        return NULL;
    }
    return t;
}

/* A profile or table name is one path component. */
static int check_name(const char *what, const char *name, cp_err *err)
{
    if (!name || !*name || strchr(name, '/') || name[0] == '.')
        return cp_fail(err, CP_EXIT_INPUT,
                       "calibration %s name \"%s\" must be a plain directory or file name",
                       what, name ? name : "");
    return 0;
}

calib_table *calib_load(const char *profile, const char *table, cp_err *err)
{
    if (!profile || !*profile || check_name("table", table, err) < 0)
        return NULL;
    char dir[1024], path[1100];
    cp_calib_dir(dir, sizeof dir, profile);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        cp_fail(err, CP_EXIT_INPUT, "calibration profile \"%s\" not found: no directory %s",
                profile, dir);
        return NULL;
    }
    snprintf(path, sizeof path, "%s/%s.csv", dir, table);
    return calib_load_file(path, err);
}

void calib_free(calib_table *t)
{
    if (!t)
        return;
    free(t->text);
    free(t->cells);
    free(t);
}

int calib_rows(const calib_table *t)
{
    return t->nrows;
}

const char *calib_path(const calib_table *t)
{
    return t->path;
}

static const calib_cell *cell(const calib_table *t, int row, int col)
{
    return &t->cells[(size_t)(row + 1) * (size_t)t->ncols + (size_t)col];
}

int calib_col(const calib_table *t, const char *name, cp_err *err)
{
    for (int i = 0; i < t->ncols; i++)
        if (!strcmp(t->text + t->cells[i].text, name))
            return i;
    const char **names = calloc((size_t)t->ncols + 1, sizeof *names);
    char hint[160] = "";
    if (names) {
        for (int i = 0; i < t->ncols; i++)
            names[i] = t->text + t->cells[i].text;
        cp_suggest(hint, sizeof hint, name, names);
        free(names);
    }
    cp_loc loc = {t->path, t->cells[0].line, 1};
    cp_fail_at(err, loc, "no column \"%s\" in the header%s", name, hint);
    return -1;
}

int calib_group_col(const calib_table *t, const char **name, cp_err *err)
{
    cp_err absent = {0};
    *name = calib_col(t, "nranks", &absent) >= 0 ? "nranks"
            : calib_col(t, "P", &absent) >= 0    ? "P"
                                                 : NULL;
    return *name ? calib_num_col(t, *name, err) : -1;
}

int calib_num_col(const calib_table *t, const char *name, cp_err *err)
{
    int col = calib_col(t, name, err);
    if (col < 0)
        return -1;
    for (int r = 0; r < t->nrows; r++) {
        const calib_cell *c = cell(t, r, col);
        if (isnan(c->num)) {
            cp_loc loc = {t->path, c->line, c->col};
            cp_fail_at(err, loc, "column \"%s\": expected a number, found \"%s\"", name,
                       t->text + c->text);
            return -1;
        }
    }
    return col;
}

const char *calib_str(const calib_table *t, int row, int col)
{
    return t->text + cell(t, row, col)->text;
}

double calib_num(const calib_table *t, int row, int col)
{
    return cell(t, row, col)->num;
}

cp_loc calib_loc(const calib_table *t, int row, int col)
{
    const calib_cell *c = cell(t, row, col);
    cp_loc loc = {t->path, c->line, c->col};
    return loc;
}
