/* amber_transformer_forward_bytes_array / _reverse_bytes_array: many values
 * per call through the color plugin (AMBER_PLUGIN_DIR) and through a C
 * transformer registered by the host, compared with one call per value on
 * random colours; errors name the element; misuse is refused. */
#include <amber.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

struct Color {
    float r, g, b, a;
};

enum { COUNT = 1000 };

/* Color -> Binary with value functions only (the host's byte path goes through values). Results
 * live in a static buffer (no release function), which the host copies before the next call. */
static unsigned char result[64];

static int32_t to_bytes(amber_value *out, const amber_value *in, void *userdata) {
    (void)userdata;
    if (in->v.custom.length > sizeof result) return -1;
    memcpy(result, in->v.custom.data, in->v.custom.length);
    out->type = AMBER_VALUE_BINARY;
    out->v.bytes.data = result;
    out->v.bytes.length = in->v.custom.length;
    return AMBER_OK;
}

static int32_t from_bytes(amber_value *out, const amber_value *in, void *userdata) {
    (void)userdata;
    if (in->v.bytes.length == 4 || in->v.bytes.length > sizeof result) {
        amber_transformer_error("four bytes are not a colour");
        return -1;
    }
    memcpy(result, in->v.bytes.data, in->v.bytes.length);
    out->type = AMBER_VALUE_CUSTOM;
    out->v.custom.class_name = "Color";
    out->v.custom.data = result;
    out->v.custom.length = in->v.bytes.length;
    return AMBER_OK;
}

static struct Color colors[COUNT], back[COUNT];
static unsigned char one_by_one[COUNT][16], many[COUNT * 16], strided[COUNT][24];
static size_t lengths[COUNT];

static float random_float(uint64_t *state) {
    *state = *state * 6364136223846793005u + 1442695040888963407u;
    return (float)((int64_t)(*state >> 11) % 2000001 - 1000000) / 7.0f;
}

static void test_agrees_with_single_calls(amber_transformer *transformer) {
    uint64_t seed = 1234;
    for (int i = 0; i < COUNT; i++) {
        colors[i].r = random_float(&seed);
        colors[i].g = random_float(&seed);
        colors[i].b = random_float(&seed);
        colors[i].a = random_float(&seed);
    }
    int differ = 0;
    for (int i = 0; i < COUNT; i++) {
        size_t written = 0;
        if (amber_transformer_forward_bytes(&written, transformer, &colors[i], sizeof colors[i], one_by_one[i], 16) != AMBER_OK ||
            written != 16)
            differ++;
    }
    CHECK(differ == 0);

    /* Packed output (stride 0) and strided output (24-byte slots), lengths reported. */
    memset(lengths, 0xff, sizeof lengths);
    OK(amber_transformer_forward_bytes_array(lengths, transformer, COUNT, colors, sizeof colors, sizeof(struct Color), NULL,
                                             many, sizeof many, 0));
    CHECK(memcmp(many, one_by_one, sizeof many) == 0);
    int wrong_lengths = 0;
    for (int i = 0; i < COUNT; i++) wrong_lengths += lengths[i] != 16;
    CHECK(wrong_lengths == 0);
    memset(strided, 0xaa, sizeof strided);
    OK(amber_transformer_forward_bytes_array(NULL, transformer, COUNT, colors, sizeof colors, sizeof(struct Color), NULL,
                                             strided, sizeof strided, 24));
    int wrong_slots = 0;
    for (int i = 0; i < COUNT; i++) {
        wrong_slots += memcmp(strided[i], one_by_one[i], 16) != 0;
        for (int b = 16; b < 24; b++) wrong_slots += strided[i][b] != 0xaa;
    }
    CHECK(wrong_slots == 0);

    /* Back, the stored forms given by their lengths. */
    memset(back, 0, sizeof back);
    OK(amber_transformer_reverse_bytes_array(NULL, transformer, COUNT, many, sizeof many, 0, lengths, back, sizeof back,
                                             sizeof(struct Color)));
    CHECK(memcmp(back, colors, sizeof colors) == 0);
    /* Zero values: nothing to do, NULL buffers allowed. */
    OK(amber_transformer_forward_bytes_array(NULL, transformer, 0, NULL, 0, 16, NULL, NULL, 0, 16));
}

