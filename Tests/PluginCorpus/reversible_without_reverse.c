/* expect: transformer "Half": flags say reversible, but reverse is NULL */
#include "common.h"
static const amber_plugin_transformer transformers[] = {{"Half", "Binary", "Binary", AMBER_PLUGIN_REVERSIBLE, same, NULL, NULL, NULL}};
DESCRIBE(NULL, 0, transformers, 1)
