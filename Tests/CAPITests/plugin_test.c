/* Plugins through the C API: load the sample plugins that `swift build`
 * made (AMBER_PLUGIN_DIR), use them in a model, and see refusals. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <amber.h>
#include <amber_plugin.h>

#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"

/* amber.h and amber_plugin.h share one table of field codes. */
#define SAME_FIELD(name) ((int)AMBER_FIELD_##name == (int)AMBER_PLUGIN_FIELD_##name)
_Static_assert(SAME_FIELD(INT8) && SAME_FIELD(INT16) && SAME_FIELD(INT32) && SAME_FIELD(INT64) && SAME_FIELD(UINT8) &&
               SAME_FIELD(UINT16) && SAME_FIELD(UINT32) && SAME_FIELD(UINT64) && SAME_FIELD(FLOAT) &&
               SAME_FIELD(DOUBLE) && SAME_FIELD(BOOL) && SAME_FIELD(STRUCT),
               "field codes differ between amber.h and amber_plugin.h");

struct Color {
    float r, g, b, a;
};

/* Loads that do not add up: refused loads of a plugin already registered,
 * and of a library with no entry point, after as many to warm up, may not
 * grow the heap by more than a few bytes a load (each load that reached
 * dlopen used to keep 72 to 136 bytes). */
static void test_loads_do_not_add_up(amber_registry *registry, const char *plugin, const char *no_entry) {
    enum { ROUNDS = 200 };
    size_t before = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) before = mallinfo2().uordblks;
        for (int i = 0; i < ROUNDS; i++) {
            FAILS(amber_registry_load_plugin(registry, plugin, NULL), AMBER_E_PLUGIN_REFUSED, "already registered");
            FAILS(amber_registry_load_plugin(registry, no_entry, NULL), AMBER_E_PLUGIN_REFUSED, "exports no amber_plugin_entry");
        }
    }
    amber_clear_error();
    size_t after = mallinfo2().uordblks;
    CHECK(after < before + 2 * ROUNDS * 8);
    if (after >= before + 2 * ROUNDS * 8) fprintf(stderr, "%d refused loads grew the heap by %zu bytes\n", 2 * ROUNDS, after - before);
}

/* A registered transformer called directly: values and bytes, checked like a store's calls. */
static void test_direct_calls(amber_registry *registry) {
    amber_transformer *color = NULL;
    FAILS(amber_registry_transformer(&color, registry, "ColorToDat"), AMBER_E_NOT_FOUND, "did you mean ColorToData?");
    OK(amber_registry_transformer(&color, registry, "ColorToData"));
    const char *input_class = NULL, *output_class = NULL;
    size_t input_size = 0, output_size = 99;
    OK(amber_transformer_classes(&input_class, &input_size, &output_class, &output_size, color));
    CHECK(strcmp(input_class, "Color") == 0 && input_size == sizeof(struct Color));
    CHECK(strcmp(output_class, "Binary") == 0 && output_size == 0);

    struct Color teal = {0, 0.5f, 0.5f, 1}, back = {0, 0, 0, 0};
    unsigned char stored[32];
    size_t written = 0, read = 0;
    OK(amber_transformer_forward_bytes(&written, color, &teal, sizeof teal, stored, sizeof stored));
    CHECK(written == 16);
    OK(amber_transformer_reverse_bytes(&read, color, stored, written, &back, sizeof back));
    CHECK(read == sizeof back && memcmp(&back, &teal, sizeof teal) == 0);
    FAILS(amber_transformer_forward_bytes(&written, color, &teal, 12, stored, sizeof stored), AMBER_E_TRANSFORMER,
          "forward was given 12 bytes, but Color values have 16");
    FAILS(amber_transformer_reverse_bytes(&read, color, stored, 16, &back, 8), AMBER_E_TRANSFORMER,
          "reverse needs 16 bytes of output for Color, the buffer holds 8");
    FAILS(amber_transformer_forward_bytes(&written, color, NULL, 16, stored, sizeof stored), AMBER_E_NULL_ARGUMENT, "input");

    /* The value path gives the same bytes. */
    amber_value in = {.type = AMBER_VALUE_CUSTOM}, out;
    in.v.custom.class_name = "Color";
    in.v.custom.data = &teal;
    in.v.custom.length = sizeof teal;
    OK(amber_transformer_forward(&out, color, &in));
    CHECK(out.type == AMBER_VALUE_BINARY && out.v.bytes.length == 16 && memcmp(out.v.bytes.data, stored, 16) == 0);
    amber_value again;
    OK(amber_transformer_reverse(&again, color, &out));
    CHECK(again.type == AMBER_VALUE_CUSTOM && memcmp(again.v.custom.data, &teal, sizeof teal) == 0);
    amber_value_release(&again);
    amber_value_release(&out);
    amber_value text = {.type = AMBER_VALUE_STRING};
    text.v.text.data = "red";
    text.v.text.length = 3;
    FAILS(amber_transformer_forward(&out, color, &text), AMBER_E_TRANSFORMER, "ColorToData");

    /* Nil stays nil, and no transformer sees it. */
    amber_value nothing = {.type = AMBER_VALUE_NULL};
    OK(amber_transformer_forward(&out, color, &nothing));
    CHECK(out.type == AMBER_VALUE_NULL);

    OK(amber_transformer_free(color));
    FAILS(amber_transformer_forward_bytes(&written, color, &teal, sizeof teal, stored, sizeof stored), AMBER_E_INVALID_HANDLE,
          "released (stale) handle");
}

