/* plot_heatmap: which exchange wins where.  heatmap-L: per prompt length L
 * a TP x SP map; heatmap: shapes x prompt lengths.  Each cell names its
 * winning exchange (the fastest point that fits, over min_tokens), its
 * TTFT and the runner-up (the fastest point that fits of another exchange)
 * with how much slower it is; cells where nothing fits are hatched, failed
 * cells and cells the sweep left out say so (see plot.h). */
#include "reports/plot_fig.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CELL_NONE, CELL_FITS, CELL_OOM, CELL_FAILED, CELL_NSTATES };
static const char *const state_name[CELL_NSTATES] = {"not in the sweep", "fits",
                                                     "out of memory", "failed"};

/* Two TTFTs this close (relative) are a tie: equal plans simulate alike. */
#define TIE 1e-9

typedef struct cell {
    int state;
    const plot_point *win;     /* fits: the fastest that fits; OOM: the fastest */
    const plot_point *next;    /* fits: the fastest of another exchange that fits */
    int nex;                   /* exchanges with a point that fits */
    int ties;                  /* of them, those as fast as the winner, the winner's too */
    int nout;                  /* other exchanges with points but none that fits */
    double unc;                /* fits: the uncertainty of the kernels that differ
                                  between the winner and the runner-up, over the
                                  winner's TTFT (rep_pair_uncertainty); -1 unknown */
    int tie;                   /* the runner-up's margin is within unc: hatched */
} cell;

/* What competes in a cell: the exchange, else the rest of the label. */
static const char *contender(const plot_point *p)
{
    return p->exchange[0] ? p->exchange : p->rest;
}

static int in_cell(const plot_point *p, long long L, long long tp, long long sp)
{
    return p->prompt == L && p->tp == tp && p->sp == sp;
}

static void fill_cell(const plot_sweepset *ss, long long L, long long tp, long long sp, cell *c)
{
    memset(c, 0, sizeof *c);
    int any_failed = 0;
    for (size_t i = 0; i < ss->n; i++) {
        const plot_point *p = &ss->p[i];
        if (!in_cell(p, L, tp, sp))
            continue;
        if (!p->ok) {
            any_failed = 1;
            continue;
        }
        int better = !c->win || (c->win->oom && !p->oom) ||
                     (c->win->oom == p->oom && p->ttft_s < c->win->ttft_s);
        if (better)
            c->win = p;
    }
    c->state = c->win ? (c->win->oom ? CELL_OOM : CELL_FITS)
                      : any_failed ? CELL_FAILED : CELL_NONE;
    if (c->state != CELL_FITS)
        return;
    /* the best of each other exchange: the fastest of them is the runner-up */
    for (size_t i = 0; i < ss->n; i++) {
        const plot_point *p = &ss->p[i];
        if (!in_cell(p, L, tp, sp) || !p->ok)
            continue;
        int first = 1;   /* the first point of its exchange here */
        const plot_point *best = NULL;
        for (size_t j = 0; j < ss->n; j++) {
            const plot_point *q = &ss->p[j];
            if (!in_cell(q, L, tp, sp) || !q->ok || strcmp(contender(q), contender(p)) != 0)
                continue;
            if (j < i)
                first = 0;
            if (!q->oom && (!best || q->ttft_s < best->ttft_s))
                best = q;
        }
        if (!first)
            continue;
        if (!best) {
            c->nout++;
            continue;
        }
        c->nex++;
        if (best->ttft_s <= c->win->ttft_s * (1 + TIE))
            c->ties++;
        if (strcmp(contender(best), contender(c->win)) != 0 &&
            (!c->next || best->ttft_s < c->next->ttft_s))
            c->next = best;
    }
    c->unc = -1;
    if (c->next && ss->errs) {
        double u = rep_pair_uncertainty(ss->set, c->win, c->next, ss->errs);
        c->unc = u >= 0 ? u / c->win->ttft_s : -1;
        c->tie = c->unc >= 0 && c->next->ttft_s / c->win->ttft_s - 1 <= c->unc;
    }
}

