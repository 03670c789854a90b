/* workload_requests: the requests of a workload (see workload_int.h):
 * single entries, periodic and Poisson sources expanded, closed-loop
 * sources kept apart, CSV traces read, the classes named. */
#include "workloads/workload_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/datadir.h"
#include "models/encoder/encoder.h"

/* ---- requests ------------------------------------------------------------ */

/* The kinds of entry of requests:, each made by one key (a single request
 * by none of them), and the keys each takes. */
typedef enum { SRC_SINGLE, SRC_PERIODIC, SRC_POISSON, SRC_STREAMS, SRC_TRACE } wl_src;

static const char *const single_keys[] = { "prompt_tokens", "arrival_s", "decode_tokens",
                                           "cached_tokens", "audio_s", "name", NULL };
static const char *const periodic_keys[] = { "every_s", "count", "start_s", "prompt_tokens",
                                             "decode_tokens", "cached_tokens", "audio_s", "name",
                                             NULL };
static const char *const poisson_keys[] = { "rate_per_s", "count", "seed", "start_s",
                                            "prompt_tokens", "decode_tokens", "cached_tokens",
                                            "audio_s", "name", NULL };
static const char *const streams_keys[] = { "streams", "count", "think_s", "start_s",
                                            "prompt_tokens", "decode_tokens", "cached_tokens",
                                            "audio_s", "name", NULL };
static const char *const trace_keys[] = { "trace", "name", NULL };
/* every key of any kind (the suggestions for a misspelt one) */
static const char *const request_keys[] = { "prompt_tokens", "arrival_s", "decode_tokens",
                                            "cached_tokens", "audio_s", "name", "every_s", "count",
                                            "start_s", "rate_per_s", "seed", "streams",
                                            "think_s", "trace", NULL };

static const struct {
    const char *key;            /* the key that makes the kind; NULL: single */
    const char *name;           /* in messages */
    const char *const *keys;
} src_kinds[] = {
    { NULL, "a single request", single_keys },
    { "every_s", "a periodic entry (every_s)", periodic_keys },
    { "rate_per_s", "a Poisson entry (rate_per_s)", poisson_keys },
    { "streams", "a closed-loop entry (streams)", streams_keys },
    { "trace", "a trace entry (trace)", trace_keys },
};

/* Whether key is in the NULL-terminated list. */
static int wl_in_list(const char *const *list, const char *key)
{
    for (size_t i = 0; list[i]; i++)
        if (strcmp(list[i], key) == 0)
            return 1;
    return 0;
}

/* Index of key in map, -1 when absent (without marking it seen). */
static long key_index(const ynode *map, const char *key)
{
    for (size_t i = 0; i < map->n; i++)
        if (strcmp(map->keys[i], key) == 0)
            return (long)i;
    return -1;
}

/* The requests read so far (s->reqs, grown as needed) and what the single
 * entries' order check needs. */
typedef struct req_buf {
    scenario *s;
    size_t cap;
    int singles;                /* single entries so far */
    double last_arrival;        /* arrival_s of the last of them */
    size_t last_index;          /* its index in requests: */
    int sources;                /* periodic, Poisson, closed-loop or trace entries */
} req_buf;

/* Room for `more` requests; beyond WL_MAX_REQUESTS the error names key. */
static int buf_room(req_buf *b, long long more, cp_loc loc, const char *key, cp_err *err)
{
    scenario *s = b->s;
    long long need = (long long)s->nreqs + more;
    if (need > WL_MAX_REQUESTS)
        return cp_fail_at(err, loc, "%s: the requests would number %lld; cpsim takes at most %d "
                          "open-loop requests", key, need, WL_MAX_REQUESTS);
    if ((size_t)need <= b->cap)
        return 0;
    size_t cap = b->cap * 2 > (size_t)need ? b->cap * 2 : (size_t)need;
    wl_request *r = realloc(s->reqs, cap * sizeof *r);
    if (!r)
        return cp_fail(err, CP_EXIT_INTERNAL, "out of memory for %zu requests", cap);
    s->reqs = r;
    b->cap = cap;
    return 0;
}

static void buf_add(req_buf *b, wl_request r)
{
    b->s->reqs[b->s->nreqs++] = r;
}

