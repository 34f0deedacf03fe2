/* The color plugin's two calls, shared by the raw SQLite and raw libpq workloads (not part of the public header). */
#ifndef AMBER_BENCH_PLUGIN_CALLS_H
#define AMBER_BENCH_PLUGIN_CALLS_H

#include <amber_plugin.h>

#include "amber_bench_raw.h"

int32_t bench_plugin_forward(bench_plugin *plugin, const amber_plugin_value *in, amber_plugin_value *out);
int32_t bench_plugin_reverse(bench_plugin *plugin, const amber_plugin_value *in, amber_plugin_value *out);

#endif