/* The margin of the runner-up over the winner, in % (how much slower). */
static double margin_pct(const cell *c)
{
    return c->next ? 100 * (c->next->ttft_s / c->win->ttft_s - 1) : NAN;
}

/* The text of a cell, lines apart. */
static void cell_text(const cell *c, char *buf, size_t len)
{
    if (c->state == CELL_NONE) {
        snprintf(buf, len, "not in the sweep");
    } else if (c->state == CELL_FAILED) {
        snprintf(buf, len, "failed");
    } else if (c->state == CELL_OOM) {
        snprintf(buf, len, "OUT OF MEMORY\n%s %.4g s", contender(c->win), c->win->ttft_s);
    } else if (c->nex > 1 && c->ties == c->nex) {
        snprintf(buf, len, "%d exchanges tie\n%.4g s", c->nex, c->win->ttft_s);
    } else if (!c->next) {
        snprintf(buf, len, "%s\n%.4g s%s", contender(c->win), c->win->ttft_s,
                 c->nout ? "\nthe others out of memory" : "");
    } else {
        double m = margin_pct(c);
        int n = snprintf(buf, len, "%s\n%.4g s\nnext: %s +%.*f%%", contender(c->win),
                         c->win->ttft_s, contender(c->next), m < 1 ? 2 : 1, m);
        if (c->tie && n > 0 && (size_t)n < len)
            snprintf(buf + n, len - (size_t)n, "\ntie: kernels +-%.1f%%", 100 * c->unc);
    }
}

/* A word for the data file: spaces as '_', "-" when empty. */
static void put_word(FILE *f, const char *s)
{
    if (!s || !*s) {
        fputs(" -", f);
        return;
    }
    fputc(' ', f);
    for (; *s; s++)
        fputc(*s == ' ' ? '_' : *s, f);
}

/* One line of a map's data: x y ttft_s tp sp winner next_ttft_s margin_pct
 * next colour. */
static void cell_row(FILE *f, size_t x, size_t y, long long tp, long long sp, const cell *c,
                     double colour)
{
    fprintf(f, "%zu %zu %.9g %lld %lld", x, y, c->win ? c->win->ttft_s : 0.0, tp, sp);
    put_word(f, c->win ? contender(c->win) : NULL);
    if (c->next)
        fprintf(f, " %.9g %.6f", c->next->ttft_s, margin_pct(c));
    else
        fputs(" - -", f);
    put_word(f, c->next ? contender(c->next) : NULL);
    fprintf(f, " %.9g\n", colour);
}

/* A map: nx x ny cells (x fastest); colour of a cell that fits: value[i]. */
typedef struct map {
    const char *name;
    size_t nx, ny;
    cell *c;
    double *value;
    long long *tp, *sp;        /* per cell */
    int font;                  /* of the cell texts, pt */
} map;

/* block[CELL_NSTATES]: the tie cells (those that fit whose runner-up is
 * within the kernels' uncertainty), drawn hatched over their colour. */
static int write_map(plot_figset *fs, const map *m, int *block, cp_err *err)
{
    static const int order[] = {CELL_FITS, CELL_OOM, CELL_FAILED, CELL_NONE};
    rep_file rf;
    int rc = plot_data_open(fs, m->name, &rf, err), nb = 0;
    for (int st = 0; st <= CELL_NSTATES; st++)
        block[st] = -1;
    for (size_t o = 0; rc == 0 && o < sizeof order / sizeof order[0]; o++) {
        int st = order[o];
        for (size_t i = 0; i < m->nx * m->ny; i++) {
            if (m->c[i].state != st)
                continue;
            if (block[st] < 0) {
                fprintf(rf.f, "%s# %s: x y ttft_s tp sp winner next_ttft_s margin_pct next "
                              "colour\n", nb ? "\n\n" : "", state_name[st]);
                block[st] = nb++;
            }
            cell_row(rf.f, i % m->nx, i / m->nx, m->tp[i], m->sp[i], &m->c[i], m->value[i]);
        }
    }
    for (size_t i = 0; rc == 0 && i < m->nx * m->ny; i++) {
        if (m->c[i].state != CELL_FITS || !m->c[i].tie)
            continue;
        if (block[CELL_NSTATES] < 0) {
            fprintf(rf.f, "%s# tie: x y ttft_s tp sp winner next_ttft_s margin_pct next "
                          "colour\n", nb ? "\n\n" : "");
            block[CELL_NSTATES] = nb++;
        }
        cell_row(rf.f, i % m->nx, i / m->nx, m->tp[i], m->sp[i], &m->c[i], m->value[i]);
    }
    return rc == 0 ? rep_close(&rf, 1, err) : rc;
}

