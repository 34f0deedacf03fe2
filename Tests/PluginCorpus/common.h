/* Shared pieces of the bad-plugin corpus: each file breaks one rule. */
#include <amber_plugin.h>

#include <stddef.h>

static int32_t same(void *state, const amber_plugin_value *input, amber_plugin_value *output) {
    (void)state;
    *output = *input;
    output->release = NULL;
    return AMBER_PLUGIN_OK;
}

#define TRANSFORMER(name, in, out) {name, in, out, AMBER_PLUGIN_REVERSIBLE, same, same, NULL, NULL}

#define DESCRIBE(classes, class_count, transformers, transformer_count)                                  \
    static const amber_plugin_descriptor descriptor = {                                                 \
        sizeof(amber_plugin_descriptor), AMBER_PLUGIN_ABI_VERSION, "corpus", "0",                         \
        sizeof(amber_plugin_class), class_count, classes,                                               \
        sizeof(amber_plugin_transformer), transformer_count, transformers};                              \
    const amber_plugin_descriptor *amber_plugin_entry(const amber_plugin_host *host) {                  \
        (void)host;                                                                                     \
        return &descriptor;                                                                             \
    }
