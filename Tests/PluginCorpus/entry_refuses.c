/* expect: amber_plugin_entry refused to load: this machine has no frobnicator */
#include <amber_plugin.h>
#include <stddef.h>
const amber_plugin_descriptor *amber_plugin_entry(const amber_plugin_host *host) {
    host->report_error(host, "this machine has no frobnicator");
    return NULL;
}
