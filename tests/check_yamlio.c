/* check_yamlio: the YAML adapter (base/yamlio.c): parsing with
 * locations, typed accessors and their messages, --set, merge, dump. */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/yamlio.h"

/* Parse text (origin "t.yaml"); the test fails on a parse error. */
static ydoc *parse(const char *text)
{
    cp_err err = { 0 };
    ydoc *doc = yio_parse_string(text, strlen(text), "t.yaml", &err);
    ck_assert_msg(doc != NULL, "unexpected parse error: %s", err.msg);
    return doc;
}

/* Parse text and expect an input error whose message contains want. */
static void parse_fails(const char *text, const char *want)
{
    cp_err err = { 0 };
    ydoc *doc = yio_parse_string(text, strlen(text), "t.yaml", &err);
    ck_assert_ptr_null(doc);
    ck_assert_int_eq(err.code, CP_EXIT_INPUT);
    ck_assert_msg(strstr(err.msg, want), "message \"%s\" lacks \"%s\"", err.msg, want);
}

static void assert_msg(const cp_err *err, const char *want)
{
    ck_assert_int_eq(err->code, CP_EXIT_INPUT);
    ck_assert_msg(strstr(err->msg, want), "message \"%s\" lacks \"%s\"", err->msg, want);
}

/* The node at a dotted path (keys and list indices), NULL when absent. */
static const ynode *at(const ydoc *doc, const char *path)
{
    const ynode *n = yio_root((ydoc *)doc);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *seg = strtok(buf, "."); seg && n; seg = strtok(NULL, ".")) {
        if (n->kind == YN_SEQ) {
            size_t i = strtoul(seg, NULL, 10);
            n = i < n->n ? n->kids[i] : NULL;
        } else {
            n = yio_key(n, seg);
        }
    }
    return n;
}

/* yio_dump output as a string (caller frees). */
static char *dump(const ynode *n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    yio_dump(n, f, 0);
    fclose(f);
    return buf;
}

static int same_tree(const ynode *a, const ynode *b)
{
    if (a->kind != b->kind || a->n != b->n)
        return 0;
    if (a->kind == YN_SCALAR && (strcmp(a->str, b->str) || a->quoted != b->quoted))
        return 0;
    for (size_t i = 0; i < a->n; i++) {
        if (a->kind == YN_MAP && strcmp(a->keys[i], b->keys[i]))
            return 0;
        if (!same_tree(a->kids[i], b->kids[i]))
            return 0;
    }
    return 1;
}

static const char *const sample =
    "# a comment\n"
    "model: qwen3-32b\n"
    "parallel:\n"
    "    tp: 8\n"
    "    exchange: \"ring\"\n"
    "requests:\n"
    "  - prompt_tokens: 1_000\n"
    "    arrival_s: 0.5\n"
    "  - {prompt_tokens: 2, arrival_s: ~}\n"
    "empty:\n";

START_TEST(test_yamlio_tree_and_locations)
{
    ydoc *doc = parse(sample);
    const ynode *root = yio_root(doc);
    ck_assert_int_eq(root->kind, YN_MAP);
    ck_assert_int_eq(root->n, 4);
    ck_assert_str_eq(root->keys[1], "parallel");
    ck_assert_int_eq(root->key_locs[1].line, 3);
    ck_assert_int_eq(root->key_locs[1].col, 1);

    const ynode *tp = at(doc, "parallel.tp");
    ck_assert_int_eq(tp->kind, YN_SCALAR);
    ck_assert_str_eq(tp->str, "8");
    ck_assert_str_eq(tp->loc.origin, "t.yaml");
    ck_assert_int_eq(tp->loc.line, 4);
    ck_assert_int_eq(tp->loc.col, 9);
    ck_assert_int_eq(tp->quoted, 0);

    const ynode *ex = at(doc, "parallel.exchange");
    ck_assert_int_eq(ex->quoted, 1);
    ck_assert_str_eq(ex->str, "ring");

    const ynode *reqs = at(doc, "requests");
    ck_assert_int_eq(reqs->kind, YN_SEQ);
    ck_assert_int_eq(reqs->n, 2);
    ck_assert_int_eq(reqs->kids[1]->loc.line, 9);
    ck_assert_int_eq(reqs->kids[1]->loc.col, 5);
    ck_assert_int_eq(at(doc, "requests.1.arrival_s")->kind, YN_NULL);
    ck_assert_int_eq(at(doc, "empty")->kind, YN_NULL);
    yio_free(doc);
}
END_TEST

