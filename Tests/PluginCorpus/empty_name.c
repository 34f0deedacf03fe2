/* expect: transformer "": a name must start with a letter */
#include "common.h"
static const amber_plugin_transformer transformers[] = {TRANSFORMER("", "Binary", "Binary")};
DESCRIBE(NULL, 0, transformers, 1)
