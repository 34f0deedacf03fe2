/* expect: the plugin name is empty */
#include "common.h"
static const amber_plugin_descriptor descriptor = {sizeof(amber_plugin_descriptor), AMBER_PLUGIN_ABI_VERSION, "", "0",
    sizeof(amber_plugin_class), 0, NULL, sizeof(amber_plugin_transformer), 0, NULL};
const amber_plugin_descriptor *amber_plugin_entry(const amber_plugin_host *host) { (void)host; return &descriptor; }