START_TEST(test_yamlio_empty_and_file)
{
    ydoc *doc = parse("# only a comment\n");
    ck_assert_int_eq(yio_root(doc)->kind, YN_MAP);
    ck_assert_int_eq(yio_root(doc)->n, 0);
    yio_free(doc);
    doc = parse("---\n");
    ck_assert_int_eq(yio_root(doc)->kind, YN_MAP);
    yio_free(doc);

    char path[] = "/tmp/check_yamlio_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs(sample, f);
    fclose(f);
    cp_err err = { 0 };
    doc = yio_parse_file(path, &err);
    ck_assert_ptr_nonnull(doc);
    ck_assert_str_eq(at(doc, "parallel.tp")->loc.origin, path);
    yio_free(doc);

    unlink(path);
    ck_assert_ptr_null(yio_parse_file(path, &err));
    assert_msg(&err, "cannot open");
    ck_assert_msg(strncmp(err.msg, path, strlen(path)) == 0, "%s", err.msg);

    cp_err err2 = { 0 };
    ck_assert_ptr_null(yio_parse_file("/tmp", &err2));
    assert_msg(&err2, "/tmp: cannot read");
}
END_TEST

START_TEST(test_yamlio_syntax_errors)
{
    parse_fails("a: [1, 2\nb: 3\n", "t.yaml:2:2: did not find expected ',' or ']'");
    parse_fails("a:\n  b: 1\n c: 2\n", "t.yaml:3:2:");
    parse_fails("a:\n\tb: 1\n", "t.yaml:2:1:");
    parse_fails("a:\n\tb: 1\n", "tab");
    parse_fails("a: b: c\n", "t.yaml:1:5: mapping values are not allowed");
    parse_fails("a: \"open\n", "t.yaml:");
    parse_fails("a: 1\n---\nb: 2\n", "t.yaml:2:1: a second YAML document");
    parse_fails("? [a]\n: 1\n", "mapping keys must be plain text");
    parse_fails("a: \"\\xff\\xfe\"\nb: \x80\n", "t.yaml:2:4: unreadable input (byte 0x80)");

    char deep[200];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    cp_err err = { 0 };
    ck_assert_ptr_null(yio_parse_string(deep, sizeof deep, "t.yaml", &err));
    assert_msg(&err, "nesting deeper than 64 levels");
}
END_TEST

START_TEST(test_yamlio_anchors_and_duplicates)
{
    parse_fails("a: &x 1\nb: *x\n", "t.yaml:1:4: anchors (&x) are not supported");
    parse_fails("a: *x\n", "t.yaml:1:4: aliases (*x) are not supported");
    parse_fails("base: &b {tp: 2}\nx:\n  <<: *b\n", "anchors (&b)");
    parse_fails("a: 1\nb: 2\na: 3\n",
                "t.yaml:3:1: duplicate key \"a\" at the top level (first written at line 1, "
                "column 1)");
    parse_fails("p:\n  tp: 1\n  sp: 2\n  tp: 4\n",
                "t.yaml:4:3: duplicate key \"tp\" in p (first written at line 2, column 3)");
    parse_fails("r:\n  - {x: 1, x: 2}\n", "duplicate key \"x\" in r.0");
}
END_TEST

