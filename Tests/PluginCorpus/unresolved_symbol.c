/* expect: cannot be loaded: */
#include "common.h"
extern int amber_corpus_function_nobody_defines(void);
static int32_t calls_missing(void *state, const amber_plugin_value *input, amber_plugin_value *output) {
    (void)state; (void)input; (void)output;
    return amber_corpus_function_nobody_defines();
}
static const amber_plugin_transformer transformers[] = {{"Missing", "Binary", "Binary", 0, calls_missing, NULL, NULL, NULL}};
DESCRIBE(NULL, 0, transformers, 1)
