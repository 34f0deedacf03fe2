/* expect: transformers[0].name is NULL */
#include "common.h"
static const amber_plugin_transformer transformers[] = {TRANSFORMER(NULL, "Binary", "Binary")};
DESCRIBE(NULL, 0, transformers, 1)