START_TEST(test_yamlio_int)
{
    ydoc *doc = parse("a: 42\nb: -7\nc: 1_000_000\nd: 1e6\ne: 65536.0\nf: +3\n"
                      "x:\n  y: 1.5\n  z: \"8\"\n  u: 1__0\n  v: _1\n  w: 0x10\n"
                      "  big: 99999999999999999999\n  bigf: 1e19\n  m: {}\n  l: [1]\n  n:\n");
    cp_err err = { 0 };
    long long v = 0;
    ck_assert_int_eq(yio_int(at(doc, "a"), "a", 0, 100, &v, &err), 0);
    ck_assert_int_eq(v, 42);
    ck_assert_int_eq(yio_int(at(doc, "b"), "b", LLONG_MIN, LLONG_MAX, &v, &err), 0);
    ck_assert_int_eq(v, -7);
    ck_assert_int_eq(yio_int(at(doc, "c"), "c", 0, LLONG_MAX, &v, &err), 0);
    ck_assert_int_eq(v, 1000000);
    ck_assert_int_eq(yio_int(at(doc, "d"), "d", 0, LLONG_MAX, &v, &err), 0);
    ck_assert_int_eq(v, 1000000);
    ck_assert_int_eq(yio_int(at(doc, "e"), "e", 0, LLONG_MAX, &v, &err), 0);
    ck_assert_int_eq(v, 65536);
    ck_assert_int_eq(yio_int(at(doc, "f"), "f", 0, LLONG_MAX, &v, &err), 0);
    ck_assert_int_eq(v, 3);
    ck_assert_int_eq(err.code, 0);

    ck_assert_int_eq(yio_int(at(doc, "a"), "a", 0, 10, &v, &err), -1);
    assert_msg(&err, "t.yaml:1:4: a: expected an integer in [0, 10], got \"42\"");
    ck_assert_int_eq(v, 3);

    static const struct {
        const char *key, *want;
    } bad[] = {
        { "x.y", "t.yaml:8:6: x.y: expected an integer >= 0, got \"1.5\"" },
        { "x.z", "t.yaml:9:6: x.z: expected an integer >= 0, got the quoted string \"8\"" },
        { "x.u", "got \"1__0\"" },
        { "x.v", "got \"_1\"" },
        { "x.w", "got \"0x10\"" },
        { "x.big", "got \"99999999999999999999\"" },
        { "x.bigf", "got \"1e19\"" },
        { "x.m", "x.m: expected an integer >= 0, got a mapping" },
        { "x.l", "x.l: expected an integer >= 0, got a list" },
        { "x.n", "x.n: expected an integer >= 0, got an empty value" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cp_err e = { 0 };
        ck_assert_int_eq(yio_int(at(doc, bad[i].key), bad[i].key, 0, LLONG_MAX, &v, &e), -1);
        assert_msg(&e, bad[i].want);
    }
    cp_err e = { 0 };
    ck_assert_int_eq(yio_int(NULL, "gone", 0, 1, &v, &e), -1);
    assert_msg(&e, "gone: expected an integer in [0, 1], got nothing");
    yio_free(doc);
}
END_TEST

START_TEST(test_yamlio_double)
{
    ydoc *doc = parse("a: 1.5e12\nb: .5\nc: -2\nd: 3.\n"
                      "bad:\n  inf: inf\n  yinf: .inf\n  nan: nan\n  huge: 1e400\n"
                      "  junk: 1.5x\n  e: 1e\n  dot: .\n");
    cp_err err = { 0 };
    double v = 0;
    ck_assert_int_eq(yio_double(at(doc, "a"), "a", 0, 1e13, &v, &err), 0);
    ck_assert(v == 1.5e12);
    ck_assert_int_eq(yio_double(at(doc, "b"), "b", 0, 1, &v, &err), 0);
    ck_assert(v == 0.5);
    ck_assert_int_eq(yio_double(at(doc, "c"), "c", -5, 1, &v, &err), 0);
    ck_assert(v == -2.0);
    ck_assert_int_eq(yio_double(at(doc, "d"), "d", 0, 5, &v, &err), 0);
    ck_assert(v == 3.0);
    ck_assert_int_eq(yio_double(at(doc, "a"), "a", 0, 1e6, &v, &err), -1);
    assert_msg(&err, "t.yaml:1:4: a: expected a number in [0, 1e+06], got \"1.5e12\"");

    static const char *const keys[] = { "inf", "yinf", "nan", "huge", "junk", "e", "dot" };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char path[32];
        snprintf(path, sizeof path, "bad.%s", keys[i]);
        cp_err e = { 0 };
        ck_assert_int_eq(yio_double(at(doc, path), path, -1e300, 1e300, &v, &e), -1);
        assert_msg(&e, "expected a number in");
    }
    yio_free(doc);
}
END_TEST

