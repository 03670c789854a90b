/* plot: the figure set and its drawing: plots.gp, gnuplot, index.html, and
 * the colours and markers every picture family shares (see plot_fig.h). */
#include "reports/plot_fig.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/grow.h"
#include "base/proc.h"
#include "base/xmlesc.h"

/* ---- styles ------------------------------------------------------------------------ */

const char *const plot_colors[PLOT_NCOLORS] = {"#4477aa", "#ee7733", "#228833", "#aa3377",
                                               "#66ccee", "#ccbb44", "#000000", "#009988",
                                               "#ee3377", "#777777", "#332288", "#882255"};
/* gnuplot's point types: filled circle, square, triangles up and down,
 * diamond, pentagon, the same open, then a star */
const int plot_markers[PLOT_NMARKERS] = {7, 5, 9, 11, 13, 15, 6, 4, 8, 10, 12, 14, 3};

/* The exchanges' styles: the values of parallel.exchange
 * (workloads/workload.c, wl_exchange_names), each its own colour and its
 * own marker, the most compared first; colours 6-11 stay for names the
 * table lacks. */
static const struct {
    const char *name;
    int color, marker;
} exchange_style[] = {{"none", 0, 0},    {"ring", 1, 1},       {"ring_kv", 2, 2},
                      {"ulysses", 3, 3}, {"all_gather", 4, 4}, {"auto", 5, 5}};

int plot_exchange_style(const char *exchange, int *color, int *marker)
{
    for (size_t i = 0; i < sizeof exchange_style / sizeof exchange_style[0]; i++)
        if (strcmp(exchange, exchange_style[i].name) == 0) {
            *color = exchange_style[i].color;
            *marker = exchange_style[i].marker;
            return 1;
        }
    return 0;
}

int plot_color_taken(int c)
{
    for (size_t i = 0; i < sizeof exchange_style / sizeof exchange_style[0]; i++)
        if (exchange_style[i].color == c)
            return 1;
    return 0;
}

/* ---- figures and the script ----------------------------------------------------- */

static void plot_fig_data(plot_figure *f, const char *stem);

plot_figure *plot_fig_add(plot_figset *fs, const char *name, const char *data,
                          const char *title, int w, int h)
{
    fs->fig = cp_grow(fs->fig, &fs->cap, (size_t)fs->n + 1, sizeof *fs->fig);
    plot_figure *f = &fs->fig[fs->n++];
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    snprintf(f->title, sizeof f->title, "%s", title);
    f->w = w;
    f->h = h;
    if (data)
        plot_fig_data(f, data);
    return f;
}

/* The figure draws the data file STEM.dat too (index.html links it). */
static void plot_fig_data(plot_figure *f, const char *stem)
{
    for (int i = 0; i < f->ndata; i++)
        if (strcmp(f->data[i], stem) == 0)
            return;
    if (f->ndata < PLOT_FIG_MAX_DATA)
        snprintf(f->data[f->ndata++], sizeof f->data[0], "%s", stem);
}

void plot_figset_free(plot_figset *fs)
{
    if (fs->dir[0] && !fs->done)
        rep_remove_dir(fs->dir);
    for (int i = 0; i < fs->n; i++)
        free(fs->fig[i].body);
    free(fs->fig);
    for (int i = 0; i < fs->nnote; i++)
        free(fs->note[i]);
    free(fs->note);
}

void plot_note(plot_figset *fs, const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        abort();
    fs->note = realloc(fs->note, (size_t)(fs->nnote + 1) * sizeof *fs->note);
    if (!fs->note)
        abort();
    fs->note[fs->nnote++] = s;
}

int plot_multiplot(char *buf, size_t len, int n)
{
    int cols = 1;
    while (cols * cols < n)
        cols++;
    int rows = (n + cols - 1) / cols;
    snprintf(buf, len, "set multiplot layout %d,%d title", rows, cols);
    return rows;
}

/* A string as a gnuplot double-quoted literal. */
void plot_gp_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '\n') {
            fputs("\\n", f);
            continue;
        }
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

FILE *plot_fig_body(const plot_figset *fs, plot_figure *f, const char *cmd, const char *fmt,
                    ...)
{
    FILE *m = open_memstream(&f->body, &f->body_len);
    if (!m)
        abort();
    /* each figure starts from gnuplot's defaults; labels are literal text */
    fputs("reset\nset encoding utf8\n", m);
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (n < 0)
        text[0] = '\0';
    size_t used = strlen(text);
    snprintf(text + used, sizeof text - used, "\n%s", fs->what);
    fprintf(m, "%s ", cmd);
    plot_gp_str(m, text);
    fputc('\n', m);
    return m;
}

