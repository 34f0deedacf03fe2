/* expect: transformer_struct_size is 16, expected 64 (ABI 1.0-1.1) or at least */
#include "common.h"
static const amber_plugin_transformer transformers[] = {TRANSFORMER("Short", "Binary", "Binary")};
static const amber_plugin_descriptor descriptor = {sizeof(amber_plugin_descriptor), AMBER_PLUGIN_ABI_VERSION, "short", "0",
    sizeof(amber_plugin_class), 0, NULL, 16, 1, transformers};
const amber_plugin_descriptor *amber_plugin_entry(const amber_plugin_host *host) { (void)host; return &descriptor; }
