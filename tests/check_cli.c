/* check_cli: the option table (sim/cli/cli.h) against the man page and the
 * generated help, and the one parser on argument lists made here: values
 * that are options, per-command refusals, short forms, SimGrid's options,
 * the positional arguments of every command. */
#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platforms/platform.h"
#include "reports/report.h"
#include "sim/cli/cli.h"

/* ---- helpers ---------------------------------------------------------------------- */

/* The man page as plain text: "\-" is "-", font escapes are gone. */
static char *man_text(void)
{
    const char *path = CP_SRCDIR "/docs/cpsim.1";
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    static char raw[1 << 17], text[1 << 17];
    size_t n = fread(raw, 1, sizeof raw - 1, f);
    fclose(f);
    raw[n] = '\0';
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (raw[i] == '\\' && raw[i + 1] == '-') {
            text[k++] = '-';
            i++;
        } else if (raw[i] == '\\' && raw[i + 1] == 'f' && raw[i + 2]) {
            i += 2;
        } else if (raw[i] == '\\' && raw[i + 1] == '&') {
            i++;
        } else {
            text[k++] = raw[i];
        }
    }
    text[k] = '\0';
    return text;
}

static char *help_text(cli_cmd cmd)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    cli_help(f, cmd);
    fclose(f);
    return buf;
}

static int word_char(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_';
}

/* Whether option `name` ("--out", "-j") occurs in text as a word of its own. */
static int mentions(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strstr(text, name); p; p = strstr(p + 1, name))
        if ((p == text || !word_char(p[-1])) && !word_char(p[n]))
            return 1;
    return 0;
}

/* Every option text mentions ("--word", or " -x" after a blank or bracket)
 * must be a row of the table; with cmd >= 0 also an option of that command.
 * Returns the first offender ("" when none). */
static const char *stray_option(const char *text, int cmd)
{
    static char bad[64];
    for (const char *p = text; *p; p++) {
        if (*p != '-' || (p > text && word_char(p[-1])))
            continue;
        size_t n = 1;
        if (p[1] == '-')
            n = 2;
        if (!isalpha((unsigned char)p[n]))
            continue;
        while (word_char(p[n]))
            n++;
        if (n > 2 && p[1] != '-')   /* -sharded, -x86: not a short option */
            continue;
        snprintf(bad, sizeof bad, "%.*s", (int)n, p);
        const cli_option *r = cli_find_option(bad);
        if (!r || (cmd >= 0 && !(r->cmds & CLI_CMD(cmd))))
            return bad;
        p += n - 1;
    }
    return "";
}

/* Parse a NULL-terminated argument list (the program name first). */
static int parse(cli_opts *o, cp_err *err, const char *const *args)
{
    static char *argv[64];
    int argc = 0;
    while (args[argc]) {
        ck_assert_int_lt(argc, 63);
        argv[argc] = (char *)args[argc];
        argc++;
    }
    argv[argc] = NULL;
    memset(err, 0, sizeof *err);
    return cli_parse(argc, argv, o, err);
}

/* The list must be refused with a message that holds `want`. */
static void refused(const char *want, const char *const *args)
{
    cli_opts o;
    cp_err err;
    int rc = parse(&o, &err, args);
    cli_opts_free(&o);
    ck_assert_msg(rc != 0, "accepted: cpsim %s ... (wanted \"%s\")", args[1], want);
    ck_assert_int_eq(err.code, CP_EXIT_INPUT);
    ck_assert_msg(strstr(err.msg, want), "\"%s\" lacks \"%s\"", err.msg, want);
}

#define ARGS(...) ((const char *const[]){"cpsim", __VA_ARGS__, NULL})

/* ---- the table, the man page and the help ----------------------------------------- */

START_TEST(table_is_well_formed)
{
    for (int i = 0; i < cli_noptions; i++) {
        const cli_option *r = &cli_options[i];
        ck_assert_msg(strncmp(r->name, "--", 2) == 0, "%s: not a long option", r->name);
        ck_assert_msg(r->cmds && !(r->cmds & ~CLI_ALL), "%s: no commands", r->name);
        ck_assert_msg(r->help && *r->help, "%s: no help", r->name);
        ck_assert_msg((r->type == CLI_FLAG) == (r->value == NULL), "%s: value placeholder",
                      r->name);
        ck_assert_msg(r->type != CLI_CALL || r->set, "%s: no setter", r->name);
        ck_assert_msg(r->type != CLI_INT || r->min <= r->max, "%s: bounds", r->name);
        ck_assert_ptr_eq(cli_find_option(r->name), r);
        for (int j = 0; j < i; j++) {
            ck_assert_msg(strcmp(r->name, cli_options[j].name) != 0, "%s twice", r->name);
            ck_assert_msg(!r->short_name || r->short_name != cli_options[j].short_name,
                          "-%c twice", r->short_name);
        }
    }
}
END_TEST