/* Fonts: gnuplot's sans at 10 pt reads well at these canvas sizes. */
static void write_script(const plot_figset *fs, FILE *f)
{
    fputs("# cpsim plots: run `gnuplot plots.gp` in this folder to draw them again.\n", f);
    for (int i = 0; i < fs->n; i++) {
        const plot_figure *fg = &fs->fig[i];
        fprintf(f, "\n# ---- %s\n", fg->name);
        fprintf(f, "set terminal pngcairo size %d,%d font \"Sans,10\" noenhanced\n"
                   "set output \"%s.png\"\n%sunset multiplot\nunset output\n",
                fg->w, fg->h, fg->name, fg->body);
        fprintf(f, "set terminal svg size %d,%d font \"Sans,10\" noenhanced\n"
                   "set output \"%s.svg\"\n%sunset multiplot\nunset output\n",
                fg->w, fg->h, fg->name, fg->body);
    }
}


/* Every figure with its caption (title, the workload and platform, what it
 * shows) and links to its PNG, SVG and data files: every link names a file
 * this folder holds once plot_draw has run. */
static void write_index(const plot_figset *fs, const char *heading, FILE *f)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>", f);
    cp_xml_escape(f, heading);
    fputs("</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:1700px}"
          "img{max-width:100%;height:auto;border:1px solid #ccc}figure{margin:2em 0}"
          "figcaption{margin-top:.4em;color:#333}</style></head>\n<body>\n<h1>", f);
    cp_xml_escape(f, heading);
    fputs("</h1>\n", f);
    for (int i = 0; i < fs->nnote; i++) {
        fputs("<p class=\"note\">", f);
        cp_xml_escape(f, fs->note[i]);
        fputs("</p>\n", f);
    }
    if (fs->n == 0)
        fputs("<p>Nothing to draw: no point of this sweep ran.</p>\n", f);
    for (int i = 0; i < fs->n; i++) {
        const plot_figure *fg = &fs->fig[i];
        fprintf(f, "<figure id=\"%s\">\n<h2>", fg->name);
        cp_xml_escape(f, fg->title);
        fprintf(f, "</h2>\n<a href=\"%s.svg\"><img src=\"%s.png\" width=\"%d\" height=\"%d\" "
                   "alt=\"", fg->name, fg->name, fg->w, fg->h);
        cp_xml_escape(f, fg->title);
        fputs("\"></a>\n<figcaption><b>", f);
        cp_xml_escape(f, fg->title);
        fputs("</b>: ", f);
        cp_xml_escape(f, fs->what);
        if (fg->desc[0]) {
            fputs(". ", f);
            cp_xml_escape(f, fg->desc);
        }
        fprintf(f, "<br>\n<a href=\"%s.png\">PNG</a> &middot; <a href=\"%s.svg\">SVG</a>",
                fg->name, fg->name);
        for (int d = 0; d < fg->ndata; d++)
            fprintf(f, " &middot; <a href=\"%s.dat\">%s.dat</a>", fg->data[d], fg->data[d]);
        fputs("</figcaption>\n</figure>\n", f);
    }
    fputs("<p>Drawn by gnuplot from <a href=\"plots.gp\">plots.gp</a> (run <code>gnuplot "
          "plots.gp</code> in this folder to draw them again", f);
    /* gnuplot runs, and writes its log, only when there is a figure */
    if (fs->n > 0)
        fputs("; its messages: <a href=\"gnuplot.log\">gnuplot.log</a>", f);
    fputs(").</p>\n</body></html>\n", f);
}

/* gnuplot from PATH, or 0 when there is none. */
static int find_gnuplot(char *buf, size_t len)
{
    const char *path = getenv("PATH");
    if (!path)
        return 0;
    char *dirs = strdup(path);
    if (!dirs)
        abort();
    int found = 0;
    for (char *d = strtok(dirs, ":"); d && !found; d = strtok(NULL, ":")) {
        snprintf(buf, len, "%s/gnuplot", *d ? d : ".");
        found = access(buf, X_OK) == 0;
    }
    free(dirs);
    return found;
}

/* The first lines of gnuplot.log, for a message. */
static void log_head(const char *dir, char *buf, size_t len)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/gnuplot.log", dir);
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    for (char *c = buf; *c; c++)
        if (*c == '\n')
            *c = ' ';
}

