/* atomic: outputs appear complete or not at all (see report.h). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <zlib.h>

#include "reports/report.h"

/* The temporary files open now, for rep_tmp_cleanup (a signal handler may
 * read the table at any time: a slot is filled before it is counted and
 * emptied after). */
#define REP_MAX_OPEN 16
static char open_tmp[REP_MAX_OPEN][4096];
static volatile sig_atomic_t open_used[REP_MAX_OPEN];

/* The group being written (rep_group_begin): finished files wait under
 * their temporary names. */
#define REP_MAX_GROUP 8
static struct {
    int on, n;
    char tmp[REP_MAX_GROUP][4096], path[REP_MAX_GROUP][4096];
} group;

static void track(const char *tmp)
{
    for (int i = 0; i < REP_MAX_OPEN; i++)
        if (!open_used[i]) {
            snprintf(open_tmp[i], sizeof open_tmp[i], "%s", tmp);
            open_used[i] = 1;
            return;
        }
}

static void untrack(const char *tmp)
{
    for (int i = 0; i < REP_MAX_OPEN; i++)
        if (open_used[i] && strcmp(open_tmp[i], tmp) == 0)
            open_used[i] = 0;
}

void rep_tmp_cleanup(void)
{
    for (int i = 0; i < REP_MAX_OPEN; i++)
        if (open_used[i])
            unlink(open_tmp[i]);
}

void rep_clear_outputs(const char *dir)
{
    static const char *const names[] = {"summary.json", "trace.json", "trace.json.gz",
                                        "memory.csv", "steps.csv", "requests.csv"};
    char path[8192];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
}

/* A temporary file or folder of a process that no longer exists. */
static int stale(const char *name)
{
    const char *t = strstr(name, ".tmp-");
    char *end;
    long pid = t ? strtol(t + 5, &end, 10) : 0;
    return pid > 0 && *end == '-' && pid != (long)getpid() && kill((pid_t)pid, 0) != 0 &&
           errno == ESRCH;
}

/* Remove the entries of dir that pick takes (NULL: every one); with pick,
 * a folder goes with its files (rep_remove_dir). */
static void remove_entries(const char *dir, int (*pick)(const char *name))
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[8192];
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            (pick && !pick(e->d_name)))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) != 0 && pick)
            rep_remove_dir(path);
    }
    if (d)
        closedir(d);
}

void rep_remove_stale(const char *dir)
{
    remove_entries(dir, stale);
}

void rep_remove_dir(const char *dir)
{
    remove_entries(dir, NULL);
    rmdir(dir);
}

/* The longest output folder: the files inside it take paths of up to 4096
 * bytes here (PATH_MAX), and the longest name written inside one is under
 * 256 bytes (plots/NAME.png.tmp-<pid>-XXXXXX). */
#define REP_DIR_MAX (4096 - 256)

int rep_mkdir_p(const char *dir, cp_err *err)
{
    /* checked whole before anything is made: a refusal leaves no folders */
    size_t len = strlen(dir);
    if (len == 0 || len > REP_DIR_MAX)
        return cp_fail(err, CP_EXIT_INPUT, "--out: a path of %zu bytes; cpsim writes into "
                       "folders of 1 to %d bytes", len, REP_DIR_MAX);
    for (const char *c = dir; *c;) {
        size_t part = strcspn(c, "/");
        if (part > NAME_MAX)
            return cp_fail(err, CP_EXIT_INPUT, "--out %s: a folder name of %zu bytes; a name "
                           "takes at most %d", dir, part, NAME_MAX);
        c += part;
        c += *c == '/';
    }
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *c = buf + 1;; c++) {
        if (*c != '/' && *c != '\0')
            continue;
        char keep = *c;
        *c = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return cp_fail(err, CP_EXIT_INPUT, "--out %s: cannot create %s: %s", dir, buf,
                           strerror(errno));
        *c = keep;
        if (!keep)
            break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return cp_fail(err, CP_EXIT_INPUT, "--out %s: not a directory", dir);
    return 0;
}