START_TEST(man_page_lists_the_table)
{
    const char *man = man_text();
    for (int i = 0; i < cli_noptions; i++) {
        const cli_option *r = &cli_options[i];
        ck_assert_msg(mentions(man, r->name), "docs/cpsim.1 lacks %s", r->name);
        char s[4] = {'-', r->short_name, 0, 0};
        ck_assert_msg(!r->short_name || mentions(man, s), "docs/cpsim.1 lacks %s", s);
        for (int c = 0; c < CLI_NCMDS; c++)
            ck_assert_msg(strstr(man, cli_commands[c].name), "docs/cpsim.1 lacks %s",
                          cli_commands[c].name);
    }
    const char *stray = stray_option(man, -1);
    ck_assert_msg(!*stray, "docs/cpsim.1 documents %s, which the option table lacks", stray);
}
END_TEST

START_TEST(help_lists_the_table)
{
    char *all = help_text(CMD_NONE);
    for (int i = 0; i < cli_noptions; i++)
        ck_assert_msg(mentions(all, cli_options[i].name), "cpsim --help lacks %s",
                      cli_options[i].name);
    for (int c = 0; c < CLI_NCMDS; c++)
        ck_assert_msg(strstr(all, cli_commands[c].name), "cpsim --help lacks %s",
                      cli_commands[c].name);
    const char *stray = stray_option(all, -1);
    ck_assert_msg(!*stray, "cpsim --help mentions %s, which the option table lacks", stray);
    free(all);
    for (int c = 0; c < CLI_NCMDS; c++) {
        char *h = help_text((cli_cmd)c);
        for (int i = 0; i < cli_noptions; i++) {
            const cli_option *r = &cli_options[i];
            int takes = (r->cmds & CLI_CMD(c)) != 0;
            ck_assert_msg(!takes || mentions(h, r->name), "cpsim %s --help lacks %s",
                          cli_commands[c].name, r->name);
        }
        stray = stray_option(h, c);
        ck_assert_msg(!*stray, "cpsim %s --help mentions %s, not an option of %s",
                      cli_commands[c].name, stray, cli_commands[c].name);
        ck_assert_msg(strstr(h, "Usage: cpsim ") && strstr(h, cli_commands[c].name),
                      "cpsim %s --help: no usage line", cli_commands[c].name);
        /* no line beyond 79 columns */
        for (char *line = h, *nl; *line; line = nl + 1) {
            nl = strchr(line, '\n');
            ck_assert_ptr_nonnull(nl);
            ck_assert_msg(nl - line <= 79, "cpsim %s --help: long line %.40s",
                          cli_commands[c].name, line);
        }
        free(h);
    }
}
END_TEST

/* ---- the parser --------------------------------------------------------------------- */

/* The bundled presets named by --help and the man page are the table's
 * (platforms/platform.c plat_bundled), every one of them. */
START_TEST(presets_listed_from_the_table)
{
    const char *man = man_text();
    char *help = help_text(CMD_RUN);
    for (int i = 0; plat_bundled[i]; i++) {
        ck_assert_msg(strstr(help, plat_bundled[i]), "cpsim run --help lacks preset %s",
                      plat_bundled[i]);
        ck_assert_msg(strstr(man, plat_bundled[i]), "docs/cpsim.1 lacks preset %s",
                      plat_bundled[i]);
    }
    free(help);
}
END_TEST

START_TEST(values_are_never_options)
{
    refused("option --out needs a value, got the option --quiet",
            ARGS("run", "--out", "--quiet"));
    refused("option --set needs a value, got the option -q", ARGS("run", "--set", "-q"));
    refused("option -j needs a value, got the option --list", ARGS("sweep", "s.yaml", "-j",
                                                                   "--list"));
    refused("option --platform needs a value", ARGS("run", "--platform"));
    refused("option --out needs a value (DIR), got an empty one", ARGS("run", "--out="));
    /* joined with '=', a value is taken as written */
    cli_opts o;
    cp_err err;
    ck_assert_int_eq(parse(&o, &err, ARGS("run", "--out=--x", "--platform", "-")), 0);
    ck_assert_str_eq(o.out_dir, "--x");
    ck_assert_str_eq(o.platform, "-");
    cli_opts_free(&o);
}
END_TEST