/* The class of a request named `name` (interned into s->classes in first
 * use order); what and loc say where the name was written. */
static int intern_class(scenario *s, const char *name, const char *what, cp_loc loc, int *cls,
                        cp_err *err)
{
    static const char ok[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-";
    size_t len = strlen(name), good = strspn(name, ok);
    if (len == 0 || len >= WL_CLASS_LEN)
        return cp_fail_at(err, loc, "%s: a class name takes 1 to %d characters, got %zu", what,
                          WL_CLASS_LEN - 1, len);
    if (good < len) {
        unsigned char c = (unsigned char)name[good];
        char shown[8];
        if (c >= 32 && c < 127)
            snprintf(shown, sizeof shown, "'%c'", c);
        else
            snprintf(shown, sizeof shown, "\\x%02x", c);
        return cp_fail_at(err, loc, "%s: \"%.*s\" holds the character %s; a class name takes "
                          "letters, digits, '_', '.' and '-'", what, WL_CLASS_LEN, name, shown);
    }
    for (int i = 0; i < s->nclasses; i++)
        if (strcmp(s->classes[i], name) == 0) {
            *cls = i;
            return 0;
        }
    if (s->nclasses == WL_MAX_CLASSES)
        return cp_fail_at(err, loc, "%s: \"%s\" would be request class %d; cpsim takes at most %d",
                          what, name, WL_MAX_CLASSES + 1, WL_MAX_CLASSES);
    snprintf(s->classes[s->nclasses], sizeof s->classes[0], "%s", name);
    *cls = s->nclasses++;
    return 0;
}

/* A context within WL_MAX_PROMPT: cached + prompt + decode tokens. */
static int check_context(const char *what, cp_loc loc, long long cached, long long prompt,
                         long long decode, cp_err *err)
{
    if (cached + prompt + decode <= WL_MAX_PROMPT)
        return 0;
    return cp_fail_at(err, loc, "%s: cached_tokens + prompt_tokens + decode_tokens = %lld + %lld "
                      "+ %lld = %lld tokens; cpsim takes contexts of at most %lld", what, cached,
                      prompt, decode, cached + prompt + decode, WL_MAX_PROMPT);
}

/* Seconds of audio as whole mel frames (the feature extractor's hop,
 * models/encoder/encoder.h); a length under one frame is refused when
 * positive, or always with `nonzero` (-1 after cp_fail; what and at name
 * the value, instead says what to write for no audio). */
static int audio_frames_of(double seconds, int nonzero, const char *what, cp_loc at,
                           const char *instead, long long *frames, cp_err *err)
{
    *frames = llround(seconds * ENC_FRAMES_PER_S);
    if ((seconds > 0 || nonzero) && *frames == 0)
        return cp_fail_at(err, at, "%s: %g s is less than one mel frame (%g s); %s", what,
                          seconds, 1.0 / ENC_FRAMES_PER_S, instead);
    return 0;
}

/* What every request of an entry looks like (prompt_tokens required). */
typedef struct wl_shape {
    long long prompt, decode, cached;
    long long audio;            /* mel frames (audio_s x ENC_FRAMES_PER_S) */
    int cls;
} wl_shape;

static int read_shape(const ynode *item, const char *what, scenario *s, wl_shape *sh,
                      cp_err *err)
{
    *sh = (wl_shape){ 0, 0, 0, 0, -1 };
    const char *name = NULL;
    double audio_s = 0;
    if (yio_opt_int(item, what, "prompt_tokens", 1, WL_MAX_PROMPT, &sh->prompt, err) < 0 ||
        yio_opt_int(item, what, "decode_tokens", 0, WL_MAX_DECODE, &sh->decode, err) < 0 ||
        yio_opt_int(item, what, "cached_tokens", 0, WL_MAX_PROMPT, &sh->cached, err) < 0 ||
        yio_opt_double(item, what, "audio_s", 0, WL_MAX_AUDIO_S, &audio_s, err) < 0 ||
        yio_opt_str(item, what, "name", &name, err) < 0)
        return -1;
    const ynode *audio = yio_key(item, "audio_s");
    char akey[64];
    if (audio && audio_frames_of(audio_s, 1, yio_path(akey, sizeof akey, what, "audio_s"),
                                 audio->loc, "drop the key for a text-only request",
                                 &sh->audio, err) < 0)
        return -1;
    if (!yio_key(item, "prompt_tokens"))
        return cp_fail_at(err, item->loc, "%s: prompt_tokens is required", what);
    if (check_context(what, item->loc, sh->cached, sh->prompt, sh->decode, err) < 0)
        return -1;
    char key[64];
    return name ? intern_class(s, name, yio_path(key, sizeof key, what, "name"),
                               yio_key(item, "name")->loc, &sh->cls, err)
                : 0;
}

static wl_request shape_request(const wl_shape *sh, double arrival)
{
    return (wl_request){ .prompt_tokens = sh->prompt, .arrival_s = arrival,
                         .decode_tokens = sh->decode, .cached_tokens = sh->cached,
                         .cls = sh->cls, .audio_frames = sh->audio };
}

/* A required key of an entry of some kind. */
static int need_key(const ynode *item, const char *what, const char *kind_key, const char *key,
                    const char *why, cp_err *err)
{
    if (yio_key(item, key))
        return 0;
    return cp_fail_at(err, item->loc, "%s: %s needs %s (%s)", what, kind_key, key, why);
}

static int read_single(const ynode *item, size_t i, const char *what, req_buf *b, cp_err *err)
{
    double arrival = 0;
    wl_shape sh;
    if (yio_opt_double(item, what, "arrival_s", 0, WL_MAX_ARRIVAL, &arrival, err) < 0 ||
        read_shape(item, what, b->s, &sh, err) < 0)
        return -1;
    if (b->singles > 0 && arrival < b->last_arrival) {
        /* arrival_s may be absent (0): then the request itself is blamed */
        const ynode *at = yio_key(item, "arrival_s");
        return cp_fail_at(err, at ? at->loc : item->loc,
                          "%s.arrival_s: requests must be sorted by arrival_s; %g%s comes after "
                          "%g of requests.%zu", what, arrival, at ? "" : " (the default)",
                          b->last_arrival, b->last_index);
    }
    b->singles++;
    b->last_arrival = arrival;
    b->last_index = i;
    if (buf_room(b, 1, item->loc, what, err) < 0)
        return -1;
    buf_add(b, shape_request(&sh, arrival));
    return 0;
}

/* every_s with count: arrivals start_s + k * every_s, k = 0 .. count - 1
 * (every_s 0: all at start_s). */
static int read_periodic(const ynode *item, const char *what, req_buf *b, cp_err *err)
{
    double every = 0, start = 0;
    long long count = 0;
    wl_shape sh;
    /* every_s: 0 is `count` simultaneous arrivals at start_s (a burst) */
    if (yio_opt_double(item, what, "every_s", 0, WL_MAX_ARRIVAL, &every, err) < 0 ||
        yio_opt_int(item, what, "count", 1, WL_MAX_REQUESTS, &count, err) < 0 ||
        yio_opt_double(item, what, "start_s", 0, WL_MAX_ARRIVAL, &start, err) < 0 ||
        read_shape(item, what, b->s, &sh, err) < 0 ||
        need_key(item, what, "every_s", "count", "how many requests", err) < 0)
        return -1;
    double last = start + (double)(count - 1) * every;
    if (last > WL_MAX_ARRIVAL)
        return cp_fail_at(err, yio_key(item, "every_s")->loc,
                          "%s.every_s: the last of the %lld requests would arrive at %g s "
                          "(start_s + (count - 1) * every_s), beyond the %g s arrivals may take",
                          what, count, last, WL_MAX_ARRIVAL);
    char key[64];
    if (buf_room(b, count, yio_key(item, "count")->loc, yio_path(key, sizeof key, what, "count"),
                 err) < 0)
        return -1;
    for (long long k = 0; k < count; k++)
        buf_add(b, shape_request(&sh, start + (double)k * every));
    return 0;
}

/* The Poisson arrivals' generator: splitmix64 (Steele, Lea and Flood,
 * "Fast splittable pseudorandom number generators", OOPSLA 2014; the
 * constants of Vigna's splitmix64.c) from the state `seed`; the top 53
 * bits of each output give u = (bits + 0.5) / 2^53 in (0, 1), and
 * -log(u) / rate an exponential inter-arrival time of mean 1 / rate.  The
 * first request arrives one such time after start_s.  Only integer
 * arithmetic and one log per request: a seed gives the same arrivals on
 * every run. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static double exp_interval(uint64_t *state, double rate)
{
    double u = ((double)(splitmix64(state) >> 11) + 0.5) * 0x1.0p-53;
    return -log(u) / rate;
}

/* rate_per_s with count and seed: a Poisson process from start_s. */
static int read_poisson(const ynode *item, const char *what, req_buf *b, cp_err *err)
{
    double rate = 0, start = 0;
    long long count = 0, seed = 0;
    wl_shape sh;
    if (wl_opt_above(item, what, "rate_per_s", 0, WL_MAX_RATE, &rate, err) < 0 ||
        yio_opt_int(item, what, "count", 1, WL_MAX_REQUESTS, &count, err) < 0 ||
        yio_opt_int(item, what, "seed", 0, LLONG_MAX, &seed, err) < 0 ||
        yio_opt_double(item, what, "start_s", 0, WL_MAX_ARRIVAL, &start, err) < 0 ||
        read_shape(item, what, b->s, &sh, err) < 0 ||
        need_key(item, what, "rate_per_s", "count", "how many requests", err) < 0 ||
        need_key(item, what, "rate_per_s", "seed", "an integer >= 0; a seed draws the same "
                 "arrivals on every run", err) < 0)
        return -1;
    char key[64];
    if (buf_room(b, count, yio_key(item, "count")->loc, yio_path(key, sizeof key, what, "count"),
                 err) < 0)
        return -1;
    uint64_t state = (uint64_t)seed;
    double t = start;
    for (long long k = 0; k < count; k++) {
        t += exp_interval(&state, rate);
        if (t > WL_MAX_ARRIVAL)
            return cp_fail_at(err, yio_key(item, "rate_per_s")->loc,
                              "%s.rate_per_s: request %lld of %lld would arrive at %g s, beyond "
                              "the %g s arrivals may take (a higher rate or a lower count)",
                              what, k + 1, count, t, WL_MAX_ARRIVAL);
        buf_add(b, shape_request(&sh, t));
    }
    return 0;
}

/* streams: K closed-loop clients (s->streams). */
static int read_streams(const ynode *item, size_t entry, const char *what, req_buf *b,
                        cp_err *err)
{
    scenario *s = b->s;
    long long k = 0, count = 0;
    double think = 0, start = 0;
    wl_shape sh;
    if (yio_opt_int(item, what, "streams", 1, WL_MAX_CLIENTS, &k, err) < 0 ||
        yio_opt_int(item, what, "count", 0, WL_MAX_REQUESTS, &count, err) < 0 ||
        yio_opt_double(item, what, "think_s", 0, WL_MAX_ARRIVAL, &think, err) < 0 ||
        yio_opt_double(item, what, "start_s", 0, WL_MAX_ARRIVAL, &start, err) < 0 ||
        read_shape(item, what, s, &sh, err) < 0)
        return -1;
    if (s->nstreams == WL_MAX_STREAM_SRC)
        return cp_fail_at(err, item->loc, "%s: at most %d closed-loop (streams) entries", what,
                          WL_MAX_STREAM_SRC);
    if (count == 0 && !(s->duration_s > 0)) {
        const ynode *at = yio_key(item, "count");
        return cp_fail_at(err, at ? at->loc : yio_key(item, "streams")->loc,
                          "%s: streams without a count send requests until "
                          "simulation.duration_s, which is not set (give count, requests per "
                          "client, or simulation.duration_s)", what);
    }
    s->streams[s->nstreams++] = (wl_streams){ .streams = (int)k, .prompt_tokens = sh.prompt,
                                              .decode_tokens = sh.decode,
                                              .cached_tokens = sh.cached,
                                              .audio_frames = sh.audio, .start_s = start,
                                              .think_s = think, .count = count, .cls = sh.cls,
                                              .entry = (int)entry };
    return 0;
}

/* The columns of a trace file, in this order; the last three optional. */
static const char *const trace_cols[] = { "arrival_s", "prompt_tokens", "decode_tokens",
                                          "cached_tokens", "name", "audio_s" };
#define TRACE_HEADER \
    "arrival_s,prompt_tokens,decode_tokens[,cached_tokens[,name[,audio_s]]]"
#define TRACE_MAX_COLS 6

/* Where a trace file named in the workload lies: relative to the
 * workload's folder, as the other paths of the workload. */
char *wl_trace_path(char *buf, size_t len, const scenario *s, const char *file)
{
    char dir[1024];
    return cp_resolve(buf, len, cp_dirname(dir, sizeof dir, s->path), file);
}

/* Split a CSV line in place at the commas, blanks around the fields
 * trimmed; returns the number of fields (at most max + 1: one more says
 * "too many"), with each field's 1-based column. */
static int csv_split(char *line, char **field, int *col, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        char *end = strchr(p, ',');
        if (end)
            *end = '\0';
        char *f = p + strspn(p, " \t");
        size_t len = strlen(f);
        while (len > 0 && (f[len - 1] == ' ' || f[len - 1] == '\t'))
            f[--len] = '\0';
        if (n <= max) {
            field[n] = f;
            col[n] = (int)(f - line) + 1;
        }
        n++;
        if (!end || n > max)
            return n;
        p = end + 1;
    }
}