/* The cells, their texts and the colour bar over [lo, hi] (log once the
 * values span a decade). */
static void map_body(FILE *b, const map *m, const int *block, double lo, double hi,
                     const char *cblabel)
{
    fprintf(b, "set xrange [-0.5:%zu.5]\nset yrange [-0.5:%zu.5]\nunset key\n"
               "set style fill solid 1.0 border lc rgb \"white\"\nset cblabel \"%s\" "
               "offset 1.5,0\n"
               "set format cb \"%%.3g\"\nset tics nomirror\n"
               "set style textbox opaque fc rgb \"white\" noborder margins 3,2\n"
               "set palette defined (0 \"#1a9850\", 1 \"#fee08b\", 2 \"#f46d43\")\n",
            m->nx - 1, m->ny - 1, cblabel);
    /* a 10 % margin keeps a single value from collapsing the colour range */
    if (block[CELL_FITS] >= 0)
        fprintf(b, "%sset cbrange [%.9g:%.9g]\n", hi > 10 * lo ? "set logscale cb\n" : "",
                lo * 0.95, hi * 1.05);
    for (size_t i = 0; i < m->nx * m->ny; i++) {
        char t[900];
        cell_text(&m->c[i], t, sizeof t);
        fprintf(b, "set label %zu ", i + 1);
        plot_gp_str(b, t);
        /* the text of a hatched cell on a white box, to stay legible */
        fprintf(b, " at %zu,%zu center front font \",%d\" tc rgb \"%s\"%s\n", i % m->nx,
                i / m->nx, m->c[i].state == CELL_NONE ? 8 : m->font,
                m->c[i].state == CELL_NONE ? "#999999" : "#000000",
                m->c[i].state == CELL_OOM ? " boxed" : "");
    }
    fputs("plot", b);
    const char *sep = "";
    if (block[CELL_FITS] >= 0) {
        fprintf(b, " \"%s.dat\" index %d using 1:2:(0.5):(0.5):10 with boxxyerror fc palette "
                   "notitle", m->name, block[CELL_FITS]);
        sep = ", \\\n   ";
    }
    if (block[CELL_OOM] >= 0) {
        fprintf(b, "%s \"%s.dat\" index %d using 1:2:(0.5):(0.5) with boxxyerror fc rgb "
                   "\"#bbbbbb\" notitle, \\\n    \"%s.dat\" index %d using 1:2:(0.5):(0.5) "
                   "with boxxyerror fs transparent pattern 4 border lc rgb \"#ffffff\" "
                   "lc rgb \"#aa0000\" notitle", sep, m->name, block[CELL_OOM], m->name,
                block[CELL_OOM]);
        sep = ", \\\n   ";
    }
    if (block[CELL_FAILED] >= 0) {
        fprintf(b, "%s \"%s.dat\" index %d using 1:2:(0.5):(0.5) with boxxyerror fc rgb "
                   "\"#dddddd\" notitle", sep, m->name, block[CELL_FAILED]);
        sep = ", \\\n   ";
    }
    if (block[CELL_NONE] >= 0) {
        fprintf(b, "%s \"%s.dat\" index %d using 1:2:(0.5):(0.5) with boxxyerror fc rgb "
                   "\"#f5f5f5\" notitle", sep, m->name, block[CELL_NONE]);
        sep = ", \\\n   ";
    }
    if (block[CELL_NSTATES] >= 0) /* ties: grey hatching over their colour */
        fprintf(b, "%s \"%s.dat\" index %d using 1:2:(0.5):(0.5) with boxxyerror fs "
                   "transparent pattern 5 border lc rgb \"#ffffff\" lc rgb \"#555555\" notitle",
                sep, m->name, block[CELL_NSTATES]);
    fputc('\n', b);
}

