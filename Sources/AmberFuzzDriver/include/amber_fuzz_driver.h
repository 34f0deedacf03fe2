/* Nothing for Swift to call: this target only supplies amber-fuzz's entry
 * point in fuzzing builds (see driver.c). */
#ifndef AMBER_FUZZ_DRIVER_H
#define AMBER_FUZZ_DRIVER_H
#endif