/* Whether t is a decimal number: [+-]digits[.digits][(e|E)[+-]digits], at
 * least one digit before the exponent.  strtod alone also takes hex
 * ("0x400", "0x1p3"), "inf" and "nan", which a trace never means. */
static int csv_decimal(const char *t)
{
    const char *p = t;
    int digits = 0;
    if (*p == '+' || *p == '-')
        p++;
    for (; isdigit((unsigned char)*p); p++)
        digits++;
    if (*p == '.')
        for (p++; isdigit((unsigned char)*p); p++)
            digits++;
    if (!digits)
        return 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!isdigit((unsigned char)*p))
            return 0;
        while (isdigit((unsigned char)*p))
            p++;
    }
    return *p == '\0';
}

/* A CSV integer: decimal, or a decimal number form that is an exact
 * integer ("1e3", "1024.0"). */
static int csv_int(const char *t, long long lo, long long hi, long long *out)
{
    if (!csv_decimal(t))
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(t, &end, 10);
    if (*end || errno) {
        double d = strtod(t, &end);
        /* 9.2e18 is just below 2^63 (as yamlio's parse_integer) */
        if (*end || !isfinite(d) || d != floor(d) || fabs(d) > 9.2e18)
            return -1;
        v = (long long)d;
    }
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int csv_double(const char *t, double lo, double hi, double *out)
{
    if (!csv_decimal(t))
        return -1;
    char *end;
    double d = strtod(t, &end);
    if (*end || !isfinite(d) || d < lo || d > hi)
        return -1;
    *out = d;
    return 0;
}

/* The header line: the columns of trace_cols, in order, the last three
 * optional; *ncols gets how many. */
static int trace_header(char *line, const char *path, int *ncols, cp_err *err)
{
    char shown[128];
    snprintf(shown, sizeof shown, "%.100s", line);
    char *field[TRACE_MAX_COLS + 1];
    int col[TRACE_MAX_COLS + 1];
    int n = csv_split(line, field, col, TRACE_MAX_COLS);
    int bad = n < 3 || n > TRACE_MAX_COLS ? 1 : 0;
    for (int c = 0; !bad && c < n; c++)
        if (strcmp(field[c], trace_cols[c]) != 0)
            bad = col[c];
    if (bad)
        return cp_fail_at(err, (cp_loc){ path, 1, bad }, "expected the header line "
                          TRACE_HEADER ", got \"%s\"", shown);
    *ncols = n;
    return 0;
}

/* One data row of a trace file: a request with the bounds of a single
 * entry; a row without a name takes def_cls. */
static int trace_row(scenario *s, char *line, const char *path, int lineno, int ncols,
                     int def_cls, cp_err *err)
{
    char *field[TRACE_MAX_COLS + 1];
    int col[TRACE_MAX_COLS + 1];
    int n = csv_split(line, field, col, TRACE_MAX_COLS);
    cp_loc at = { path, lineno, 1 };
    if (n != ncols)
        return cp_fail_at(err, at, "expected %d columns as the header says, got %s%d", ncols,
                          n > TRACE_MAX_COLS ? "more than " : "",
                          n > TRACE_MAX_COLS ? TRACE_MAX_COLS : n);
    double arrival = 0;
    long long v[3] = { 0, 0, 0 };       /* prompt, decode, cached tokens */
    static const long long lo[3] = { 1, 0, 0 }, hi[3] = { WL_MAX_PROMPT, WL_MAX_DECODE,
                                                          WL_MAX_PROMPT };
    for (int c = 0; c < ncols && c < 4; c++) {
        at.col = col[c];
        int bad = c == 0 ? csv_double(field[c], 0, WL_MAX_ARRIVAL, &arrival)
                         : csv_int(field[c], lo[c - 1], hi[c - 1], &v[c - 1]);
        if (bad < 0 && c == 0)
            return cp_fail_at(err, at, "arrival_s: expected a number in [0, %g], got \"%.40s\"",
                              WL_MAX_ARRIVAL, field[c]);
        if (bad < 0)
            return cp_fail_at(err, at, "%s: expected an integer in [%lld, %lld], got \"%.40s\"",
                              trace_cols[c], lo[c - 1], hi[c - 1], field[c]);
    }
    at.col = 1;
    if (check_context("the request", at, v[2], v[0], v[1], err) < 0)
        return -1;
    int cls = def_cls;
    if (ncols >= 5 && field[4][0]) {
        at.col = col[4];
        if (intern_class(s, field[4], "name", at, &cls, err) < 0)
            return -1;
    }
    long long frames = 0; /* an empty audio_s: a text-only request */
    if (ncols == 6 && field[5][0]) {
        double audio_s = 0;
        at.col = col[5];
        if (csv_double(field[5], 0, WL_MAX_AUDIO_S, &audio_s) < 0)
            return cp_fail_at(err, at, "audio_s: expected a number of seconds in [0, %g], got "
                              "\"%.40s\"", WL_MAX_AUDIO_S, field[5]);
        if (audio_frames_of(audio_s, 0, "audio_s", at, "leave the field empty for a text-only "
                            "request", &frames, err) < 0)
            return -1;
    }
    s->reqs[s->nreqs++] = (wl_request){ .prompt_tokens = v[0], .arrival_s = arrival,
                                        .decode_tokens = v[1], .cached_tokens = v[2],
                                        .cls = cls, .audio_frames = frames };
    return 0;
}

/* trace: FILE.csv, a header line then one request a line (any order). */
static int read_trace(const ynode *item, const char *what, req_buf *b, cp_err *err)
{
    scenario *s = b->s;
    const char *file = NULL, *name = NULL;
    char key[64];
    int def_cls = -1;
    if (yio_opt_str(item, what, "trace", &file, err) < 0 ||
        yio_opt_str(item, what, "name", &name, err) < 0)
        return -1;
    if (name && intern_class(s, name, yio_path(key, sizeof key, what, "name"),
                             yio_key(item, "name")->loc, &def_cls, err) < 0)
        return -1;
    cp_loc tloc = yio_key(item, "trace")->loc;
    yio_path(key, sizeof key, what, "trace");
    char path[1024];
    wl_trace_path(path, sizeof path, s, file);
    FILE *f = fopen(path, "r");
    if (!f)
        return cp_fail_at(err, tloc, "%s: cannot read %s: %s", key, path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, ncols = 0, rc = 0;
    long long rows = 0;
    ssize_t got;
    while (rc == 0 && (got = getline(&line, &cap, f)) >= 0) {
        lineno++;
        size_t nul = strlen(line);
        if ((ssize_t)nul < got) {   /* C strings would end the row there */
            rc = cp_fail_at(err, (cp_loc){ path, lineno, (int)nul + 1 },
                            "a NUL byte in the row (a CSV trace is text)");
            break;
        }
        line[strcspn(line, "\r\n")] = '\0';
        char *text = line;
        if (lineno == 1 && strncmp(text, "\xef\xbb\xbf", 3) == 0)
            text += 3;                  /* a UTF-8 byte order mark */
        if (lineno == 1) {
            rc = trace_header(text, path, &ncols, err);
            continue;
        }
        if (text[strspn(text, " \t")] == '\0')
            continue;                   /* blank lines */
        rc = buf_room(b, 1, (cp_loc){ path, lineno, 1 }, key, err);
        if (rc == 0)
            rc = trace_row(s, text, path, lineno, ncols, def_cls, err);
        rows++;
    }
    if (rc == 0 && ferror(f))
        rc = cp_fail_at(err, tloc, "%s: cannot read %s: %s", key, path, strerror(errno));
    else if (rc == 0 && lineno == 0)
        rc = cp_fail_at(err, (cp_loc){ path, 0, 0 }, "empty; a trace starts with the header line "
                        TRACE_HEADER);
    else if (rc == 0 && rows == 0)
        rc = cp_fail_at(err, (cp_loc){ path, 0, 0 }, "no request after the header line");
    free(line);
    fclose(f);
    return rc;
}

/* One entry of requests:, of exactly one kind, with only that kind's keys. */
static int read_entry(const ynode *item, size_t i, req_buf *b, cp_err *err)
{
    char what[48];
    snprintf(what, sizeof what, "requests.%zu", i);
    if (yio_want_map(item, what, err) < 0)
        return -1;
    wl_src kind = SRC_SINGLE;
    for (size_t k = 1; k < COUNT(src_kinds); k++) {
        long at = key_index(item, src_kinds[k].key);
        if (at < 0)
            continue;
        if (kind != SRC_SINGLE)
            return cp_fail_at(err, item->key_locs[at], "%s: %s and %s in one entry; an entry is "
                              "one kind of request source", what, src_kinds[kind].name,
                              src_kinds[k].name);
        kind = (wl_src)k;
    }
    const char *const *keys = src_kinds[kind].keys;
    for (size_t k = 0; k < item->n; k++)
        if (wl_in_list(request_keys, item->keys[k]) && !wl_in_list(keys, item->keys[k])) {
            char list[256] = "";
            for (size_t j = 0; keys[j]; j++) {
                size_t o = strlen(list);
                snprintf(list + o, sizeof list - o, "%s%s", j ? ", " : "", keys[j]);
            }
            return cp_fail_at(err, item->key_locs[k], "%s: %s takes no %s; its keys: %s", what,
                              src_kinds[kind].name, item->keys[k], list);
        }
    for (size_t j = 0; keys[j]; j++)
        yio_key(item, keys[j]);
    if (yio_no_unknown(item, what, request_keys, err) < 0)
        return -1;
    b->sources += kind != SRC_SINGLE;
    switch (kind) {
    case SRC_SINGLE:
        return read_single(item, i, what, b, err);
    case SRC_PERIODIC:
        return read_periodic(item, what, b, err);
    case SRC_POISSON:
        return read_poisson(item, what, b, err);
    case SRC_STREAMS:
        return read_streams(item, i, what, b, err);
    case SRC_TRACE:
        return read_trace(item, what, b, err);
    }
    return 0;
}

/* Stable merge sort of r[0, n) by arrival_s (tmp: room for n). */
static void sort_by_arrival(wl_request *r, wl_request *tmp, size_t n)
{
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t a = lo, c = mid, k = lo;
            while (a < mid && c < hi)
                tmp[k++] = r[c].arrival_s < r[a].arrival_s ? r[c++] : r[a++];
            while (a < mid)
                tmp[k++] = r[a++];
            while (c < hi)
                tmp[k++] = r[c++];
        }
        memcpy(r, tmp, n * sizeof *r);
    }
}