/* The range of the colours of the cells that fit. */
static void map_range(const map *m, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = 0;
    for (size_t i = 0; i < m->nx * m->ny; i++) {
        if (m->c[i].state != CELL_FITS)
            continue;
        *lo = fmin(*lo, m->value[i]);
        *hi = fmax(*hi, m->value[i]);
    }
}

static void map_alloc(map *m, size_t nx, size_t ny)
{
    m->nx = nx;
    m->ny = ny;
    m->c = calloc(nx * ny + 1, sizeof *m->c);
    m->value = calloc(nx * ny + 1, sizeof *m->value);
    m->tp = calloc(nx * ny + 1, sizeof *m->tp);
    m->sp = calloc(nx * ny + 1, sizeof *m->sp);
    if (!m->c || !m->value || !m->tp || !m->sp)
        abort();
}

static void map_free(map *m)
{
    free(m->c);
    free(m->value);
    free(m->tp);
    free(m->sp);
}

static void axis_tics(FILE *b, const char *axis, const long long *v, size_t n)
{
    fprintf(b, "set %stics (", axis);
    for (size_t i = 0; i < n; i++)
        fprintf(b, "%s\"%lld\" %zu", i ? ", " : "", v[i], i);
    fputs(")\n", b);
}

static const char *const desc_cells =
    "each cell names the winning exchange (the fastest point that fits, over min_tokens), its "
    "TTFT and the runner-up exchange with how much slower it is; hatched red: nothing fits in "
    "memory; hatched grey: a tie, the runner-up within the uncertainty of the kernels that "
    "differ (validate --accuracy)";

/* heatmap-L: TP across, SP up. */
static int tpsp_map(plot_figset *fs, const plot_sweepset *ss, long long L, cp_err *err)
{
    char name[64];
    snprintf(name, sizeof name, "heatmap-%lld", L);
    map m = {.name = name, .font = 10};
    map_alloc(&m, ss->ntp, ss->nsp);
    for (size_t y = 0; y < ss->nsp; y++)
        for (size_t x = 0; x < ss->ntp; x++) {
            size_t i = y * ss->ntp + x;
            fill_cell(ss, L, ss->tps[x], ss->sps[y], &m.c[i]);
            m.tp[i] = ss->tps[x];
            m.sp[i] = ss->sps[y];
            m.value[i] = m.c[i].win ? m.c[i].win->ttft_s : 0;
        }
    int block[CELL_NSTATES + 1];
    int rc = write_map(fs, &m, block, err);
    if (rc == 0 && (block[CELL_FITS] >= 0 || block[CELL_OOM] >= 0 || block[CELL_FAILED] >= 0)) {
        char title[128];
        snprintf(title, sizeof title, "TP x SP, prompt of %lld tokens", L);
        plot_figure *f = plot_fig_add(fs, name, name, title, PLOT_WIDTH, PLOT_HEIGHT);
        snprintf(f->desc, sizeof f->desc, "At %lld prompt tokens, a cell per TP x SP shape "
                 "coloured by its best TTFT; %s", L, desc_cells);
        FILE *b = plot_fig_body(fs, f, "set title", "winning exchange by TP x SP, prompt of "
                                "%lld tokens", L);
        fputs("set xlabel \"TP\"\nset ylabel \"SP\"\n", b);
        axis_tics(b, "x", ss->tps, ss->ntp);
        axis_tics(b, "y", ss->sps, ss->nsp);
        double lo, hi;
        map_range(&m, &lo, &hi);
        map_body(b, &m, block, lo, hi, "best TTFT (s)");
        fclose(b);
    }
    map_free(&m);
    return rc;
}

