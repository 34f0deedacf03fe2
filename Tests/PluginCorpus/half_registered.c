/* expect: transformer "Broken": Nowhere: no such value class */
/* The class is fine and comes first; the transformer is not: neither may stay registered. */
#include "common.h"
static const amber_plugin_class classes[] = {{"Partial", AMBER_PLUGIN_CLASS_OPAQUE, NULL, 0, 8}};
static const amber_plugin_transformer transformers[] = {TRANSFORMER("Fine", "Partial", "Binary"),
                                                        TRANSFORMER("Broken", "Partial", "Nowhere")};
DESCRIBE(classes, 1, transformers, 2)