START_TEST(commands_refuse_other_commands_options)
{
    refused("run does not take --quant; it is an option of memory",
            ARGS("run", "--quant", "q.json"));
    refused("plan does not take --out; it is an option of run, sweep and compare",
            ARGS("plan", "w.yaml", "--out", "d"));
    refused("sweep does not take --set; it is an option of run, validate, plan and memory",
            ARGS("sweep", "s.yaml", "--set", "a=1"));
    refused("plot does not take -j; it is an option of sweep", ARGS("plot", "d", "-j", "2"));
    refused("sweep does not take --cfg; it is an option of run: SimGrid options",
            ARGS("sweep", "s.yaml", "--cfg=network/model:CM02"));
    refused("unknown option --jsno (did you mean \"--json\"?)", ARGS("plan", "w", "--jsno"));
    refused("unknown option --qaunt (did you mean \"--quant\", an option of memory?)",
            ARGS("run", "--qaunt", "x"));
    refused("unknown option -x", ARGS("run", "-x"));
    refused("unknown option -qx", ARGS("run", "-qx"));
    refused("option --quiet takes no value", ARGS("run", "--quiet=1"));
    refused("option --cfg takes its value as --cfg=KEY:VALUE", ARGS("run", "--cfg", "a:b"));
    refused("missing command", ARGS("--quiet"));
    refused("unknown command \"rnu\" (did you mean \"run\"?)", ARGS("rnu"));
}
END_TEST

START_TEST(every_command_parses)
{
    cli_opts o;
    cp_err err;
    /* the command after options, which may take the next argument */
    ck_assert_int_eq(parse(&o, &err, ARGS("--platform", "h200-sxm-8", "run", "-q",
                                          "--set=parallel.tp=4", "--set", "platform.nodes=2",
                                          "--cfg=maxmin/precision:1e-9",
                                          "--log=root.thres:critical",
                                          "w.yaml")), 0);
    ck_assert_int_eq(o.cmd, CMD_RUN);
    ck_assert_str_eq(o.platform, "h200-sxm-8");
    ck_assert_str_eq(o.workload, "w.yaml");
    ck_assert_str_eq(o.out_dir, "out");
    ck_assert_int_eq(o.nsets, 2);
    ck_assert_str_eq(o.sets[1], "platform.nodes=2");
    ck_assert_int_eq(o.quiet, 1);
    cli_opts_free(&o);

    ck_assert_int_eq(parse(&o, &err, ARGS("sweep", "s.yaml", "-j3", "--shard", "1/4",
                                          "--resume", "--no-share", "--list", "--plots")), 0);
    ck_assert_int_eq(o.cmd, CMD_SWEEP);
    ck_assert_int_eq(o.jobs, 3);
    ck_assert_int_eq(o.shard_i, 1);
    ck_assert_int_eq(o.shard_n, 4);
    ck_assert(o.resume && o.no_share && o.list && o.plots && !o.merge);
    ck_assert_ptr_null(o.out_dir);
    cli_opts_free(&o);
    ck_assert_int_eq(parse(&o, &err, ARGS("sweep", "--jobs=7", "s.yaml")), 0);
    ck_assert_int_eq(o.jobs, 7);
    cli_opts_free(&o);
    refused("-j 0: expected a whole number in [1, 4096]", ARGS("sweep", "s.yaml", "-j", "0"));
    refused("--shard 3/3: I must be in [0, 2]", ARGS("sweep", "s.yaml", "--shard", "3/3"));

    ck_assert_int_eq(parse(&o, &err, ARGS("sweep", "a", "--merge", "b", "--out", "all")), 0);
    ck_assert(o.merge);
    ck_assert_int_eq(o.nargs, 2);
    ck_assert_str_eq(o.args[1], "b");
    cli_opts_free(&o);
    refused("sweep --merge needs the shard folders and --out DIR", ARGS("sweep", "--merge",
                                                                        "a"));
    refused("--resume does not apply", ARGS("sweep", "--merge", "a", "--out", "b", "--resume"));
    refused("sweep needs a SWEEP.yaml", ARGS("sweep", "--quiet"));
    refused("unexpected argument \"b.yaml\"", ARGS("sweep", "a.yaml", "b.yaml"));

    ck_assert_int_eq(parse(&o, &err, ARGS("plot", "d", "--layers=2-3")), 0);
    ck_assert_int_eq(o.layer_lo, 2);
    ck_assert_int_eq(o.layer_hi, 3);
    cli_opts_free(&o);
    refused("--layers 3-2: expected A-B", ARGS("plot", "d", "--layers", "3-2"));
    refused("plot needs a run or sweep folder", ARGS("plot"));

    ck_assert_int_eq(parse(&o, &err, ARGS("validate", "--accuracy", "--json")), 0);
    ck_assert_ptr_null(o.workload);
    cli_opts_free(&o);
    refused("validate needs a WORKLOAD.yaml", ARGS("validate", "--set", "a=1"));
    refused("validate --json goes with --accuracy", ARGS("validate", "w.yaml", "--json"));
    refused("plan needs a WORKLOAD.yaml", ARGS("plan", "--json"));
    refused("memory needs a WORKLOAD.yaml", ARGS("memory", "--quant", "q.json"));
    refused("unexpected argument \"x.yaml\" (one workload only)", ARGS("memory", "w", "x.yaml"));
    refused("--set parallel.tp: expected KEY=VALUE", ARGS("memory", "w", "--set",
                                                           "parallel.tp"));

    ck_assert_int_eq(parse(&o, &err, ARGS("memory", "w.yaml", "--quant=q.json", "--json",
                                          "--platform=b200-8")), 0);
    ck_assert_str_eq(o.quant, "q.json");
    ck_assert(o.json);
    cli_opts_free(&o);
}
END_TEST