/* An empty result into an empty buffer (NULL, 0): a transformer with value functions only (deflate). */
static void test_empty_bytes(const char *directory) {
    char deflate_path[1024];
    snprintf(deflate_path, sizeof deflate_path, "%s/libAmberDeflatePlugin.so", directory);
    amber_registry *registry = NULL;
    amber_transformer *deflate = NULL;
    OK(amber_registry_new(&registry));
    OK(amber_registry_load_plugin(registry, deflate_path, NULL));
    OK(amber_registry_transformer(&deflate, registry, "Deflate"));
    unsigned char packed[64];
    size_t written = 0, read = 99;
    OK(amber_transformer_forward_bytes(&written, deflate, NULL, 0, packed, sizeof packed));
    CHECK(written > 0);
    OK(amber_transformer_reverse_bytes(&read, deflate, packed, written, NULL, 0));
    CHECK(read == 0);
    OK(amber_transformer_free(deflate));
    OK(amber_registry_free(registry));
}

/* A directory whose second plugin (by name) is refused: the first stays
 * loaded, and the count says so rather than being left as it was. */
static void test_a_refusal_in_a_directory_counts_what_loaded(const char *directory) {
    char folder[] = "/tmp/amber-plugins-XXXXXX", source[1024], copy[1200], bad[1200];
    CHECK(mkdtemp(folder) != NULL);
    snprintf(source, sizeof source, "%s/libAmberRectPlugin.so", directory);
    snprintf(copy, sizeof copy, "%s/a_rect.so", folder);
    snprintf(bad, sizeof bad, "%s/b_not_a_library.so", folder);
    FILE *in = fopen(source, "rb"), *out = fopen(copy, "wb"), *junk = fopen(bad, "wb");
    CHECK(in != NULL && out != NULL && junk != NULL);
    if (in == NULL || out == NULL || junk == NULL) return;
    char buffer[65536];
    size_t got;
    while ((got = fread(buffer, 1, sizeof buffer, in)) > 0) CHECK(fwrite(buffer, 1, got, out) == got);
    fputs("not a shared library", junk);
    fclose(in);
    fclose(out);
    fclose(junk);
    amber_registry *registry = NULL;
    OK(amber_registry_new(&registry));
    size_t count = 99;
    FAILS(amber_registry_load_plugin_directory(&count, registry, folder, NULL), AMBER_E_PLUGIN_REFUSED, "b_not_a_library.so");
    CHECK(count == 1);
    amber_transformer *rect = NULL;
    OK(amber_registry_transformer(&rect, registry, "RectToString"));
    OK(amber_transformer_free(rect));
    count = 99;
    FAILS(amber_registry_load_plugin_directory(&count, registry, "/nonexistent/plugins", NULL), AMBER_E_PLUGIN_REFUSED, "cannot list");
    CHECK(count == 0);
    OK(amber_registry_free(registry));
    remove(copy);
    remove(bad);
    rmdir(folder);
}

