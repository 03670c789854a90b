/* cli_help: `cpsim --help` and `cpsim COMMAND --help`, written from the
 * option and command tables (cli_options.c). */
#include <string.h>

#include "sim/cli/cli.h"

enum { WIDTH = 79, COL = 28 };

/* Text from column `col` (the cursor is at column `at`), wrapped at WIDTH
 * with continuation lines indented to col; ends the line. */
static void wrap(FILE *out, int at, int col, const char *text)
{
    if (at > 0 && at > col - 2) {
        fputc('\n', out);
        at = 0;
    }
    fprintf(out, "%*s", col - at, "");
    int x = col;
    for (const char *p = text; *p;) {
        if (*p == ' ') {
            p++;
            continue;
        }
        int n = (int)strcspn(p, " ");
        if (x > col && x + 1 + n > WIDTH) {
            fprintf(out, "\n%*s", col, "");
            x = col;
        } else if (x > col) {
            fputc(' ', out);
            x++;
        }
        fprintf(out, "%.*s", n, p);
        x += n;
        p += n;
    }
    fputc('\n', out);
}

/* "  -j, --jobs N", "      --out DIR", "      --cfg=KEY:VALUE"; returns its width. */
static int label(FILE *out, const cli_option *r)
{
    int n = r->short_name ? fprintf(out, "  -%c, %s", r->short_name, r->name)
                          : fprintf(out, "      %s", r->name);
    if (r->value)
        n += fprintf(out, "%s%s", r->type == CLI_SIMGRID ? "=" : " ", r->value);
    return n;
}

void cli_list_commands(FILE *out)
{
    fputs("Commands:\n", out);
    for (int c = 0; c < CLI_NCMDS; c++) {
        int n = fprintf(out, "  %s %s", cli_commands[c].name, cli_commands[c].args);
        wrap(out, n, COL, cli_commands[c].summary);
    }
    wrap(out, fprintf(out, "  help [COMMAND]"), COL, "this help, or one command's (as cpsim "
         "COMMAND --help)");
}

static void tail(FILE *out)
{
    fputs("\n", out);
    wrap(out, 0, 0, "A value follows its option as the next argument, or joined to it after "
         "'='.  The next argument is never taken as a value when it is an option: a value "
         "that begins with '-' is written joined.  '--' ends the options: every argument "
         "after it is an argument of the command, even one that begins with '-'.  A "
         "workload given as '-' is read from standard input.");
    fputs("\n", out);
    wrap(out, 0, 0, "Exit status: 0 the simulation ran (an out-of-memory verdict is a result, "
         "not an error), 1 internal failure, 2 bad input or usage.");
}

static void global_help(FILE *out)
{
    fputs("Usage: cpsim COMMAND [ARGUMENTS] [OPTIONS]\n\n", out);
    wrap(out, 0, 0, "Simulates LLM prefill (and decode) steps on a cluster of accelerators: "
         "per-rank compute and communication streams on SimGrid, with TTFT, overlap and "
         "per-rank memory timelines.");
    fputs("\n", out);
    cli_list_commands(out);
    fputs("'cpsim help COMMAND' shows the options of one command.\n\n"
          "Options (in brackets: the commands that take them):\n", out);
    for (int i = 0; i < cli_noptions; i++) {
        const cli_option *r = &cli_options[i];
        char text[1024];
        size_t used = (size_t)snprintf(text, sizeof text, "%s [", r->help);
        if (r->cmds == CLI_ALL)
            used += (size_t)snprintf(text + used, sizeof text - used, "every command");
        for (int c = 0, k = 0; c < CLI_NCMDS && r->cmds != CLI_ALL; c++)
            if (r->cmds & CLI_CMD(c) && used < sizeof text)
                used += (size_t)snprintf(text + used, sizeof text - used, "%s%s",
                                         k++ ? ", " : "", cli_commands[c].name);
        if (used < sizeof text)
            snprintf(text + used, sizeof text - used, "]");
        wrap(out, label(out, r), COL, text);
    }
    tail(out);
}

void cli_help(FILE *out, cli_cmd cmd)
{
    if (cmd < 0 || cmd >= CLI_NCMDS) {
        global_help(out);
        return;
    }
    const cli_command *c = &cli_commands[cmd];
    fprintf(out, "Usage: cpsim %s %s [OPTIONS]\n", c->name, c->args);
    if (c->usage2)
        fprintf(out, "       cpsim %s\n", c->usage2);
    fputs("\n", out);
    wrap(out, 0, 0, c->about);
    fputs("\nOptions:\n", out);
    for (int i = 0; i < cli_noptions; i++)
        if (cli_options[i].cmds & CLI_CMD(cmd))
            wrap(out, label(out, &cli_options[i]), COL, cli_options[i].help);
    tail(out);
}