START_TEST(test_yamlio_bool_str_enum)
{
    ydoc *doc = parse("t1: true\nt2: YES\nt3: On\nf1: False\nf2: no\nf3: OFF\n"
                      "q: \"true\"\nm: maybe\ns: hello\nl: [a]\nn: ~\nex: rign\nfar: zzzzzz\n");
    static const char *const trues[] = { "t1", "t2", "t3" };
    static const char *const falses[] = { "f1", "f2", "f3" };
    cp_err err = { 0 };
    for (int i = 0; i < 3; i++) {
        int b = -1;
        ck_assert_int_eq(yio_bool(at(doc, trues[i]), trues[i], &b, &err), 0);
        ck_assert_int_eq(b, 1);
        ck_assert_int_eq(yio_bool(at(doc, falses[i]), falses[i], &b, &err), 0);
        ck_assert_int_eq(b, 0);
    }
    int b = 7;
    ck_assert_int_eq(yio_bool(at(doc, "m"), "m", &b, &err), -1);
    assert_msg(&err, "t.yaml:8:4: m: expected true or false, got \"maybe\"");
    ck_assert_int_eq(b, 7);
    cp_err e2 = { 0 };
    ck_assert_int_eq(yio_bool(at(doc, "q"), "q", &b, &e2), -1);
    assert_msg(&e2, "got the quoted string \"true\"");

    cp_err e3 = { 0 };
    ck_assert_str_eq(yio_str(at(doc, "s"), "s", &e3), "hello");
    ck_assert_str_eq(yio_str(at(doc, "q"), "q", &e3), "true");
    ck_assert_ptr_null(yio_str(at(doc, "l"), "l", &e3));
    assert_msg(&e3, "t.yaml:10:4: l: expected a string, got a list");
    cp_err e4 = { 0 };
    ck_assert_ptr_null(yio_str(at(doc, "n"), "n", &e4));
    assert_msg(&e4, "n: expected a string, got null");

    static const char *const names[] = { "auto", "ulysses", "all_gather", "ring", "none", NULL };
    int v = -1;
    cp_err e5 = { 0 };
    ck_assert_int_eq(yio_enum(at(doc, "s"), "s", (const char *const[]){ "x", "hello", NULL }, &v,
                              &e5),
                     0);
    ck_assert_int_eq(v, 1);
    ck_assert_int_eq(yio_enum(at(doc, "ex"), "parallel.exchange", names, &v, &e5), -1);
    assert_msg(&e5, "t.yaml:12:5: parallel.exchange: expected one of auto, ulysses, "
                    "all_gather, ring, none, got \"rign\" (did you mean \"ring\"?)");
    cp_err e6 = { 0 };
    ck_assert_int_eq(yio_enum(at(doc, "far"), "far", names, &v, &e6), -1);
    assert_msg(&e6, "got \"zzzzzz\"");
    ck_assert_ptr_null(strstr(e6.msg, "did you mean"));
    ck_assert_int_eq(v, 1);
    yio_free(doc);
}
END_TEST

