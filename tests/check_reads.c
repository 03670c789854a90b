/* check_reads: every field of every bundled model config (models/configs/,
 * tests/configs/ without the bad-* fixtures) is read, warned, or known not
 * to change the work (models/arch.c not_work, with a reason); the test fails
 * on any other field.  It prints the table (config, fields read, warned,
 * ignored) on stdout, and checks the runtime side: a warned field is named
 * in a warning line, an unknown field is warned as not read. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/arch.h"

#ifndef CP_SRCDIR
#define CP_SRCDIR "."
#endif

enum { MAX_CONFIGS = 64 };
static char configs[MAX_CONFIGS][1300]; /* dir/name, in scan order */
static int nconfigs;

static int is_config(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return n > 5 && !strcmp(d->d_name + n - 5, ".json") && strncmp(d->d_name, "bad-", 4) != 0;
}

static void scan(const char *dir)
{
    if (strlen(dir) > 1000)
        exit(EXIT_FAILURE); /* a source tree deeper than configs[] holds */
    struct dirent **list;
    int n = scandir(dir, &list, is_config, alphasort);
    if (n < 0) {
        fprintf(stderr, "check_reads: cannot read %s\n", dir);
        exit(EXIT_FAILURE);
    }
    for (int i = 0; i < n; i++) {
        if (nconfigs < MAX_CONFIGS)
            snprintf(configs[nconfigs++], sizeof configs[0], "%s/%s", dir, list[i]->d_name);
        free(list[i]);
    }
    free(list);
}

static int warned_in(const arch *a, const char *name)
{
    char whole[ARCH_FIELD_LEN + 2], part[ARCH_FIELD_LEN + 2];
    snprintf(whole, sizeof whole, "\"%s\"", name);
    snprintf(part, sizeof part, "\"%s.", name); /* warned by a member's line */
    for (int i = 0; i < a->nwarn; i++)
        if (strstr(a->warn[i], whole) || strstr(a->warn[i], part))
            return 1;
    return 0;
}

/* One line per use: "  read (n): a, b, ..." */
static void print_use(const arch_fields *f, arch_use u)
{
    int n = 0;
    for (int i = 0; i < f->n; i++)
        n += f->f[i].use == u;
    if (n == 0)
        return;
    printf("  %s (%d):", arch_use_name(u), n);
    for (int i = 0, k = 0; i < f->n; i++)
        if (f->f[i].use == u)
            printf("%s %s", k++ ? "," : "", f->f[i].name);
    printf("\n");
}

START_TEST(test_every_field)
{
    arch_fields *f = malloc(sizeof *f);
    arch *a = malloc(sizeof *a);
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(a);
    const char *path = configs[_i];
    const char *shown = path + strlen(CP_SRCDIR "/"); /* relative to the source tree */
    cp_err e = {0};
    ck_assert_msg(arch_load_fields(path, NULL, a, f, &e) == 0, "%s: %s", path, e.msg);
    ck_assert_int_gt(f->n, 0);
    int counts[AF_UNKNOWN + 1] = {0};
    for (int i = 0; i < f->n; i++) {
        counts[f->f[i].use]++;
        ck_assert_msg(f->f[i].use != AF_UNKNOWN,
                      "%s: field \"%s\" is neither read, warned, nor listed as not changing "
                      "the work (models/arch.c not_work)", path, f->f[i].name);
        if (f->f[i].use == AF_WARNED)
            ck_assert_msg(warned_in(a, f->f[i].name), "%s: \"%s\" warned but no line names it",
                          path, f->f[i].name);
        if (f->f[i].use == AF_IGNORED)
            ck_assert_msg(f->f[i].why && f->f[i].why[0], "%s: \"%s\" ignored without a reason",
                          path, f->f[i].name);
    }
    printf("%s: %d read, %d warned, %d ignored\n", shown, counts[AF_READ], counts[AF_WARNED],
           counts[AF_IGNORED]);
    print_use(f, AF_READ);
    print_use(f, AF_WARNED);
    for (int i = 0; i < f->n; i++)
        if (f->f[i].use == AF_IGNORED)
            printf("  ignored: %s (%s)\n", f->f[i].name, f->f[i].why);
    fflush(stdout);
    free(f);
    free(a);
}
END_TEST

/* A field nobody knows is listed unknown and warned as not read; one the
 * table knows is ignored with its reason, and one shadowed by the text
 * config's field of the same name too (tests/configs/unread/: not a
 * bundled config, so test_every_field does not see it). */
START_TEST(test_unknown_field)
{
    arch_fields *f = malloc(sizeof *f);
    arch a;
    cp_err e = {0};
    ck_assert_ptr_nonnull(f);
    ck_assert_msg(arch_load_fields(CP_SRCDIR "/tests/configs/unread/tiny-unknown.json", NULL, &a,
                                   f, &e) == 0, "%s", e.msg);
    const char *want[][2] = {{"frobnicate_layers", "unknown"}, {"rope_theta", "ignored"},
                             {"hidden_size", "ignored"}, {"text_config.zap", "unknown"},
                             {"text_config.hidden_size", "read"}, {"vocab_size", "read"}};
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
        int found = 0;
        for (int i = 0; i < f->n; i++)
            if (!strcmp(f->f[i].name, want[w][0])) {
                found = 1;
                ck_assert_msg(!strcmp(arch_use_name(f->f[i].use), want[w][1]), "%s: %s, want %s",
                              want[w][0], arch_use_name(f->f[i].use), want[w][1]);
            }
        ck_assert_msg(found, "%s not listed", want[w][0]);
    }
    ck_assert_int_eq(a.nwarn, 1);
    ck_assert_msg(strstr(a.warn[0], "tiny-unknown.json: 2 fields cpsim does not read (the work "
                                    "they may change is not modelled): frobnicate_layers, "
                                    "text_config.zap"),
                  "%s", a.warn[0]);
    free(f);
}
END_TEST

int main(void)
{
    setenv("CPSIM_DATADIR", CP_SRCDIR, 1);
    scan(CP_SRCDIR "/models/configs");
    scan(CP_SRCDIR "/tests/configs");
    Suite *s = suite_create("reads");
    TCase *tc = tcase_create("fields");
    tcase_add_loop_test(tc, test_every_field, 0, nconfigs);
    tcase_add_test(tc, test_unknown_field);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed || nconfigs < 20 ? EXIT_FAILURE : EXIT_SUCCESS;
}
