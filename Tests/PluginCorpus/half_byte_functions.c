/* expect: transformer_struct_size is 68, expected 64 (ABI 1.0-1.1) or at least */
#include "common.h"
/* A stride that ends inside forward_bytes: reading it would make half a function pointer. */
static const amber_plugin_transformer transformers[] = {TRANSFORMER("Half", "Binary", "Binary")};
static const amber_plugin_descriptor descriptor = {sizeof(amber_plugin_descriptor), AMBER_PLUGIN_ABI_VERSION, "half", "0",
    sizeof(amber_plugin_class), 0, NULL, offsetof(amber_plugin_transformer, forward_bytes) + 4, 1, transformers,
    AMBER_PLUGIN_ABI_MINOR};
const amber_plugin_descriptor *amber_plugin_entry(const amber_plugin_host *host) { (void)host; return &descriptor; }