START_TEST(test_yamlio_optional_and_unknown)
{
    ydoc *doc = parse("parallel:\n  tp: 4\n  tpp: 2\n  ring_overlap: on\n  name: x\n"
                      "  ratio: 0.25\n  split: zigzag\nmodle: a\nzzzzzzzz: 1\n");
    const ynode *par = at(doc, "parallel");
    cp_err err = { 0 };
    long long tp = 1, sp = 1;
    double ratio = 0;
    int ov = 0, split = 0;
    const char *name = NULL;
    static const char *const splits[] = { "striped", "contiguous", "zigzag", NULL };
    ck_assert_int_eq(yio_opt_int(par, "parallel", "tp", 1, 4096, &tp, &err), 0);
    ck_assert_int_eq(yio_opt_int(par, "parallel", "sp", 1, 4096, &sp, &err), 0);
    ck_assert_int_eq(yio_opt_bool(par, "parallel", "ring_overlap", &ov, &err), 0);
    ck_assert_int_eq(yio_opt_str(par, "parallel", "name", &name, &err), 0);
    ck_assert_int_eq(yio_opt_double(par, "parallel", "ratio", 0, 1, &ratio, &err), 0);
    ck_assert_int_eq(yio_opt_enum(par, "parallel", "split", splits, &split, &err), 0);
    ck_assert_int_eq(tp, 4);
    ck_assert_int_eq(sp, 1);
    ck_assert_int_eq(ov, 1);
    ck_assert_str_eq(name, "x");
    ck_assert(ratio == 0.25);
    ck_assert_int_eq(split, 2);
    ck_assert_int_eq(err.code, 0);

    ck_assert_int_eq(yio_opt_int(par, "parallel", "tp", 1, 2, &tp, &err), -1);
    assert_msg(&err, "t.yaml:2:7: parallel.tp: expected an integer in [1, 2], got \"4\"");

    static const char *const known[] = { "tp", "sp", "ep", "dp", "ring_overlap", "name",
                                         "ratio", "split", NULL };
    cp_err e2 = { 0 };
    ck_assert_int_eq(yio_no_unknown(par, "parallel", known, &e2), -1);
    assert_msg(&e2, "t.yaml:3:3: unknown key \"tpp\" in parallel (did you mean \"tp\"?)");

    static const char *const top[] = { "model", "parallel", NULL };
    const ynode *root = yio_root(doc);
    cp_err e3 = { 0 };
    ck_assert_int_eq(yio_no_unknown(root, "", top, &e3), -1);
    assert_msg(&e3, "t.yaml:8:1: unknown key \"modle\" at the top level (did you mean "
                    "\"model\"?)");
    ck_assert_ptr_nonnull(yio_key(root, "modle"));
    cp_err e4 = { 0 };
    ck_assert_int_eq(yio_no_unknown(root, "", top, &e4), -1);
    assert_msg(&e4, "t.yaml:9:1: unknown key \"zzzzzzzz\" at the top level (known keys: "
                    "model, parallel)");
    ck_assert_ptr_nonnull(yio_key(root, "zzzzzzzz"));
    cp_err e5 = { 0 };
    ck_assert_int_eq(yio_no_unknown(root, "", top, &e5), 0);
    ck_assert_ptr_null(yio_key(root, "absent"));
    ck_assert_ptr_null(yio_key(at(doc, "parallel.tp"), "x"));

    cp_err e6 = { 0 };
    ck_assert_int_eq(yio_want_map(at(doc, "parallel.tp"), "parallel.tp", &e6), -1);
    assert_msg(&e6, "t.yaml:2:7: parallel.tp: expected a mapping, got \"4\"");
    cp_err e7 = { 0 };
    ck_assert_int_eq(yio_want_seq(par, "parallel", &e7), -1);
    assert_msg(&e7, "t.yaml:2:3: parallel: expected a list, got a mapping");
    ck_assert_int_eq(yio_want_map(par, "parallel", &e7), 0);

    char buf[64];
    ck_assert_str_eq(yio_path(buf, sizeof buf, "", "model"), "model");
    ck_assert_str_eq(yio_path(buf, sizeof buf, "a.b", "c"), "a.b.c");
    yio_free(doc);
}
END_TEST

/* Apply one --set; the test fails on error. */
static void set_ok(ydoc *doc, const char *assignment)
{
    cp_err err = { 0 };
    ck_assert_msg(yio_set(doc, assignment, &err) == 0, "%s: %s", assignment, err.msg);
}

static void set_fails(ydoc *doc, const char *assignment, const char *want)
{
    cp_err err = { 0 };
    ck_assert_int_eq(yio_set(doc, assignment, &err), -1);
    assert_msg(&err, want);
}