/* A gzip stream behind a FILE (fopencookie): what is written is
 * compressed; closing finishes the stream and syncs the file.
 *
 * The compression runs on a writer thread, so that a run formats its trace
 * while the previous chunk deflates: the caller fills one chunk of
 * GZ_CHUNK bytes, hands it over when full (waiting while the thread still
 * compresses the one before) and fills the other.  zlib is given the same
 * bytes in the same order without a flush either way, so the file is the
 * same as a single-threaded gzwrite's, byte for byte.  A failed write is
 * reported at the next hand-over and at close. */
#define GZ_CHUNK (1 << 20) /* 1 MiB: large against zlib's 32 KiB window, small in memory */

typedef struct gz_cookie {
    gzFile gz;
    int fd;                /* a duplicate of the file's descriptor, for fsync */
    int bad, bad_errno;    /* a write failed (on the thread), and why */
    char *fill, *busy;     /* the chunk being filled, the one handed over */
    size_t nfill, nbusy;
    int pending, done;     /* busy holds a chunk to write; no more will come */
    int threaded;          /* the thread runs (else each chunk is written here) */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} gz_cookie;

/* Compress one chunk (skipped after a failure): 0, or why it failed.
 * Only the writer (the thread, or the caller without one) sets bad. */
static int gz_put(gz_cookie *g, const char *buf, size_t n)
{
    if (n == 0 || g->bad || gzwrite(g->gz, buf, (unsigned)n) > 0)
        return 0;
    int zerr;
    gzerror(g->gz, &zerr);
    return zerr == Z_ERRNO && errno ? errno : EIO;
}

static void *gz_thread(void *c)
{
    gz_cookie *g = c;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        while (!g->pending && !g->done)
            pthread_cond_wait(&g->cv, &g->mu);
        if (!g->pending)
            break;
        pthread_mutex_unlock(&g->mu);
        int e = gz_put(g, g->busy, g->nbusy);
        pthread_mutex_lock(&g->mu);
        if (e) {
            g->bad = 1;
            g->bad_errno = e;
        }
        g->pending = 0;
        pthread_cond_broadcast(&g->cv);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* Hand the filled chunk over (written here when no thread runs). */
static void gz_hand_over(gz_cookie *g)
{
    if (!g->threaded) {
        int e = gz_put(g, g->fill, g->nfill);
        if (e) {
            g->bad = 1;
            g->bad_errno = e;
        }
        g->nfill = 0;
        return;
    }
    pthread_mutex_lock(&g->mu);
    while (g->pending)
        pthread_cond_wait(&g->cv, &g->mu);
    char *t = g->busy;
    g->busy = g->fill;
    g->nbusy = g->nfill;
    g->fill = t;
    g->nfill = 0;
    g->pending = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static int gz_failed(gz_cookie *g)
{
    int bad;
    pthread_mutex_lock(&g->mu);
    bad = g->bad;
    pthread_mutex_unlock(&g->mu);
    return bad;
}

static ssize_t gz_write(void *c, const char *buf, size_t n)
{
    gz_cookie *g = c;
    size_t done = 0;
    while (done < n) {
        size_t k = n - done < GZ_CHUNK - g->nfill ? n - done : GZ_CHUNK - g->nfill;
        memcpy(g->fill + g->nfill, buf + done, k);
        g->nfill += k;
        done += k;
        if (g->nfill == GZ_CHUNK)
            gz_hand_over(g);
    }
    if (gz_failed(g)) {
        errno = g->bad_errno ? g->bad_errno : EIO;
        return -1;
    }
    return (ssize_t)n;
}

/* The thread joined and the chunks freed; the gzip stream stays open. */
static void gz_stop(gz_cookie *g)
{
    if (g->threaded) {
        pthread_mutex_lock(&g->mu);
        while (g->pending)
            pthread_cond_wait(&g->cv, &g->mu);
        g->done = 1;
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->mu);
        pthread_join(g->thread, NULL);
        g->threaded = 0;
    }
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g->fill);
    free(g->busy);
}

static int gz_close(void *c)
{
    gz_cookie *g = c;
    if (g->nfill)
        gz_hand_over(g);
    gz_stop(g);
    int bad = g->bad, e = g->bad_errno;
    if (gzclose(g->gz) != Z_OK && !bad) {
        bad = 1;
        e = errno;
    }
    if (!bad && fsync(g->fd) != 0 && errno != EINVAL) {
        bad = 1;
        e = errno;
    }
    close(g->fd);
    free(g);
    if (bad)
        errno = e ? e : EIO;
    return bad ? -1 : 0;
}

