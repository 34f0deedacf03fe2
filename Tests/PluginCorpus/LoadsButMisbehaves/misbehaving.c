/* A plugin that loads fine and then misbehaves when called: its lies and
 * failures must be caught at call time, with the plugin's own message. */
#include <amber_plugin.h>

#include <stddef.h>

static const amber_plugin_host *saved_host;
static unsigned char twelve[12];

static int32_t remember_host(void **state, const char *configuration, const amber_plugin_host *host) {
    (void)configuration;
    saved_host = host;
    *state = NULL;
    return AMBER_PLUGIN_OK;
}

/* Declares Binary, returns a string. */
static int32_t wrong_class(void *state, const amber_plugin_value *input, amber_plugin_value *output) {
    (void)state; (void)input;
    output->type = AMBER_PLUGIN_VALUE_STRING;
    output->v.bytes.data = "surprise";
    output->v.bytes.length = 8;
    return AMBER_PLUGIN_OK;
}

/* Reverse declares Color (16 bytes), returns 12. */
static int32_t wrong_size(void *state, const amber_plugin_value *input, amber_plugin_value *output) {
    (void)state; (void)input;
    output->type = AMBER_PLUGIN_VALUE_CUSTOM;
    output->v.bytes.data = twelve;
    output->v.bytes.length = sizeof twelve;
    return AMBER_PLUGIN_OK;
}

static int32_t honest_forward(void *state, const amber_plugin_value *input, amber_plugin_value *output) {
    (void)state;
    output->type = AMBER_PLUGIN_VALUE_BINARY;
    output->v.bytes = input->v.bytes;
    return AMBER_PLUGIN_OK;
}

/* Fails, saying why through the host. */
static int32_t complains(void *state, const amber_plugin_value *input, amber_plugin_value *output) {
    (void)state; (void)input; (void)output;
    saved_host->report_error(saved_host, "the frobnicator is out of ink");
    return -7;
}

/* The byte path: claims 12 bytes for a 16-byte Color. */
static int32_t short_bytes(void *state, const void *input, size_t input_length, void *output, size_t capacity,
                           size_t *written) {
    (void)state; (void)input; (void)input_length; (void)output; (void)capacity;
    *written = 12;
    return AMBER_PLUGIN_OK;
}

/* The byte path: claims more than the buffer holds. */
static int32_t overlong_bytes(void *state, const void *input, size_t input_length, void *output, size_t capacity,
                              size_t *written) {
    (void)state; (void)input; (void)input_length; (void)output;
    *written = capacity + 1;
    return AMBER_PLUGIN_OK;
}

/* The byte path: fails, saying why. */
static int32_t complains_bytes(void *state, const void *input, size_t input_length, void *output, size_t capacity,
                               size_t *written) {
    (void)state; (void)input; (void)input_length; (void)output; (void)capacity; (void)written;
    saved_host->report_error(saved_host, "the byte frobnicator is out of ink");
    return -3;
}

static const amber_plugin_field fields[] = {{"r", AMBER_PLUGIN_FIELD_FLOAT, NULL}, {"g", AMBER_PLUGIN_FIELD_FLOAT, NULL},
                                            {"b", AMBER_PLUGIN_FIELD_FLOAT, NULL}, {"a", AMBER_PLUGIN_FIELD_FLOAT, NULL}};
static const amber_plugin_class classes[] = {{"Color", AMBER_PLUGIN_CLASS_STRUCT, fields, 4, 16}};
static const amber_plugin_transformer transformers[] = {
    {"LiesAboutClass", "Color", "Binary", AMBER_PLUGIN_REVERSIBLE, wrong_class, wrong_size, NULL, NULL, NULL, NULL},
    {"LiesAboutSize", "Color", "Binary", AMBER_PLUGIN_REVERSIBLE, honest_forward, wrong_size, NULL, NULL, overlong_bytes,
     short_bytes},
    {"Complains", "Binary", "Binary", AMBER_PLUGIN_REVERSIBLE, complains, complains, remember_host, NULL, complains_bytes,
     complains_bytes},
};
static const amber_plugin_descriptor descriptor = {sizeof(amber_plugin_descriptor), AMBER_PLUGIN_ABI_VERSION, "misbehaving", "0",
    sizeof(amber_plugin_class), 1, classes, sizeof(amber_plugin_transformer), 3, transformers, AMBER_PLUGIN_ABI_MINOR};
const amber_plugin_descriptor *amber_plugin_entry(const amber_plugin_host *host) { (void)host; return &descriptor; }
