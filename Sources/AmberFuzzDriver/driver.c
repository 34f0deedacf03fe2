/* The fuzzing build's entry point. SwiftPM links an executable with its
 * entry renamed to amber_fuzz_main, which in a fuzzing build (-parse-as-
 * library, no @main) only this file defines: it hands control to libFuzzer's
 * driver with the Swift harness (LLVMFuzzerTestOneInput, in Entry.swift).
 * A plain build compiles nothing here; the Swift @main replays inputs. */
#include "amber_fuzz_driver.h"

#ifdef AMBER_FUZZING
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int amber_fuzz_main(int argc, char **argv) {
    return LLVMFuzzerRunDriver(&argc, &argv, LLVMFuzzerTestOneInput);
}
#endif