START_TEST(help_and_version_win)
{
    cli_opts o;
    cp_err err;
    ck_assert_int_eq(parse(&o, &err, ARGS("sweep", "--bogus", "--help")), 0);
    ck_assert(o.help);
    ck_assert_int_eq(o.cmd, CMD_SWEEP);
    cli_opts_free(&o);
    ck_assert_int_eq(parse(&o, &err, ARGS("-h")), 0);
    ck_assert(o.help);
    ck_assert_int_eq(o.cmd, CMD_NONE);
    cli_opts_free(&o);
    ck_assert_int_eq(parse(&o, &err, ARGS("plan", "--version")), 0);
    ck_assert(o.version);
    cli_opts_free(&o);
    ck_assert_int_eq(parse(&o, &err, ARGS("--version")), 0);
    ck_assert(o.version);
    cli_opts_free(&o);
}
END_TEST

/* `cpsim help [COMMAND]` is [COMMAND] --help; "--" ends the options; -o is
 * --out; "-" is a workload (standard input), not an option. */
START_TEST(help_command_dashes_and_stdin)
{
    cli_opts o;
    cp_err err;
    ck_assert_int_eq(parse(&o, &err, ARGS("help")), 0);
    ck_assert(o.help);
    ck_assert_int_eq(o.cmd, CMD_NONE);
    cli_opts_free(&o);
    ck_assert_int_eq(parse(&o, &err, ARGS("help", "sweep", "--bogus")), 0);
    ck_assert(o.help);
    ck_assert_int_eq(o.cmd, CMD_SWEEP);
    cli_opts_free(&o);
    refused("unknown command \"plto\" (did you mean \"plot\"?)", ARGS("help", "plto"));
    refused("did you mean \"help\"?", ARGS("hlep"));
    ck_assert_int_eq(parse(&o, &err, ARGS("run", "-o", "d", "-q", "--", "-w.yaml")), 0);
    ck_assert_str_eq(o.out_dir, "d");
    ck_assert_str_eq(o.workload, "-w.yaml");
    cli_opts_free(&o);
    /* after "--" an option is an argument, --help too */
    refused("unexpected argument \"--quiet\"", ARGS("run", "--", "w.yaml", "--quiet"));
    ck_assert_int_eq(parse(&o, &err, ARGS("plan", "--", "--help")), 0);
    ck_assert(!o.help);
    ck_assert_str_eq(o.workload, "--help");
    cli_opts_free(&o);
    ck_assert_int_eq(parse(&o, &err, ARGS("-q", "--", "run", "w.yaml")), 0);
    ck_assert_int_eq(o.cmd, CMD_RUN);
    ck_assert_str_eq(o.workload, "w.yaml");
    cli_opts_free(&o);
    ck_assert_int_eq(parse(&o, &err, ARGS("sweep", "s.yaml", "-oall")), 0);
    ck_assert_str_eq(o.out_dir, "all");
    cli_opts_free(&o);
    ck_assert_int_eq(parse(&o, &err, ARGS("validate", "-")), 0);
    ck_assert_str_eq(o.workload, "-");
    cli_opts_free(&o);
    refused("plan does not take -o", ARGS("plan", "w.yaml", "-o", "d"));
    /* without --trace the level is chosen by size; --trace keeps its meaning */
    ck_assert_int_eq(parse(&o, &err, ARGS("run", "--all-ranks")), 0);
    ck_assert_int_eq(o.trace_level, REP_TRACE_AUTO);
    ck_assert(o.all_ranks);
    cli_opts_free(&o);
    ck_assert_int_eq(parse(&o, &err, ARGS("run", "--trace", "full")), 0);
    ck_assert_int_eq(o.trace_level, REP_TRACE_FULL);
    cli_opts_free(&o);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("Core");
    tcase_add_test(tc, table_is_well_formed);
    tcase_add_test(tc, man_page_lists_the_table);
    tcase_add_test(tc, help_lists_the_table);
    tcase_add_test(tc, presets_listed_from_the_table);
    tcase_add_test(tc, values_are_never_options);
    tcase_add_test(tc, commands_refuse_other_commands_options);
    tcase_add_test(tc, every_command_parses);
    tcase_add_test(tc, help_and_version_win);
    tcase_add_test(tc, help_command_dashes_and_stdin);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
