/* expect: transformer "Twice": declared twice by this plugin */
#include "common.h"
static const amber_plugin_transformer transformers[] = {TRANSFORMER("Twice", "Binary", "Binary"),
                                                        TRANSFORMER("Twice", "String", "String")};
DESCRIBE(NULL, 0, transformers, 2)
