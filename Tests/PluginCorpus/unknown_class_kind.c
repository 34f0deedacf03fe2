/* expect: class Weird: unknown kind 7 */
#include "common.h"
static const amber_plugin_class classes[] = {{"Weird", 7, NULL, 0, 0}};
DESCRIBE(classes, 1, NULL, 0)