START_TEST(test_yamlio_set)
{
    ydoc *doc = parse("platform: h100\nparallel:\n  tp: 8\nrequests:\n  - prompt_tokens: 1\n"
                      "engine:\nlist: [a, b]\n");
    set_ok(doc, "parallel.tp=2");
    const ynode *tp = at(doc, "parallel.tp");
    ck_assert_str_eq(tp->str, "2");
    ck_assert_str_eq(tp->loc.origin, "--set parallel.tp=2");
    ck_assert_int_eq(tp->loc.line, 0);

    /* accessor errors on a --set value name the assignment */
    cp_err err = { 0 };
    long long v;
    set_ok(doc, "parallel.sp=x");
    ck_assert_int_eq(yio_int(at(doc, "parallel.sp"), "parallel.sp", 1, 4096, &v, &err), -1);
    assert_msg(&err, "--set parallel.sp=x: parallel.sp: expected an integer in [1, 4096], "
                     "got \"x\"");

    /* missing maps are created */
    set_ok(doc, "simulation.net.model=l07");
    ck_assert_int_eq(at(doc, "simulation")->kind, YN_MAP);
    ck_assert_str_eq(at(doc, "simulation.net.model")->str, "l07");

    /* a scalar becomes {name: scalar}; the name keeps its file location */
    set_ok(doc, "platform.nodes=2");
    const ynode *plat = at(doc, "platform");
    ck_assert_int_eq(plat->kind, YN_MAP);
    ck_assert_str_eq(at(doc, "platform.name")->str, "h100");
    ck_assert_int_eq(at(doc, "platform.name")->loc.line, 1);
    ck_assert_str_eq(at(doc, "platform.nodes")->str, "2");
    /* a null becomes a map */
    set_ok(doc, "engine.graph=captured");
    ck_assert_str_eq(at(doc, "engine.graph")->str, "captured");

    /* lists: replace, append, create */
    set_ok(doc, "requests.0.prompt_tokens=5");
    set_ok(doc, "requests.1.prompt_tokens=6");
    set_ok(doc, "requests.1.arrival_s=2.5");
    ck_assert_int_eq(at(doc, "requests")->n, 2);
    ck_assert_str_eq(at(doc, "requests.0.prompt_tokens")->str, "5");
    ck_assert_str_eq(at(doc, "requests.1.arrival_s")->str, "2.5");
    set_ok(doc, "list.2=c");
    set_ok(doc, "list.0=z");
    ck_assert_int_eq(at(doc, "list")->n, 3);
    ck_assert_str_eq(at(doc, "list.0")->str, "z");
    ck_assert_str_eq(at(doc, "list.2")->str, "c");
    set_ok(doc, "fresh.0.x=1");
    ck_assert_int_eq(at(doc, "fresh")->kind, YN_SEQ);
    ck_assert_str_eq(at(doc, "fresh.0.x")->str, "1");

    /* the value is YAML flow */
    set_ok(doc, "parallel.layer_sharding=[q_b_proj,o_proj]");
    const ynode *ls = at(doc, "parallel.layer_sharding");
    ck_assert_int_eq(ls->kind, YN_SEQ);
    ck_assert_int_eq(ls->n, 2);
    ck_assert_str_eq(ls->kids[1]->str, "o_proj");
    ck_assert_str_eq(ls->kids[1]->loc.origin, "--set parallel.layer_sharding=[q_b_proj,o_proj]");
    set_ok(doc, "obj={a: 1, b: [2]}");
    ck_assert_str_eq(at(doc, "obj.b.0")->str, "2");
    set_ok(doc, "obj.s=\"8\"");
    ck_assert_int_eq(at(doc, "obj.s")->quoted, 1);
    set_ok(doc, "obj.e=");
    ck_assert_int_eq(at(doc, "obj.e")->kind, YN_NULL);
    set_ok(doc, "obj.eq=a=b");
    ck_assert_str_eq(at(doc, "obj.eq")->str, "a=b");
    yio_free(doc);
}
END_TEST

