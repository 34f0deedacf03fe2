/* expect: transformer "Locked": create failed with status -1: no key given */
#include "common.h"
static int32_t create(void **state, const char *configuration, const amber_plugin_host *host) {
    (void)state; (void)configuration;
    host->report_error(host, "no key given");
    return AMBER_PLUGIN_ERROR;
}
static const amber_plugin_transformer transformers[] = {{"Locked", "Binary", "Binary", AMBER_PLUGIN_REVERSIBLE, same, same, create, NULL}};
DESCRIBE(NULL, 0, transformers, 1)