static int run_gnuplot(const char *dir, cp_err *err)
{
    char exe[4096];
    if (!find_gnuplot(exe, sizeof exe))
        return cp_fail(err, CP_EXIT_INPUT, "plots need gnuplot, which is not in PATH: install "
                       "it (Debian: apt-get install gnuplot-nox)");
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return cp_fail(err, CP_EXIT_INTERNAL, "cannot fork gnuplot: %s", strerror(errno));
    if (pid == 0) {
        int fd = -1;
        if (chdir(dir) == 0)
            fd = open("gnuplot.log", O_WRONLY | O_CREAT | O_TRUNC, 0666);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            close(fd);
        }
        execl(exe, "gnuplot", "plots.gp", (char *)NULL);
        _exit(127);
    }
    int status = cp_wait(pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    char msg[600];
    log_head(dir, msg, sizeof msg);
    if (strstr(msg, "unknown or ambiguous terminal"))
        return cp_fail(err, CP_EXIT_INPUT, "%s: gnuplot lacks the pngcairo or svg terminal "
                       "(Debian: gnuplot-nox has both): %s", exe, msg);
    return cp_fail(err, CP_EXIT_INTERNAL, "gnuplot failed on plots.gp (nothing was written): %s",
                   msg);
}

/* One file of the drawing folder into the plots folder. */
static int move_in(const plot_figset *fs, const char *name, cp_err *err)
{
    char from[4400], to[4400];
    snprintf(from, sizeof from, "%s/%s", fs->dir, name);
    snprintf(to, sizeof to, "%s/%s", fs->final, name);
    if (rename(from, to) != 0)
        return cp_fail(err, CP_EXIT_INPUT, "%s: cannot move the plots into place: %s", to,
                       strerror(errno));
    return 0;
}

/* Every file drawn into the plots folder, index.html last: it links the
 * others. */
static int plot_commit(plot_figset *fs, cp_err *err)
{
    struct stat st;
    if (mkdir(fs->final, 0777) != 0 && errno != EEXIST)
        return cp_fail(err, CP_EXIT_INPUT, "%s: cannot create it: %s", fs->final,
                       strerror(errno));
    if (stat(fs->final, &st) != 0 || !S_ISDIR(st.st_mode))
        return cp_fail(err, CP_EXIT_INPUT, "%s: not a folder", fs->final);
    DIR *d = opendir(fs->dir);
    if (!d)
        return cp_fail(err, CP_EXIT_INTERNAL, "%s: cannot read it: %s", fs->dir,
                       strerror(errno));
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            strcmp(e->d_name, "index.html") != 0)
            rc = move_in(fs, e->d_name, err);
    closedir(d);
    if (rc == 0)
        rc = move_in(fs, "index.html", err);
    if (rc == 0) {
        rmdir(fs->dir);
        fs->done = 1;
    }
    return rc;
}

/* Script, gnuplot, index.html, then into place. */
int plot_draw(plot_figset *fs, const char *heading, cp_err *err)
{
    char path[4200];
    rep_file rf;
    snprintf(path, sizeof path, "%s/plots.gp", fs->dir);
    if (rep_open(&rf, path, err) != 0)
        return -1;
    write_script(fs, rf.f);
    if (rep_close(&rf, 1, err) != 0)
        return -1;
    if (fs->n > 0 && run_gnuplot(fs->dir, err) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/index.html", fs->dir);
    if (rep_open(&rf, path, err) != 0)
        return -1;
    write_index(fs, heading, rf.f);
    if (rep_close(&rf, 1, err) != 0)
        return -1;
    return plot_commit(fs, err);
}

int plot_dir_open(const char *dir, plot_figset *fs, cp_err *err)
{
    memset(fs, 0, sizeof *fs);
    rep_remove_stale(dir);
    snprintf(fs->final, sizeof fs->final, "%s/plots", dir);
    snprintf(fs->dir, sizeof fs->dir, "%s/plots.tmp-%ld-XXXXXX", dir, (long)getpid());
    if (!mkdtemp(fs->dir)) {
        int e = errno;
        fs->dir[0] = '\0';
        return cp_fail(err, CP_EXIT_INPUT, "%s: cannot create it: %s", fs->final, strerror(e));
    }
    return 0;
}

int plot_data_open(const plot_figset *fs, const char *name, rep_file *rf, cp_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.dat", fs->dir, name);
    return rep_open(rf, path, err);
}