int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    const char *directory = getenv("AMBER_PLUGIN_DIR");
    CHECK(directory != NULL);
    if (directory == NULL) return report();
    char color_path[1024], aes_path[1024];
    snprintf(color_path, sizeof color_path, "%s/libAmberColorPlugin.so", directory);
    snprintf(aes_path, sizeof aes_path, "%s/libAmberAESGCMPlugin.so", directory);

    amber_registry *registry = NULL;
    OK(amber_registry_new(&registry));
    OK(amber_registry_load_plugin(registry, color_path, NULL));
    FAILS(amber_registry_load_plugin(registry, color_path, NULL), AMBER_E_PLUGIN_REFUSED,
          "value class \"Color\": the name is already registered by libAmberColorPlugin.so");
    CHECK(strcmp(amber_last_error_origin(), color_path) == 0);
    FAILS(amber_registry_load_plugin(registry, aes_path, NULL), AMBER_E_PLUGIN_REFUSED,
          "transformer \"AESGCM\": create failed with status -1: aesgcm: configuration needs key=<64 hex digits>");
    OK(amber_registry_load_plugin(registry, aes_path, "key=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"));
    FAILS(amber_registry_load_plugin(registry, "/nonexistent/libnothing.so", NULL), AMBER_E_PLUGIN_REFUSED, "no such file");

    /* The plugin's struct class has the C compiler's layout. */
    size_t size = 0, alignment = 0, count = 0;
    amber_field_info fields[4];
    OK(amber_registry_struct_layout(&size, &alignment, fields, &count, 4, registry, "Color"));
    CHECK(size == sizeof(struct Color) && fields[3].offset == offsetof(struct Color, a));

    static const char json[] =
        "{\"entities\": [{\"name\": \"Swatch\", \"attributes\": ["
        "  {\"name\": \"color\", \"type\": \"transformable\", \"valueClass\": \"Color\", \"transformer\": [\"ColorToData\", \"AESGCM\"]}"
        "]}]}";
    amber_model *model = NULL;
    OK(amber_model_from_json(&model, json, sizeof json - 1, registry));
    amber_store *store = NULL;
    amber_context *context = NULL;
    amber_entity *swatch = NULL;
    amber_object *object = NULL;
    OK(amber_store_open(&store, NULL, model));
    OK(amber_context_new(&context, store));
    OK(amber_model_entity(&swatch, model, "Swatch"));
    OK(amber_context_insert(&object, context, swatch));
    struct Color red = {1, 0, 0, 1};
    amber_value value = {.type = AMBER_VALUE_CUSTOM};
    value.v.custom.class_name = "Color";
    value.v.custom.data = &red;
    value.v.custom.length = sizeof red;
    OK(amber_object_set_named(object, "color", &value));
    OK(amber_context_save(context));
    OK(amber_context_free(context));

    OK(amber_context_new(&context, store));
    amber_fetch_request request = {.size = sizeof(amber_fetch_request), .entity = "Swatch"};
    amber_object **objects = NULL;
    size_t found = 0;
    OK(amber_context_fetch(&objects, &found, context, &request));
    CHECK(found == 1);
    if (found == 1) {
        amber_value got;
        OK(amber_object_get_named(&got, objects[0], "color"));
        CHECK(got.type == AMBER_VALUE_CUSTOM && got.v.custom.length == sizeof red &&
              memcmp(got.v.custom.data, &red, sizeof red) == 0);
        amber_value_release(&got);
    }
    if (found == 1) {
        int64_t key = 0;
        OK(amber_object_primary_key(&key, objects[0]));
        CHECK(key == 1);
        OK(amber_objects_release(objects, found));
        FAILS(amber_object_primary_key(&key, objects[0]), AMBER_E_INVALID_HANDLE, "released (stale) handle");
    }
    amber_free(objects);
    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));
    test_direct_calls(registry);
    test_empty_bytes(directory);
    test_a_refusal_in_a_directory_counts_what_loaded(directory);
    char library_path[1024];
    snprintf(library_path, sizeof library_path, "%s/libAmberC.so", directory);
    test_loads_do_not_add_up(registry, color_path, library_path);
    OK(amber_registry_free(registry));
    return report();
}