/* requests: a non-empty list of entries (single requests sorted by arrival
 * time among themselves); every open-loop request they make, merged in
 * arrival order (file order at equal times). */
/* One slo map's bounds into o (what: its dotted path). */
static int read_slo_bounds(const ynode *n, const char *what, wl_slo *o, cp_err *err)
{
    static const char *const keys[] = { "ttft_s", "tpot_s", NULL };
    static const char *const outer[] = { "ttft_s", "tpot_s", "by_name", NULL };
    if (yio_want_map(n, what, err) < 0 ||
        yio_opt_double(n, what, "ttft_s", 1e-9, 1e9, &o->ttft_s, err) < 0 ||
        yio_opt_double(n, what, "tpot_s", 1e-9, 1e9, &o->tpot_s, err) < 0)
        return -1;
    return yio_no_unknown(n, what, strcmp(what, "slo") == 0 ? outer : keys, err);
}

/* slo: {ttft_s, tpot_s, by_name: {CLASS: {ttft_s, tpot_s}}}: the goodput
 * objective; a class's bounds default to the top level's.  After the
 * requests, so that by_name can name only classes that exist. */
static int read_slo(const ynode *root, scenario *s, cp_err *err)
{
    const ynode *n = yio_key(root, "slo");
    if (!n)
        return 0;
    s->slo_given = 1;
    const ynode *by = yio_key(n, "by_name");
    if (read_slo_bounds(n, "slo", &s->slo, err) < 0)
        return -1;
    if (s->slo.ttft_s <= 0 && s->slo.tpot_s <= 0 && !by)
        return cp_fail_at(err, n->loc, "slo: give ttft_s, tpot_s or by_name (seconds)");
    for (int c = 0; c < s->nclasses; c++)
        s->slo_cls[c] = s->slo;
    if (!by)
        return 0;
    if (yio_want_map(by, "slo.by_name", err) < 0)
        return -1;
    for (size_t k = 0; k < by->n; k++) {
        const char *name = by->keys[k];
        char what[96], known[WL_MAX_CLASSES * (WL_CLASS_LEN + 2) + 8] = "";
        snprintf(what, sizeof what, "slo.by_name.%.48s", name);
        int c = 0;
        while (c < s->nclasses && strcmp(s->classes[c], name) != 0)
            c++;
        for (int i = 0; i < s->nclasses; i++)
            strcat(strcat(known, i ? ", " : ""), s->classes[i]);
        if (c == s->nclasses)
            return cp_fail_at(err, by->key_locs[k], "%s: no request entry has name: %s (the "
                              "classes: %s)", what, name, s->nclasses ? known : "none");
        (void)yio_key(by, name);
        if (read_slo_bounds(by->kids[k], what, &s->slo_cls[c], err) < 0)
            return -1;
    }
    return 0;
}

