/* expect: transformer "ColourToData": Colour: no such value class */
#include "common.h"
static const amber_plugin_transformer transformers[] = {TRANSFORMER("ColourToData", "Colour", "Binary")};
DESCRIBE(NULL, 0, transformers, 1)
