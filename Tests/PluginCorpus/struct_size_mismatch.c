/* expect: struct Color: the plugin's sizeof is 12 bytes, the host's layout is 16 */
#include "common.h"
static const amber_plugin_field fields[] = {{"r", AMBER_PLUGIN_FIELD_FLOAT, NULL}, {"g", AMBER_PLUGIN_FIELD_FLOAT, NULL},
                                            {"b", AMBER_PLUGIN_FIELD_FLOAT, NULL}, {"a", AMBER_PLUGIN_FIELD_FLOAT, NULL}};
static const amber_plugin_class classes[] = {{"Color", AMBER_PLUGIN_CLASS_STRUCT, fields, 4, 12}};
static const amber_plugin_transformer transformers[] = {TRANSFORMER("ColorToData", "Color", "Binary")};
DESCRIBE(classes, 1, transformers, 1)
