/* fuzz: libFuzzer entry points, one program per input kind (make fuzz).
 *
 * Each target writes the fuzzer's bytes to a file in a private temporary
 * folder (the loaders read paths, and messages name them) and runs the
 * loader of its kind; the loader must return (refusing with a message or
 * accepting), never crash, leak, hang or read out of bounds (ASan and
 * UBSan are on).  fuzz_main.c provides the shared set-up.
 */
#ifndef CP_FUZZ_H
#define CP_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* The bytes as the file `name` of the target's folder; returns its path
 * (static storage, rewritten by every call). */
const char *fuzz_file(const char *name, const uint8_t *data, size_t size);

/* The target's folder (created at start-up, removed at exit). */
const char *fuzz_dir(void);

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