int wl_read_requests(const ynode *root, scenario *s, cp_err *err)
{
    const ynode *n = yio_key(root, "requests");
    if (!n)
        return cp_fail_at(err, (cp_loc){ s->path, 0, 0 },
                          "requests: required key is missing (a list of {prompt_tokens, "
                          "arrival_s, decode_tokens})");
    if (yio_want_seq(n, "requests", err) < 0)
        return -1;
    if (n->n == 0)
        return cp_fail_at(err, n->loc, "requests: the list is empty; give at least one request");
    req_buf b = { .s = s, .cap = n->n };
    s->reqs = calloc(n->n, sizeof *s->reqs);
    if (!s->reqs)
        return cp_fail(err, CP_EXIT_INTERNAL, "out of memory for %zu requests", n->n);
    for (size_t i = 0; i < n->n; i++)
        if (read_entry(n->kids[i], i, &b, err) < 0)
            return -1;
    if (s->nreqs == 0 && s->nstreams == 0)
        return cp_fail_at(err, n->loc, "requests: the entries make no request");
    int sorted = 1;
    for (int q = 1; q < s->nreqs && sorted; q++)
        sorted = s->reqs[q].arrival_s >= s->reqs[q - 1].arrival_s;
    if (!sorted) {
        wl_request *tmp = cp_xcalloc((size_t)s->nreqs, sizeof *tmp);
        sort_by_arrival(s->reqs, tmp, (size_t)s->nreqs);
        free(tmp);
    }
    s->serving = s->nreqs > 1 || b.sources > 0 || s->duration_s > 0;
    s->audio_loaded = 0;
    for (int q = 0; q < s->nreqs; q++)
        s->audio_loaded |= s->reqs[q].audio_frames > 0;
    for (int k = 0; k < s->nstreams; k++)
        s->audio_loaded |= s->streams[k].audio_frames > 0;
    return read_slo(root, s, err);
}

