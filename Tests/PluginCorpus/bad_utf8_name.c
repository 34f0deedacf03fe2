/* expect: transformers[0].name is not valid UTF-8 */
#include "common.h"
static const amber_plugin_transformer transformers[] = {TRANSFORMER("Bad\xff", "Binary", "Binary")};
DESCRIBE(NULL, 0, transformers, 1)
