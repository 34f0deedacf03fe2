/* C API tests: built with -std=c11 -Wall -Wextra -Werror -pedantic against
 * include/amber.h and linked to the shared library, as a C caller would. */
#include <amber.h>

#include "check.h"

static void test_version(void) {
    const char *version = amber_version();
    CHECK(version != NULL);
    if (version == NULL) return;
    int major = -1, minor = -1, patch = -1;
    char extra;
    CHECK(sscanf(version, "%d.%d.%d%c", &major, &minor, &patch, &extra) == 3);
    CHECK(major >= 0 && minor >= 0 && patch >= 0);
    /* The same static string every time: the caller never frees it. */
    CHECK(amber_version() == version);
}

static void test_abi_version(void) {
    CHECK(amber_abi_version() == AMBER_ABI_VERSION);
}

int main(void) {
    test_version();
    test_abi_version();
    return report();
}
