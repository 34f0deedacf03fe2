/*
 * amber.h — the C API of Amber, an object store with typed, checked value
 * transformers.
 *
 * This header is the contract for every non-Swift caller (C, C++, and any
 * language with a C FFI). It is hand-written C11; the Swift implementation is
 * checked against it by the compiler (`@c @implementation`).
 *
 * Conventions (they hold for every function declared here):
 *   - Every name starts with `amber_` (functions, types) or `AMBER_` (macros).
 *   - Strings passed in or out are UTF-8.
 *   - Functions that can fail return `amber_status`: 0 on success, a negative
 *     code on failure. Outputs are written through pointers, the out-parameter
 *     first.
 */
#ifndef AMBER_H
#define AMBER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Major version of the C ABI. Raised only when an existing declaration
 *  changes incompatibly; the shared library's SONAME carries the same number
 *  (libamber.so.0). */
#define AMBER_ABI_VERSION 0

/** The library version as a string "MAJOR.MINOR.PATCH".
 *
 *  Returns a pointer to a static, NUL-terminated string owned by the library;
 *  it is valid for the life of the process and must not be freed. Never fails
 *  and never returns NULL. Safe to call from any thread. */
const char *amber_version(void);

/** The C ABI version the loaded library implements; compare it with
 *  AMBER_ABI_VERSION to detect a header/library mismatch. Never fails; safe
 *  to call from any thread. */
int32_t amber_abi_version(void);

#ifdef __cplusplus
}
#endif

#endif /* AMBER_H */
