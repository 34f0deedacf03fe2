/* W1-W5 through the C API (include/amber.h), against the same raw SQLite C
 * workloads the Swift benchmark uses, plus W2 read through a batch of
 * borrowed views. Prints JSON for amber-bench:
 *   capi_bench --n N --repetitions R --round-trips T --plugin libAmberColorPlugin.so */
#include <amber.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amber_bench_raw.h"

static const char model_json[] =
    "{\"entities\": [{\"name\": \"Book\", \"attributes\": ["
    "  {\"name\": \"title\", \"type\": \"string\"}, {\"name\": \"price\", \"type\": \"double\"},"
    "  {\"name\": \"published\", \"type\": \"date\"},"
    "  {\"name\": \"color\", \"type\": \"transformable\", \"valueClass\": \"Color\", \"transformer\": \"ColorToData\"}]}]}";

static void fail(const char *what) {
    fprintf(stderr, "capi_bench: %s: %s\n", what, amber_last_error_message());
    exit(1);
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *values, int count) {
    qsort(values, (size_t)count, sizeof *values, compare);
    return values[count / 2];
}

int main(int argc, char **argv) {
    long n = 100000, round_trips = 10000000;
    int repetitions = 5;
    const char *plugin_path = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--n") == 0) n = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--repetitions") == 0) repetitions = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--round-trips") == 0) round_trips = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--plugin") == 0) plugin_path = argv[i + 1];
    }
    bench_plugin *plugin = plugin_path ? bench_plugin_open(plugin_path) : NULL;
    if (plugin == NULL || repetitions < 1 || repetitions > 100) {
        fprintf(stderr, "usage: capi_bench --n N --repetitions R --plugin libAmberColorPlugin.so\n");
        return 2;
    }
    amber_registry *registry;
    amber_model *model;
    amber_entity *book;
    amber_attribute *attributes[4];
    const char *names[4] = {"title", "price", "published", "color"};
    if (amber_registry_new(&registry) || amber_registry_load_plugin(registry, plugin_path, NULL)) fail("plugin");
    if (amber_model_from_json(&model, model_json, sizeof model_json - 1, registry)) fail("model");
    if (amber_model_entity(&book, model, "Book")) fail("entity");
    for (int i = 0; i < 4; i++)
        if (amber_entity_attribute(&attributes[i], book, names[i])) fail("attribute");

    double amber_w1[100], amber_w2[100], amber_batch_w2[100], amber_w3[100], amber_w4[100], amber_w5[100];
    double raw_w1[100], raw_w2[100], raw_w3[100], raw_w4[100], raw_w5[100];
    amber_transformer *color_transformer;
    if (amber_registry_transformer(&color_transformer, registry, "ColorToData")) fail("transformer");
    char path[256];
    for (int r = 0; r < repetitions; r++) {
        snprintf(path, sizeof path, "/tmp/amber-capi-bench-%d-%d.db", (int)getpid(), r);
        bench_raw *raw = bench_raw_create(path, plugin);
        double checksum;
        raw_w1[r] = bench_raw_w1(raw, n);
        raw_w2[r] = bench_raw_w2(raw, &checksum);
        raw_w3[r] = bench_raw_w3(raw, &checksum);
        raw_w4[r] = bench_raw_w4(raw, n);
        bench_raw_close(raw);
        unlink(path);

        snprintf(path, sizeof path, "/tmp/amber-capi-bench-%d-%d.amber", (int)getpid(), r);
        unlink(path);
        amber_store *store;
        amber_context *context;
        if (amber_store_open(&store, path, model) || amber_context_new(&context, store)) fail("store");
        double start = bench_now_ms();
        char title[32];
        for (long i = 0; i < n; i++) {
            amber_object *object;
            amber_value v;
            bench_color color = bench_color_for(i);
            if (amber_context_insert(&object, context, book)) fail("insert");
            v.type = AMBER_VALUE_STRING;
            v.v.text.data = title;
            v.v.text.length = (size_t)snprintf(title, sizeof title, "Book %ld", i);
            if (amber_object_set(object, attributes[0], &v)) fail("set title");
            v.type = AMBER_VALUE_DOUBLE;
            v.v.real = (double)i * 0.5;
            if (amber_object_set(object, attributes[1], &v)) fail("set price");
            v.type = AMBER_VALUE_DATE;
            v.v.date = 1.7e9 + (double)i;
            if (amber_object_set(object, attributes[2], &v)) fail("set published");
            v.type = AMBER_VALUE_CUSTOM;
            v.v.custom.class_name = "Color";
            v.v.custom.data = &color;
            v.v.custom.length = sizeof color;
            if (amber_object_set(object, attributes[3], &v)) fail("set color");
        }
        if (amber_context_save(context)) fail("save");
        amber_w1[r] = bench_now_ms() - start;
        amber_context_free(context);

        if (amber_context_new(&context, store)) fail("context");
        start = bench_now_ms();
        amber_fetch_request request = {.size = sizeof(amber_fetch_request), .entity = "Book"};
        amber_object **objects;
        size_t count;
        double sum = 0;
        if (amber_context_fetch(&objects, &count, context, &request)) fail("fetch");
        for (size_t k = 0; k < count; k++) {
            for (int a = 0; a < 4; a++) {
                amber_value v;
                if (amber_object_get(&v, objects[k], attributes[a])) fail("get");
                if (v.type == AMBER_VALUE_DOUBLE) sum += v.v.real;
                amber_value_release(&v);
            }
        }
        amber_w2[r] = bench_now_ms() - start;

        /* W4: every 10th object as fetched in W2 gets a new price; one save. */
        start = bench_now_ms();
        for (size_t k = 0; k < count; k += 10) {
            amber_value v = {.type = AMBER_VALUE_DOUBLE, .v.real = (double)k};
            if (amber_object_set(objects[k], attributes[1], &v)) fail("set price");
        }
        if (amber_context_save(context)) fail("save");
        amber_w4[r] = bench_now_ms() - start;
        amber_free(objects);
        amber_context_free(context);

        /* W2 again in a fresh context, through one batch of borrowed views (no handles). */
        if (amber_context_new(&context, store)) fail("context");
        start = bench_now_ms();
        amber_batch *batch;
        const amber_value *values;
        if (amber_context_fetch_batch(&batch, &values, NULL, &count, context, &request, attributes, 4)) fail("batch");
        for (size_t k = 0; k < count * 4; k++) {
            if (values[k].type == AMBER_VALUE_DOUBLE) sum += values[k].v.real;
        }
        amber_batch_w2[r] = bench_now_ms() - start;
        amber_batch_free(batch); /* tear-down outside the timing, as for every workload */
        amber_context_free(context);

        /* W3: title CONTAINS[c] "42", summing price, in a fresh context. */
        if (amber_context_new(&context, store)) fail("context");
        start = bench_now_ms();
        amber_fetch_request search = AMBER_FETCH_REQUEST_INIT;
        amber_value needle = {.type = AMBER_VALUE_STRING};
        needle.v.text.data = "42";
        needle.v.text.length = 2;
        search.entity = "Book";
        search.predicate = "title CONTAINS[c] %@";
        search.arguments = &needle;
        search.argument_count = 1;
        if (amber_context_fetch(&objects, &count, context, &search)) fail("search");
        for (size_t k = 0; k < count; k++) {
            amber_value v;
            if (amber_object_get(&v, objects[k], attributes[1])) fail("get price");
            if (v.type == AMBER_VALUE_DOUBLE) sum += v.v.real;
        }
        amber_w3[r] = bench_now_ms() - start;
        amber_free(objects);
        amber_context_free(context);
        amber_store_close(store);
        unlink(path);
        (void)sum;

        /* W5: colour round trips through the checked byte path, against the plugin's own byte functions. */
        raw_w5[r] = bench_raw_w5(plugin, round_trips, &checksum);
        start = bench_now_ms();
        double colors = 0;
        for (long i = 0; i < round_trips; i++) {
            bench_color color = {(float)(i & 255), 0.5f, 0.25f, 1.0f}, result;
            unsigned char stored[16];
            size_t written, read;
            if (amber_transformer_forward_bytes(&written, color_transformer, &color, sizeof color, stored, sizeof stored) ||
                amber_transformer_reverse_bytes(&read, color_transformer, stored, written, &result, sizeof result))
                fail("round trip");
            colors += result.r;
        }
        amber_w5[r] = bench_now_ms() - start;
        (void)colors;
    }
    printf("{\"C API W1 insert + save\": {\"amber_ms\": %.3f, \"raw_ms\": %.3f},\n", median(amber_w1, repetitions),
           median(raw_w1, repetitions));
    printf(" \"C API W2 fetch all + read\": {\"amber_ms\": %.3f, \"raw_ms\": %.3f},\n", median(amber_w2, repetitions),
           median(raw_w2, repetitions));
    printf(" \"C API W2 batch fetch + read\": {\"amber_ms\": %.3f, \"raw_ms\": %.3f},\n", median(amber_batch_w2, repetitions),
           median(raw_w2, repetitions));
    printf(" \"C API W3 CONTAINS[c] + sum\": {\"amber_ms\": %.3f, \"raw_ms\": %.3f},\n", median(amber_w3, repetitions),
           median(raw_w3, repetitions));
    printf(" \"C API W4 update every 10th + save\": {\"amber_ms\": %.3f, \"raw_ms\": %.3f},\n", median(amber_w4, repetitions),
           median(raw_w4, repetitions));
    printf(" \"C API W5 colour round trips\": {\"amber_ms\": %.3f, \"raw_ms\": %.3f}}\n", median(amber_w5, repetitions),
           median(raw_w5, repetitions));
    amber_transformer_free(color_transformer);
    amber_model_free(model);
    amber_registry_free(registry);
    return 0;
}