START_TEST(test_yamlio_set_errors)
{
    ydoc *doc = parse("platform: h100\nparallel:\n  tp: 8\nlist: [a, b]\n");
    set_fails(doc, "parallel.tp", "--set parallel.tp: expected key.path=value");
    set_fails(doc, "=3", "--set =3: expected key.path=value");
    set_fails(doc, "parallel..tp=3", "--set parallel..tp=3: empty key in the path (part 2)");
    set_fails(doc, "parallel.=3", "empty key in the path (part 2)");
    set_fails(doc, ".tp=3", "empty key in the path (part 1)");
    set_fails(doc, "list.5=x",
              "--set list.5=x: index 5 is beyond the end of list (length 2; index 2 appends)");
    set_fails(doc, "list.x=1", "--set list.x=1: list is a list; expected an index, got \"x\"");
    set_fails(doc, "parallel.0=1", "parallel is a mapping, not a list; it has no index 0");
    set_fails(doc, "platform.0=1", "platform is a single value; it has no item 0");
    set_fails(doc, "new.3.x=1", "index 3 is beyond the end of new (a new list)");
    set_fails(doc, "list.99999999999999999999999=1", "is beyond the end of list");
    set_fails(doc, "parallel.tp=[1,", "--set parallel.tp=[1,: the value is not valid YAML");
    set_fails(doc, "parallel.tp=[1 2", "did not find expected ',' or ']' at character 5");
    set_fails(doc, "parallel.tp=*x", "aliases (*x) are not supported");
    set_fails(doc, "parallel.tp={a: 1, a: 2}", "duplicate key \"a\"");
    /* failed assignments changed nothing */
    ck_assert_str_eq(at(doc, "parallel.tp")->str, "8");
    ck_assert_int_eq(at(doc, "list")->n, 2);
    ck_assert_int_eq(at(doc, "platform")->kind, YN_SCALAR);
    ck_assert_ptr_null(at(doc, "new"));
    yio_free(doc);

    cp_err err = { 0 };
    ydoc *scalar = yio_parse_string("42\n", 3, "s.yaml", &err);
    ck_assert_ptr_nonnull(scalar);
    set_fails(scalar, "a=1", "--set a=1: the document is not a mapping");
    yio_free(scalar);
}
END_TEST

START_TEST(test_yamlio_merge)
{
    ydoc *dst = parse("name: h100\ndevice:\n  hbm_bytes: 80e9\n  sm: 132\nlinks: [a, b]\n");
    cp_err err = { 0 };
    const char *over = "device:\n  hbm_bytes: 40e9\nlinks: [c]\nnodes: 2\n";
    ydoc *src = yio_parse_string(over, strlen(over), "w.yaml", &err);
    ck_assert_ptr_nonnull(src);
    ck_assert_int_eq(yio_merge(dst, yio_root(dst), yio_root(src), &err), 0);
    yio_free(src);
    ck_assert_str_eq(at(dst, "name")->str, "h100");
    ck_assert_str_eq(at(dst, "device.hbm_bytes")->str, "40e9");
    ck_assert_str_eq(at(dst, "device.hbm_bytes")->loc.origin, "w.yaml");
    ck_assert_int_eq(at(dst, "device.hbm_bytes")->loc.line, 2);
    ck_assert_str_eq(at(dst, "device.sm")->str, "132");
    ck_assert_str_eq(at(dst, "device.sm")->loc.origin, "t.yaml");
    ck_assert_int_eq(at(dst, "links")->n, 1);
    ck_assert_str_eq(at(dst, "links.0")->str, "c");
    ck_assert_str_eq(at(dst, "nodes")->str, "2");
    ck_assert_str_eq(yio_root(dst)->key_locs[3].origin, "w.yaml");

    ydoc *other = parse("x: {y: [1, {z: q}]}\n");
    ck_assert_int_eq(yio_merge(dst, yio_root(dst), at(other, "x"), &err), 0);
    cp_err e2 = { 0 };
    ck_assert_int_eq(yio_merge(dst, yio_root(dst), at(other, "x.y"), &e2), -1);
    assert_msg(&e2, "t.yaml:1:8: expected a mapping, got a list");
    yio_free(other);
    ck_assert_str_eq(at(dst, "y.1.z")->str, "q");
    ck_assert_str_eq(at(dst, "y.1.z")->loc.origin, "t.yaml");
    yio_free(dst);
}
END_TEST