/* heatmap: prompt lengths across, the TP x SP shapes that ran up (SP
 * growing upwards); a cell's colour is its TTFT over the best of its
 * length, so that every column has its winner at 1. */
static int shape_map(plot_figset *fs, const plot_sweepset *ss, cp_err *err)
{
    size_t nsh = 0;
    long long *tp = malloc((ss->ntp * ss->nsp + 1) * sizeof *tp);
    long long *sp = malloc((ss->ntp * ss->nsp + 1) * sizeof *sp);
    if (!tp || !sp)
        abort();
    for (size_t y = 0; y < ss->nsp; y++)
        for (size_t x = ss->ntp; x-- > 0;) {
            int ran = 0;
            for (size_t i = 0; i < ss->n && !ran; i++)
                ran = ss->p[i].tp == ss->tps[x] && ss->p[i].sp == ss->sps[y] &&
                      ss->p[i].prompt >= 0;
            if (ran) {
                tp[nsh] = ss->tps[x];
                sp[nsh++] = ss->sps[y];
            }
        }
    map m = {.name = "heatmap", .font = 9};
    map_alloc(&m, ss->nl, nsh);
    for (size_t x = 0; x < ss->nl; x++) {
        double best = INFINITY;
        for (size_t y = 0; y < nsh; y++) {
            size_t i = y * ss->nl + x;
            fill_cell(ss, ss->L[x], tp[y], sp[y], &m.c[i]);
            m.tp[i] = tp[y];
            m.sp[i] = sp[y];
            if (m.c[i].state == CELL_FITS)
                best = fmin(best, m.c[i].win->ttft_s);
        }
        for (size_t y = 0; y < nsh; y++) {
            size_t i = y * ss->nl + x;
            m.value[i] = m.c[i].state == CELL_FITS ? m.c[i].win->ttft_s / best : 0;
        }
    }
    int block[CELL_NSTATES + 1];
    int rc = write_map(fs, &m, block, err);
    if (rc == 0 && nsh > 0) {
        /* ~170 px per length holds a cell's widest line at 9 pt */
        int w = (int)fmax(PLOT_WIDTH, 170.0 * (double)ss->nl + 300);
        int h = (int)fmax(PLOT_HEIGHT, 110.0 * (double)nsh + 200);
        plot_figure *f = plot_fig_add(fs, "heatmap", "heatmap", "winning exchange by shape "
                                      "and prompt length", w, h);
        snprintf(f->desc, sizeof f->desc, "A row per TP x SP shape, a column per prompt "
                 "length, coloured by the cell's best TTFT over the best of its length (1: "
                 "the fastest shape there); %s", desc_cells);
        FILE *b = plot_fig_body(fs, f, "set title", "winning exchange by TP x SP shape and "
                                "prompt length");
        fputs("set xlabel \"prompt tokens\"\nset ylabel \"TP x SP\"\nset xtics (", b);
        for (size_t x = 0; x < ss->nl; x++)
            if (ss->L[x] % 1024 == 0)
                fprintf(b, "%s\"%lldK\" %zu", x ? ", " : "", ss->L[x] / 1024, x);
            else
                fprintf(b, "%s\"%lld\" %zu", x ? ", " : "", ss->L[x], x);
        fputs(")\nset ytics (", b);
        for (size_t y = 0; y < nsh; y++)
            fprintf(b, "%s\"TP%lld SP%lld\" %zu", y ? ", " : "", tp[y], sp[y], y);
        fputs(")\n", b);
        double lo, hi;
        map_range(&m, &lo, &hi);
        map_body(b, &m, block, lo, hi, "TTFT / best TTFT at this length");
        fclose(b);
    }
    map_free(&m);
    free(tp);
    free(sp);
    return rc;
}

int plot_heatmaps(plot_figset *fs, const plot_sweepset *ss, cp_err *err)
{
    int rc = 0;
    if (ss->nl > 1)
        rc = shape_map(fs, ss, err);
    for (size_t q = 0; rc == 0 && q < ss->nl; q++)
        rc = tpsp_map(fs, ss, ss->L[q], err);
    return rc;
}
