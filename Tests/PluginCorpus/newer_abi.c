/* expect: ABI 2 is newer than this host's 1 */
#include "common.h"
static const amber_plugin_transformer transformers[] = {TRANSFORMER("Future", "Binary", "Binary")};
static const amber_plugin_descriptor descriptor = {sizeof(amber_plugin_descriptor), 2, "future", "2.0",
    sizeof(amber_plugin_class), 0, NULL, sizeof(amber_plugin_transformer), 1, transformers};
const amber_plugin_descriptor *amber_plugin_entry(const amber_plugin_host *host) { (void)host; return &descriptor; }