/* Frees a detached tree made by yio_clone (nodes are plain heap blocks). */
static void free_tree(ynode *n)
{
    for (size_t i = 0; i < n->n; i++) {
        free_tree(n->kids[i]);
        if (n->keys)
            free(n->keys[i]);
    }
    free(n->str);
    free(n->kids);
    free(n->keys);
    free(n->key_locs);
    free(n->seen);
    free(n);
}

START_TEST(test_yamlio_clone)
{
    ydoc *src = parse("x: {y: [1, {z: \"q\"}], n: ~}\n");
    ydoc *dst = parse("{}");
    ynode *copy = yio_clone(dst, at(src, "x"));
    ck_assert_ptr_ne(copy, at(src, "x"));
    ck_assert(same_tree(copy, at(src, "x")));
    yio_free(src);
    /* locations survive the source document: their origin is dst's copy */
    ck_assert_str_eq(copy->kids[0]->kids[1]->kids[0]->loc.origin, "t.yaml");
    ck_assert_int_eq(copy->kids[0]->kids[1]->kids[0]->loc.col, 16);
    ck_assert_int_eq(copy->kids[0]->kids[1]->kids[0]->quoted, 1);
    free_tree(copy);
    yio_free(dst);
}
END_TEST

START_TEST(test_yamlio_dump)
{
    ydoc *doc = parse("b: 1\na:\n  - x\n  - {k: \"a: b\", q: \"8\", e: [], m: {}}\n"
                      "  - [1, 2]\nn: ~\ns: \"tab\\there\"\nk2: '-'\n\"odd key\": \" pad\"\n");
    char *text = dump(yio_root(doc));
    ck_assert_str_eq(text, "b: 1\n"
                           "a:\n"
                           "  - x\n"
                           "  - k: \"a: b\"\n"
                           "    q: \"8\"\n"
                           "    e: []\n"
                           "    m: {}\n"
                           "  - - 1\n"
                           "    - 2\n"
                           "n: null\n"
                           "s: \"tab\\there\"\n"
                           "k2: \"-\"\n"
                           "odd key: \" pad\"\n");
    ydoc *again = parse(text);
    ck_assert(same_tree(yio_root(doc), yio_root(again)));
    free(text);
    yio_free(again);

    char *scalar = dump(at(doc, "b"));
    ck_assert_str_eq(scalar, "1\n");
    free(scalar);
    yio_free(doc);
}
END_TEST

static Suite *yamlio_suite(void)
{
    Suite *s = suite_create("yamlio");
    TCase *core = tcase_create("Core");
    tcase_add_test(core, test_yamlio_tree_and_locations);
    tcase_add_test(core, test_yamlio_empty_and_file);
    tcase_add_test(core, test_yamlio_dump);
    suite_add_tcase(s, core);
    TCase *acc = tcase_create("Accessors");
    tcase_add_test(acc, test_yamlio_int);
    tcase_add_test(acc, test_yamlio_double);
    tcase_add_test(acc, test_yamlio_bool_str_enum);
    tcase_add_test(acc, test_yamlio_optional_and_unknown);
    suite_add_tcase(s, acc);
    TCase *edit = tcase_create("Edit");
    tcase_add_test(edit, test_yamlio_set);
    tcase_add_test(edit, test_yamlio_set_errors);
    tcase_add_test(edit, test_yamlio_merge);
    tcase_add_test(edit, test_yamlio_clone);
    suite_add_tcase(s, edit);
    TCase *errs = tcase_create("Errors");
    tcase_add_test(errs, test_yamlio_syntax_errors);
    tcase_add_test(errs, test_yamlio_anchors_and_duplicates);
    suite_add_tcase(s, errs);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(yamlio_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