static FILE *gz_stream(int fd)
{
    gz_cookie *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->fd = dup(fd);
    g->fill = malloc(GZ_CHUNK);
    g->busy = malloc(GZ_CHUNK);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    /* level 6: zlib's default (Z_DEFAULT_COMPRESSION), its speed/size balance */
    g->gz = g->fd >= 0 && g->fill && g->busy ? gzdopen(fd, "wb6") : NULL;
    FILE *f = g->gz ? fopencookie(g, "w", (cookie_io_functions_t){.write = gz_write,
                                                                 .close = gz_close})
                    : NULL;
    if (!f) {
        if (g->gz)
            gzclose(g->gz);
        if (g->fd >= 0)
            close(g->fd);
        gz_stop(g);
        free(g);
        return NULL;
    }
    /* without a thread (none could be made) each chunk is written in turn */
    g->threaded = pthread_create(&g->thread, NULL, gz_thread, g) == 0;
    return f;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

int rep_open(rep_file *rf, const char *path, cp_err *err)
{
    memset(rf, 0, sizeof *rf);
    snprintf(rf->path, sizeof rf->path, "%s", path);
    snprintf(rf->tmp, sizeof rf->tmp, "%s.tmp-%ld-XXXXXX", path, (long)getpid());
    int fd = mkstemp(rf->tmp);
    if (fd < 0)
        return cp_fail(err, CP_EXIT_INPUT, "%s: cannot create output file: %s", path,
                       strerror(errno));
    track(rf->tmp);
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask); /* mkstemp makes 0600; outputs are ordinary files */
    rf->gz = ends_with(path, ".gz");
    rf->f = rf->gz ? gz_stream(fd) : fdopen(fd, "w");
    if (!rf->f) {
        close(fd);
        unlink(rf->tmp);
        untrack(rf->tmp);
        return cp_fail(err, CP_EXIT_INTERNAL, "%s: cannot open output stream", path);
    }
    return 0;
}

static int put_in_place(const char *tmp, const char *path, cp_err *err)
{
    if (rename(tmp, path) == 0)
        return 0;
    int e = errno;
    unlink(tmp);
    return cp_fail(err, CP_EXIT_INPUT, "%s: cannot rename output into place: %s", path,
                   strerror(e));
}

int rep_close(rep_file *rf, int ok, cp_err *err)
{
    if (!rf->f)
        return -1;
    int e = 0;
    if (ferror(rf->f))
        e = errno ? errno : EIO;
    if (!e && fflush(rf->f) != 0)
        e = errno;
    /* a gzip stream syncs when it closes (gz_close) */
    if (!e && !rf->gz && fsync(fileno(rf->f)) != 0 && errno != EINVAL)
        e = errno;
    if (fclose(rf->f) != 0 && !e)
        e = errno ? errno : EIO;
    rf->f = NULL;
    if (!ok || e) {
        unlink(rf->tmp);
        untrack(rf->tmp);
        if (ok)
            return cp_fail(err, CP_EXIT_INPUT, "%s: write failed: %s", rf->path, strerror(e));
        return -1;
    }
    if (group.on && group.n < REP_MAX_GROUP) {
        snprintf(group.tmp[group.n], sizeof group.tmp[0], "%s", rf->tmp);
        snprintf(group.path[group.n], sizeof group.path[0], "%s", rf->path);
        group.n++;
        return 0;
    }
    int rc = put_in_place(rf->tmp, rf->path, err);
    untrack(rf->tmp);
    return rc;
}

void rep_group_begin(void)
{
    group.on = 1;
    group.n = 0;
}

int rep_group_end(int ok, cp_err *err)
{
    int rc = 0;
    /* the last file of the group marks it complete: the one it replaces
     * goes first, so an interruption between two renames leaves no marker
     * beside a mix of old and new files */
    if (ok && group.n > 0)
        unlink(group.path[group.n - 1]);
    for (int i = 0; i < group.n; i++) {
        if (ok && rc == 0)
            rc = put_in_place(group.tmp[i], group.path[i], err);
        else
            unlink(group.tmp[i]);
        untrack(group.tmp[i]);
    }
    group.on = 0;
    group.n = 0;
    return ok ? rc : -1;
}