static void test_errors_name_the_element(amber_transformer *transformer) {
    size_t sizes[4] = {16, 16, 12, 16};
    unsigned char input[60] = {0}, output[64];
    memset(lengths, 0, sizeof lengths);
    FAILS(amber_transformer_forward_bytes_array(lengths, transformer, 4, input, sizeof input, 0, sizes, output, sizeof output, 16),
          AMBER_E_TRANSFORMER, "ColorToData, element 2:");
    CHECK(strstr(amber_last_error_message(), "forward was given 12 bytes, but Color values have 16") != NULL);
    CHECK(lengths[0] == 16 && lengths[1] == 16 && lengths[2] == 0 && lengths[3] == 0); /* done before it, nothing after */
    /* No room for the last result. */
    FAILS(amber_transformer_forward_bytes_array(NULL, transformer, 3, colors, sizeof colors, 16, NULL, output, 40, 0),
          AMBER_E_TRANSFORMER, "ColorToData, element 2:");

    /* Layouts that do not fit, both layouts at once, NULL buffers, counts out of range. */
    FAILS(amber_transformer_forward_bytes_array(NULL, transformer, 4, input, 48, 16, NULL, output, sizeof output, 16),
          AMBER_E_INVALID_VALUE, "4 values of 16 bytes within 48 bytes");
    FAILS(amber_transformer_forward_bytes_array(NULL, transformer, 4, input, 59, 0, sizes, output, sizeof output, 16),
          AMBER_E_INVALID_VALUE, "input lengths[3]");
    FAILS(amber_transformer_forward_bytes_array(NULL, transformer, 4, input, sizeof input, 16, sizes, output, sizeof output, 16),
          AMBER_E_INVALID_VALUE, "input_stride (16) and input_lengths are both set");
    FAILS(amber_transformer_forward_bytes_array(NULL, transformer, 4, colors, sizeof colors, 16, NULL, output, sizeof output, 17),
          AMBER_E_INVALID_VALUE, "ColorToData output");
    FAILS(amber_transformer_forward_bytes_array(NULL, transformer, 1, NULL, 16, 16, NULL, output, sizeof output, 16),
          AMBER_E_NULL_ARGUMENT, "input is NULL");
    FAILS(amber_transformer_forward_bytes_array(NULL, transformer, 1, colors, 16, 16, NULL, NULL, 16, 16),
          AMBER_E_NULL_ARGUMENT, "output is NULL");
    FAILS(amber_transformer_forward_bytes_array(NULL, transformer, (size_t)-1, colors, 16, 16, NULL, output, 16, 16),
          AMBER_E_INVALID_VALUE, "count is");
    FAILS(amber_transformer_forward_bytes_array(NULL, NULL, 1, colors, 16, 16, NULL, output, 16, 16), AMBER_E_NULL_ARGUMENT,
          "transformer");
}

int main(void) {
    const char *directory = getenv("AMBER_PLUGIN_DIR");
    CHECK(directory != NULL);
    if (directory == NULL) return report();
    char color_path[1024];
    snprintf(color_path, sizeof color_path, "%s/libAmberColorPlugin.so", directory);

    /* The plugin: its forward_bytes is called straight through. */
    amber_registry *plugin = NULL;
    amber_transformer *color = NULL;
    OK(amber_registry_new(&plugin));
    OK(amber_registry_load_plugin(plugin, color_path, NULL));
    OK(amber_registry_transformer(&color, plugin, "ColorToData"));
    test_agrees_with_single_calls(color);
    test_errors_name_the_element(color);
    OK(amber_transformer_free(color));
    OK(amber_registry_free(plugin));

    /* A host transformer with value functions only: the same results, and its own failure named by element. */
    amber_registry *host = NULL;
    OK(amber_registry_new(&host));
    amber_field fields[] = {{"r", AMBER_FIELD_FLOAT, NULL}, {"g", AMBER_FIELD_FLOAT, NULL},
                            {"b", AMBER_FIELD_FLOAT, NULL}, {"a", AMBER_FIELD_FLOAT, NULL}};
    OK(amber_registry_declare_struct(host, "Color", fields, 4));
    OK(amber_registry_register_transformer(host, "ColorToData", "Color", "Binary", to_bytes, from_bytes, NULL, NULL, NULL));
    OK(amber_registry_transformer(&color, host, "ColorToData"));
    test_agrees_with_single_calls(color);
    size_t sizes[3] = {16, 4, 16};
    unsigned char input[36] = {0}, output[48];
    FAILS(amber_transformer_reverse_bytes_array(NULL, color, 3, input, sizeof input, 0, sizes, output, sizeof output, 16),
          AMBER_E_TRANSFORMER, "ColorToData, element 1:");
    CHECK(strstr(amber_last_error_message(), "four bytes are not a colour") != NULL);
    OK(amber_transformer_free(color));
    OK(amber_registry_free(host));
    return report();
}
