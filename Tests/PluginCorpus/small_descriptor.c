/* expect: descriptor struct_size is 8, expected at least */
#include "common.h"
static const amber_plugin_descriptor descriptor = {8, AMBER_PLUGIN_ABI_VERSION, "small", "0",
    sizeof(amber_plugin_class), 0, NULL, sizeof(amber_plugin_transformer), 0, NULL};
const amber_plugin_descriptor *amber_plugin_entry(const amber_plugin_host *host) { (void)host; return &descriptor; }
