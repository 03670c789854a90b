/* fuzz_where: a `where` condition through the parser and the evaluator,
 * with a table of keys (numbers and strings). */
#include "tests/fuzz/fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "sim/sweep/sweep_expr.h"

static int lookup(void *ctx, const char *key, sweep_val *out, cp_err *err)
{
    (void)ctx;
    (void)err;
    static const char *const keys[][2] = {{"parallel.tp", "4"}, {"parallel.sp", "2"},
                                          {"parallel.exchange", "ring"}, {"model.name", "m"}};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (strcmp(keys[i][0], key) == 0) {
            *out = sweep_expr_value_of(keys[i][1]);
            return 1;
        }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    cp_err err = {0};
    sweep_expr *e = sweep_expr_parse(text, (cp_loc){"where", 1, 1}, 1, &err);
    int holds;
    if (e)
        sweep_expr_eval(e, lookup, NULL, &holds, &err);
    sweep_expr_free(e);
    free(text);
    return 0;
}
