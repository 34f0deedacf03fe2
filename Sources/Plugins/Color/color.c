/* The "color" sample plugin: struct Color { float r, g, b, a; } <-> 16 bytes.
 *
 * The stored form is the four floats as little-endian IEEE 754, so a store
 * written on one machine reads back on any other. */
#include <amber_plugin.h>

#include <stdint.h>
#include <string.h>

typedef struct Color {
    float r, g, b, a;
} Color;

enum { STORED_SIZE = 16 };

/* Results point into this per-thread buffer: the host copies a result before
 * the next call on the same thread, so no allocation and no release. */
static _Thread_local unsigned char result[STORED_SIZE];

static void put_le32(unsigned char *out, float value) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    for (int i = 0; i < 4; i++) out[i] = (unsigned char)(bits >> (8 * i));
}

static float get_le32(const unsigned char *in) {
    uint32_t bits = 0;
    for (int i = 0; i < 4; i++) bits |= (uint32_t)in[i] << (8 * i);
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

static int32_t color_to_data(void *state, const amber_plugin_value *input, amber_plugin_value *output) {
    (void)state;
    if (input->type != AMBER_PLUGIN_VALUE_CUSTOM || input->v.bytes.length != sizeof(Color)) return AMBER_PLUGIN_ERROR;
    Color color;
    memcpy(&color, input->v.bytes.data, sizeof color);
    put_le32(result, color.r);
    put_le32(result + 4, color.g);
    put_le32(result + 8, color.b);
    put_le32(result + 12, color.a);
    output->type = AMBER_PLUGIN_VALUE_BINARY;
    output->v.bytes.data = result;
    output->v.bytes.length = STORED_SIZE;
    return AMBER_PLUGIN_OK;
}

static int32_t data_to_color(void *state, const amber_plugin_value *input, amber_plugin_value *output) {
    (void)state;
    if (input->type != AMBER_PLUGIN_VALUE_BINARY || input->v.bytes.length != STORED_SIZE) return AMBER_PLUGIN_ERROR;
    const unsigned char *in = input->v.bytes.data;
    Color color = {get_le32(in), get_le32(in + 4), get_le32(in + 8), get_le32(in + 12)};
    memcpy(result, &color, sizeof color);
    output->type = AMBER_PLUGIN_VALUE_CUSTOM;
    output->v.bytes.data = result;
    output->v.bytes.length = sizeof color;
    return AMBER_PLUGIN_OK;
}

/* The fast path (plugin ABI minor 2): the same conversions between buffers
 * the host provides; the host has checked the input's size. */
static int32_t color_to_bytes(void *state, const void *input, size_t input_length, void *output, size_t output_capacity,
                              size_t *output_length) {
    (void)state;
    if (input_length != sizeof(Color) || output_capacity < STORED_SIZE) return AMBER_PLUGIN_ERROR;
    Color color;
    memcpy(&color, input, sizeof color);
    unsigned char *out = output;
    put_le32(out, color.r);
    put_le32(out + 4, color.g);
    put_le32(out + 8, color.b);
    put_le32(out + 12, color.a);
    *output_length = STORED_SIZE;
    return AMBER_PLUGIN_OK;
}

static int32_t bytes_to_color(void *state, const void *input, size_t input_length, void *output, size_t output_capacity,
                              size_t *output_length) {
    (void)state;
    if (input_length != STORED_SIZE || output_capacity < sizeof(Color)) return AMBER_PLUGIN_ERROR;
    const unsigned char *in = input;
    Color color = {get_le32(in), get_le32(in + 4), get_le32(in + 8), get_le32(in + 12)};
    memcpy(output, &color, sizeof color);
    *output_length = sizeof color;
    return AMBER_PLUGIN_OK;
}

static const amber_plugin_field color_fields[] = {
    {"r", AMBER_PLUGIN_FIELD_FLOAT, NULL},
    {"g", AMBER_PLUGIN_FIELD_FLOAT, NULL},
    {"b", AMBER_PLUGIN_FIELD_FLOAT, NULL},
    {"a", AMBER_PLUGIN_FIELD_FLOAT, NULL},
};

static const amber_plugin_class classes[] = {
    {"Color", AMBER_PLUGIN_CLASS_STRUCT, color_fields, 4, sizeof(Color)},
};

static const amber_plugin_transformer transformers[] = {
    {"ColorToData", "Color", "Binary", AMBER_PLUGIN_REVERSIBLE | AMBER_PLUGIN_THREAD_SAFE, color_to_data, data_to_color,
     NULL, NULL, color_to_bytes, bytes_to_color},
};

static const amber_plugin_descriptor descriptor = {
    sizeof(amber_plugin_descriptor), AMBER_PLUGIN_ABI_VERSION, "color", "1.0.0",
    sizeof(amber_plugin_class), 1, classes,
    sizeof(amber_plugin_transformer), 1, transformers,
    AMBER_PLUGIN_ABI_MINOR,
};

const amber_plugin_descriptor *amber_plugin_entry(const amber_plugin_host *host) {
    (void)host;
    return &descriptor;
}
