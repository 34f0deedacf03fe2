/* expect: transformer "Nothing": forward is NULL */
#include "common.h"
static const amber_plugin_transformer transformers[] = {{"Nothing", "Binary", "Binary", 0, NULL, NULL, NULL, NULL}};
DESCRIBE(NULL, 0, transformers, 1)
