/* A full round trip through the C API: a model from JSON, a struct value
 * class declared through the API, a transformer written in C, 10,000 objects
 * inserted, saved, fetched with a predicate and checked value by value. */
#include <amber.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

struct Color {
    float r, g, b, a;
};

static int userdata_frees;
static int forward_calls, reverse_calls, releases;

/* Color -> Binary: the struct's bytes, in a buffer released by color_release. */
static int32_t color_forward(amber_value *out, const amber_value *in, void *userdata) {
    (void)userdata;
    forward_calls++;
    if (in->type != AMBER_VALUE_CUSTOM || in->v.custom.length != sizeof(struct Color)) return -1;
    void *copy = malloc(sizeof(struct Color));
    if (copy == NULL) return -1;
    memcpy(copy, in->v.custom.data, sizeof(struct Color));
    out->type = AMBER_VALUE_BINARY;
    out->v.bytes.data = copy;
    out->v.bytes.length = sizeof(struct Color);
    return AMBER_OK;
}

/* Binary -> Color. */
static int32_t color_reverse(amber_value *out, const amber_value *in, void *userdata) {
    (void)userdata;
    reverse_calls++;
    if (in->type != AMBER_VALUE_BINARY || in->v.bytes.length != sizeof(struct Color)) return -1;
    void *copy = malloc(sizeof(struct Color));
    if (copy == NULL) return -1;
    memcpy(copy, in->v.bytes.data, sizeof(struct Color));
    out->type = AMBER_VALUE_CUSTOM;
    out->v.custom.class_name = "Color";
    out->v.custom.data = copy;
    out->v.custom.length = sizeof(struct Color);
    return AMBER_OK;
}

static void color_release(amber_value *out, void *userdata) {
    (void)userdata;
    releases++;
    free((void *)(out->type == AMBER_VALUE_BINARY ? out->v.bytes.data : out->v.custom.data));
}

static void count_free(void *userdata) {
    (void)userdata;
    userdata_frees++;
}

static const char model_json[] =
    "{\"entities\": [{\"name\": \"Book\", \"attributes\": ["
    "  {\"name\": \"title\", \"type\": \"string\", \"optional\": false},"
    "  {\"name\": \"price\", \"type\": \"decimal\"},"
    "  {\"name\": \"pages\", \"type\": \"integer32\"},"
    "  {\"name\": \"published\", \"type\": \"date\"},"
    "  {\"name\": \"isbn\", \"type\": \"uuid\"},"
    "  {\"name\": \"cover\", \"type\": \"transformable\", \"valueClass\": \"Color\", \"transformer\": \"ColorToData\"},"
    "  {\"name\": \"tags\", \"type\": \"transformable\"}"
    "], \"uniquenessConstraints\": [[\"title\"]]}]}";

enum { N = 10000 };

static struct Color color_for(int i) {
    struct Color c = {(float)i / N, 0.5f, (float)(i % 7) / 7.0f, 1.0f};
    return c;
}

static void test_round_trip(const char *path) {
    amber_registry *registry = NULL;
    OK(amber_registry_new(&registry));
    amber_field fields[] = {
        {"r", AMBER_FIELD_FLOAT, NULL}, {"g", AMBER_FIELD_FLOAT, NULL},
        {"b", AMBER_FIELD_FLOAT, NULL}, {"a", AMBER_FIELD_FLOAT, NULL},
    };
    OK(amber_registry_declare_struct(registry, "Color", fields, 4));

    size_t size = 0, alignment = 0, field_count = 0;
    amber_field_info layout[4];
    OK(amber_registry_struct_layout(&size, &alignment, layout, &field_count, 4, registry, "Color"));
    CHECK(size == sizeof(struct Color));
    CHECK(alignment == _Alignof(struct Color));
    CHECK(field_count == 4);
    CHECK(layout[0].offset == offsetof(struct Color, r) && layout[1].offset == offsetof(struct Color, g));
    CHECK(layout[2].offset == offsetof(struct Color, b) && layout[3].offset == offsetof(struct Color, a));
    CHECK(strcmp(layout[3].name, "a") == 0 && layout[3].type == AMBER_FIELD_FLOAT && layout[3].struct_name == NULL);
    FAILS(amber_registry_struct_layout(&size, &alignment, layout, &field_count, 2, registry, "Color"),
          AMBER_E_BUFFER_TOO_SMALL, "has 4 fields");

    OK(amber_registry_register_transformer(registry, "ColorToData", "Color", "Binary", color_forward, color_reverse,
                                           color_release, NULL, count_free));

    amber_model *model = NULL;
    OK(amber_model_from_json(&model, model_json, sizeof model_json - 1, registry));
    amber_entity *book = NULL;
    amber_attribute *title = NULL, *price = NULL, *pages = NULL, *published = NULL, *isbn = NULL, *cover = NULL, *tags = NULL;
    OK(amber_model_entity(&book, model, "Book"));
    OK(amber_entity_attribute(&title, book, "title"));
    OK(amber_entity_attribute(&price, book, "price"));
    OK(amber_entity_attribute(&pages, book, "pages"));
    OK(amber_entity_attribute(&published, book, "published"));
    OK(amber_entity_attribute(&isbn, book, "isbn"));
    OK(amber_entity_attribute(&cover, book, "cover"));
    OK(amber_entity_attribute(&tags, book, "tags"));
    const char *entity_name = NULL;
    OK(amber_entity_name(&entity_name, book));
    CHECK(entity_name != NULL && strcmp(entity_name, "Book") == 0);

    amber_store *store = NULL;
    amber_context *context = NULL;
    OK(amber_store_open(&store, path, model));
    OK(amber_context_new(&context, store));

    int insert_failures = 0;
    for (int i = 0; i < N; i++) {
        amber_object *object = NULL;
        char text[64];
        int length = snprintf(text, sizeof text, "Book %05d", i);
        char decimal[32];
        int decimal_length = snprintf(decimal, sizeof decimal, "%d.%02d", i, i % 100);
        struct Color color = color_for(i);
        amber_value v;
        if (amber_context_insert(&object, context, book) != AMBER_OK) { insert_failures++; continue; }
        v.type = AMBER_VALUE_STRING; v.v.text.data = text; v.v.text.length = (size_t)length;
        if (amber_object_set(object, title, &v) != AMBER_OK) insert_failures++;
        v.type = AMBER_VALUE_DECIMAL; v.v.text.data = decimal; v.v.text.length = (size_t)decimal_length;
        if (amber_object_set(object, price, &v) != AMBER_OK) insert_failures++;
        v.type = AMBER_VALUE_INT; v.v.integer = i;
        if (amber_object_set(object, pages, &v) != AMBER_OK) insert_failures++;
        v.type = AMBER_VALUE_DATE; v.v.date = 1.7e9 + i + 0.25;
        if (amber_object_set(object, published, &v) != AMBER_OK) insert_failures++;
        v.type = AMBER_VALUE_UUID; memset(v.v.uuid, 0, 16); memcpy(v.v.uuid, &i, sizeof i);
        if (amber_object_set(object, isbn, &v) != AMBER_OK) insert_failures++;
        v.type = AMBER_VALUE_CUSTOM; v.v.custom.class_name = "Color"; v.v.custom.data = &color; v.v.custom.length = sizeof color;
        if (amber_object_set(object, cover, &v) != AMBER_OK) insert_failures++;
        if (i % 1000 == 0) {
            static const char json[] = "[\"classic\", {\"stars\": 5}]";
            v.type = AMBER_VALUE_PLIST; v.v.text.data = json; v.v.text.length = sizeof json - 1;
            if (amber_object_set(object, tags, &v) != AMBER_OK) insert_failures++;
        }
    }
    CHECK(insert_failures == 0);
    int32_t changes = 0;
    OK(amber_context_has_changes(&changes, context));
    CHECK(changes == 1);
    CHECK(forward_calls == 0); /* encoding happens at save */
    OK(amber_context_save(context));
    CHECK(forward_calls == N);
    CHECK(releases == N);
    OK(amber_context_free(context));

    /* A fresh context sees exactly what was saved. */
    OK(amber_context_new(&context, store));
    amber_value args[2];
    args[0].type = AMBER_VALUE_INT; args[0].v.integer = 5000;
    args[1].type = AMBER_VALUE_STRING; args[1].v.text.data = "Book"; args[1].v.text.length = 4;
    amber_sort sort = {"pages", 1, 0};
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Book";
    request.predicate = "pages >= %@ AND title BEGINSWITH %@";
    request.arguments = args;
    request.argument_count = 2;
    request.sort = &sort;
    request.sort_count = 1;
    amber_object **objects = NULL;
    size_t count = 0;
    OK(amber_context_fetch(&objects, &count, context, &request));
    CHECK(count == N / 2);
    int64_t counted = 0;
    OK(amber_context_count(&counted, context, &request));
    CHECK(counted == N / 2);
    CHECK(reverse_calls == 0); /* lazy: nothing decoded yet */

    int mismatches = 0;
    for (size_t k = 0; k < count; k++) {
        int i = N - 1 - (int)k; /* descending by pages */
        amber_value v;
        char expected[64];
        snprintf(expected, sizeof expected, "Book %05d", i);
        if (amber_object_get(&v, objects[k], title) != AMBER_OK || v.type != AMBER_VALUE_STRING ||
            v.v.text.length != strlen(expected) || memcmp(v.v.text.data, expected, v.v.text.length) != 0 ||
            v.v.text.data[v.v.text.length] != '\0')
            mismatches++;
        amber_value_release(&v);
        snprintf(expected, sizeof expected, "%d.%02d", i, i % 100);
        /* Decimals come back in canonical form: "5000.00" -> "5000", "5001.01" -> "5001.01". */
        if (amber_object_get(&v, objects[k], price) != AMBER_OK || v.type != AMBER_VALUE_DECIMAL ||
            strtod(v.v.text.data, NULL) != strtod(expected, NULL))
            mismatches++;
        amber_value_release(&v);
        if (amber_object_get(&v, objects[k], pages) != AMBER_OK || v.type != AMBER_VALUE_INT || v.v.integer != i) mismatches++;
        if (amber_object_get(&v, objects[k], published) != AMBER_OK || v.type != AMBER_VALUE_DATE ||
            v.v.date < 1.7e9 + i + 0.2499 || v.v.date > 1.7e9 + i + 0.2501)
            mismatches++;
        if (amber_object_get(&v, objects[k], isbn) != AMBER_OK || v.type != AMBER_VALUE_UUID || memcmp(v.v.uuid, &i, sizeof i) != 0)
            mismatches++;
        struct Color color = color_for(i);
        if (amber_object_get(&v, objects[k], cover) != AMBER_OK || v.type != AMBER_VALUE_CUSTOM ||
            strcmp(v.v.custom.class_name, "Color") != 0 || v.v.custom.length != sizeof color ||
            memcmp(v.v.custom.data, &color, sizeof color) != 0)
            mismatches++;
        amber_value_release(&v);
        if (amber_object_get(&v, objects[k], tags) != AMBER_OK) mismatches++;
        if (i % 1000 == 0 ? (v.type != AMBER_VALUE_PLIST || strcmp(v.v.text.data, "[\"classic\",{\"stars\":5}]") != 0)
                          : v.type != AMBER_VALUE_NULL)
            mismatches++;
        amber_value_release(&v);
    }
    CHECK(mismatches == 0);
    CHECK(reverse_calls == N / 2);

    /* The same rows as a batch of borrowed views: every value equals
     * amber_object_get's copy, type and bytes (a differential check). */
    amber_attribute *all[7] = {title, price, pages, published, isbn, cover, tags};
    amber_batch *batch = NULL;
    const amber_value *views = NULL;
    amber_object *const *listed = NULL;
    size_t rows = 0;
    OK(amber_context_fetch_batch(&batch, &views, &listed, &rows, context, &request, all, 7));
    CHECK(rows == count && listed != NULL);
    int differences = 0;
    for (size_t k = 0; k < rows && listed != NULL; k++) {
        if (listed[k] != objects[k]) differences++;
        for (int a = 0; a < 7; a++) {
            amber_value copy;
            const amber_value *view = &views[k * 7 + (size_t)a];
            if (amber_object_get(&copy, objects[k], all[a]) != AMBER_OK || copy.type != view->type) {
                differences++;
            } else if (copy.type == AMBER_VALUE_CUSTOM) {
                if (strcmp(copy.v.custom.class_name, view->v.custom.class_name) != 0 || copy.v.custom.length != view->v.custom.length ||
                    memcmp(copy.v.custom.data, view->v.custom.data, copy.v.custom.length) != 0)
                    differences++;
            } else if (copy.type == AMBER_VALUE_STRING || copy.type == AMBER_VALUE_DECIMAL || copy.type == AMBER_VALUE_PLIST) {
                if (copy.v.text.length != view->v.text.length || memcmp(copy.v.text.data, view->v.text.data, copy.v.text.length) != 0 ||
                    view->v.text.data[view->v.text.length] != '\0')
                    differences++;
            } else if (memcmp(&copy.v, &view->v, sizeof copy.v) != 0) {
                differences++;
            }
            amber_value_release(&copy);
        }
    }
    CHECK(differences == 0);
    if (rows > 1) CHECK(views[5].v.custom.class_name == views[7 + 5].v.custom.class_name); /* one copy per class */
    OK(amber_batch_free(batch));
    FAILS(amber_batch_free(batch), AMBER_E_INVALID_HANDLE, "released (stale) handle");
    OK(amber_context_fetch_batch(&batch, &views, NULL, &rows, context, &request, all, 2)); /* no handles asked for */
    CHECK(rows == count && views[0].type == AMBER_VALUE_STRING);
    OK(amber_batch_free(batch));
    FAILS(amber_context_fetch_batch(&batch, &views, NULL, &rows, context, &request, all, 0), AMBER_E_INVALID_VALUE,
          "attribute_count is 0");

    /* Object IDs: permanent after save, and they find the object again. */
    char *uri = NULL;
    size_t uri_length = 0;
    OK(amber_object_uri(&uri, &uri_length, objects[0]));
    CHECK(uri != NULL && strncmp(uri, "amber://", 8) == 0 && strlen(uri) == uri_length);
    amber_object *again = NULL;
    OK(amber_context_object_with_uri(&again, context, uri));
    CHECK(again == objects[0]);
    uint32_t state = 99;
    OK(amber_object_state(&state, objects[0]));
    CHECK(state == 0);
    amber_free(uri);

    /* Change, inspect pending objects, roll back. */
    amber_value v;
    v.type = AMBER_VALUE_INT; v.v.integer = 1;
    OK(amber_object_set(objects[0], pages, &v));
    OK(amber_context_delete(context, objects[1]));
    amber_object **pending = NULL;
    size_t pending_count = 0;
    OK(amber_context_pending_objects(&pending, &pending_count, context, AMBER_PENDING_UPDATED));
    CHECK(pending_count == 1 && pending[0] == objects[0]);
    amber_free(pending);
    OK(amber_context_pending_objects(&pending, &pending_count, context, AMBER_PENDING_DELETED));
    CHECK(pending_count == 1 && pending[0] == objects[1]);
    amber_free(pending);
    OK(amber_context_rollback(context));
    OK(amber_object_get(&v, objects[0], pages));
    CHECK(v.type == AMBER_VALUE_INT && v.v.integer == N - 1);
    amber_free(objects);

    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));
    CHECK(userdata_frees == 0); /* the registry still holds the transformer */
    OK(amber_registry_free(registry));
    CHECK(userdata_frees == 1); /* exactly once, when nothing uses it any more */
}

static void test_builder(void) {
    amber_model_builder *builder = NULL;
    OK(amber_model_builder_new(&builder));
    OK(amber_model_builder_add_entity(builder, "Note"));
    amber_attribute_spec spec = AMBER_ATTRIBUTE_SPEC_INIT;
    spec.name = "text";
    spec.type = AMBER_TYPE_STRING;
    spec.flags = AMBER_ATTRIBUTE_REQUIRED | AMBER_ATTRIBUTE_INDEXED;
    spec.min_length = 1;
    OK(amber_model_builder_add_attribute(builder, "Note", &spec));
    spec = (amber_attribute_spec)AMBER_ATTRIBUTE_SPEC_INIT;
    spec.name = "stars";
    spec.type = AMBER_TYPE_INTEGER16;
    amber_value low = {AMBER_VALUE_INT, {.integer = 0}}, high = {AMBER_VALUE_INT, {.integer = 5}};
    spec.min_value = &low;
    spec.max_value = &high;
    spec.default_value = &high;
    OK(amber_model_builder_add_attribute(builder, "Note", &spec));
    const char *unique[] = {"text"};
    OK(amber_model_builder_add_unique(builder, "Note", unique, 1));
    OK(amber_model_builder_set_user_info(builder, "Note", "stars", "ui", "rating"));
    amber_model *model = NULL;
    OK(amber_model_builder_bind(&model, builder, NULL));
    char *json = NULL;
    size_t length = 0;
    OK(amber_model_to_json(&json, &length, model));
    CHECK(json != NULL && strstr(json, "\"uniquenessConstraints\"") != NULL && strstr(json, "\"rating\"") != NULL);
    amber_free(json);

    amber_store *store = NULL;
    amber_context *context = NULL;
    OK(amber_store_open(&store, NULL, model));
    OK(amber_context_new(&context, store));
    amber_entity *note = NULL;
    OK(amber_model_entity(&note, model, "Note"));
    amber_object *object = NULL;
    OK(amber_context_insert(&object, context, note));
    amber_value v;
    OK(amber_object_get_named(&v, object, "stars"));
    CHECK(v.type == AMBER_VALUE_INT && v.v.integer == 5);
    /* Validation: text is required and stars at most 5; both problems in one error, nothing lost. */
    v.v.integer = 9;
    OK(amber_object_set_named(object, "stars", &v));
    FAILS(amber_context_save(context), AMBER_E_SAVE_FAILED, "Note.text: a value is required");
    CHECK(strstr(amber_last_error_message(), "Note.stars: 9 is greater than the maximum 5") != NULL);
    int32_t changes = 0;
    OK(amber_context_has_changes(&changes, context));
    CHECK(changes == 1);
    v.type = AMBER_VALUE_STRING; v.v.text.data = "hello"; v.v.text.length = 5;
    OK(amber_object_set_named(object, "text", &v));
    v.type = AMBER_VALUE_INT; v.v.integer = 4;
    OK(amber_object_set_named(object, "stars", &v));
    OK(amber_context_save(context));
    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));
    OK(amber_model_builder_free(builder));
}

static int32_t refuse_with_message(amber_value *out, const amber_value *in, void *userdata) {
    (void)out; (void)in; (void)userdata;
    amber_transformer_error("the value is not in tune");
    return -3;
}

/* The batch path (many rows in one call), introspection, struct layouts in a model. */
static void test_batches_and_introspection(void) {
    static const char json[] =
        "{\"valueClasses\": [{\"name\": \"Point\", \"kind\": \"struct\", \"fields\": ["
        "    {\"name\": \"tag\", \"type\": \"int8\"}, {\"name\": \"x\", \"type\": \"double\"}]}],"
        " \"entities\": [{\"name\": \"Row\", \"attributes\": ["
        "  {\"name\": \"label\", \"type\": \"string\", \"minLength\": 1},"
        "  {\"name\": \"n\", \"type\": \"integer16\"},"
        "  {\"name\": \"where\", \"type\": \"undefined\", \"transient\": true, \"valueClass\": \"Point\"},"
        "  {\"name\": \"tuned\", \"type\": \"transformable\", \"valueClass\": \"String\", \"transformer\": \"OutOfTune\"}"
        "]}]}";
    amber_registry *registry = NULL;
    OK(amber_registry_new(&registry));
    OK(amber_registry_register_transformer(registry, "OutOfTune", "String", "String", refuse_with_message, refuse_with_message,
                                           NULL, NULL, NULL));
    amber_model *model = NULL;
    OK(amber_model_from_json(&model, json, sizeof json - 1, registry));
    amber_entity *row = NULL;
    OK(amber_model_entity(&row, model, "Row"));
    size_t count = 0;
    OK(amber_entity_attribute_count(&count, row));
    CHECK(count == 4);
    amber_attribute *attributes[4] = {NULL};
    const char *names[4] = {NULL};
    int32_t types[4] = {0};
    for (size_t i = 0; i < 4; i++) {
        OK(amber_entity_attribute_at(&attributes[i], row, i));
        OK(amber_attribute_name(&names[i], attributes[i]));
        OK(amber_attribute_type(&types[i], attributes[i]));
    }
    CHECK(strcmp(names[0], "label") == 0 && strcmp(names[3], "tuned") == 0);
    CHECK(types[0] == AMBER_TYPE_STRING && types[1] == AMBER_TYPE_INTEGER16 && types[2] == AMBER_TYPE_UNDEFINED);
    const char *value_class = NULL;
    OK(amber_attribute_value_class(&value_class, attributes[2]));
    CHECK(value_class != NULL && strcmp(value_class, "Point") == 0);
    OK(amber_attribute_value_class(&value_class, attributes[0]));
    CHECK(value_class == NULL);
    amber_attribute *past = NULL;
    FAILS(amber_entity_attribute_at(&past, row, 4), AMBER_E_NOT_FOUND, "index 4 is past them");

    struct Point { int8_t tag; double x; };
    size_t size = 0, alignment = 0, field_count = 0;
    amber_field_info fields[2];
    OK(amber_model_struct_layout(&size, &alignment, fields, &field_count, 2, model, "Point"));
    CHECK(size == sizeof(struct Point) && alignment == _Alignof(struct Point) && field_count == 2);
    CHECK(strcmp(fields[1].name, "x") == 0 && fields[1].type == AMBER_FIELD_DOUBLE && fields[1].offset == offsetof(struct Point, x));

    amber_store *store = NULL;
    amber_context *context = NULL;
    OK(amber_store_open(&store, NULL, model));
    OK(amber_context_new(&context, store));
    enum { ROWS = 1000 };
    static amber_value values[ROWS * 2];
    static char labels[ROWS][16];
    for (int i = 0; i < ROWS; i++) {
        int length = snprintf(labels[i], sizeof labels[i], "row %d", i);
        values[2 * i].type = AMBER_VALUE_STRING;
        values[2 * i].v.text.data = labels[i];
        values[2 * i].v.text.length = (size_t)length;
        values[2 * i + 1].type = AMBER_VALUE_INT;
        values[2 * i + 1].v.integer = i;
    }
    /* One bad value (row 7 is out of Integer 16 range): nothing of the batch stays. */
    values[2 * 7 + 1].v.integer = 100000;
    FAILS(amber_context_insert_many(NULL, context, row, attributes, 2, values, ROWS), AMBER_E_INVALID_VALUE,
          "Row.n in row 7: expected Integer 16, given Integer 100000");
    int32_t changes = 1;
    OK(amber_context_has_changes(&changes, context));
    CHECK(changes == 0);
    values[2 * 7 + 1].v.integer = 7;
    amber_object *first_two[2];
    OK(amber_context_insert_many(first_two, context, row, attributes, 2, values, 2));
    OK(amber_context_insert_many(NULL, context, row, attributes, 2, values + 4, ROWS - 2));
    OK(amber_context_save(context));

    amber_fetch_request request = {.size = sizeof(amber_fetch_request), .entity = "Row", .predicate = "n >= 500", .sort = &(amber_sort){"n", 0, 0}, .sort_count = 1};
    amber_object **objects = NULL;
    amber_value *fetched = NULL;
    size_t found = 0;
    OK(amber_context_fetch_values(&objects, &fetched, &found, context, &request, attributes, 2));
    CHECK(found == ROWS / 2);
    int wrong = 0;
    for (size_t i = 0; i < found; i++) {
        char expected[16];
        snprintf(expected, sizeof expected, "row %d", (int)(500 + i));
        if (fetched[2 * i].type != AMBER_VALUE_STRING || strcmp(fetched[2 * i].v.text.data, expected) != 0) wrong++;
        if (fetched[2 * i + 1].type != AMBER_VALUE_INT || fetched[2 * i + 1].v.integer != (int64_t)(500 + i)) wrong++;
    }
    CHECK(wrong == 0);
    amber_values_release(fetched, found * 2);
    amber_free(objects);
    amber_attribute *other_entity_attribute = NULL;
    OK(amber_entity_attribute(&other_entity_attribute, row, "tuned"));
    FAILS(amber_context_fetch_values(&objects, &fetched, &found, context, &request, NULL, 1), AMBER_E_NULL_ARGUMENT, "attributes");

    /* A transformer's own message reaches the error. */
    amber_value text = {.type = AMBER_VALUE_STRING};
    text.v.text.data = "la";
    text.v.text.length = 2;
    OK(amber_object_set(first_two[0], other_entity_attribute, &text));
    FAILS(amber_context_save(context), AMBER_E_SAVE_FAILED,
          "Row.tuned: transformer \"OutOfTune\" (C API) forward failed: returned status -3: the value is not in tune");

    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));
    OK(amber_registry_free(registry));
}

/* A failed save lists every problem as a structure: validation and uniqueness in one save. */
static void test_save_problems(void) {
    static const char json[] =
        "{\"entities\": [{\"name\": \"Book\", \"attributes\": ["
        "  {\"name\": \"title\", \"type\": \"string\", \"optional\": false},"
        "  {\"name\": \"pages\", \"type\": \"integer32\", \"minValue\": 1}"
        "], \"uniquenessConstraints\": [[\"title\"]]}]}";
    amber_model *model = NULL;
    amber_entity *book = NULL;
    amber_store *store = NULL;
    amber_context *context = NULL;
    amber_object *dune = NULL, *thin = NULL, *twin = NULL, *found = NULL;
    OK(amber_model_from_json(&model, json, sizeof json - 1, NULL));
    OK(amber_model_entity(&book, model, "Book"));
    OK(amber_store_open(&store, ":memory:", model));
    OK(amber_context_new(&context, store));
    amber_value dune_title = text("Dune"), thin_title = text("Thin"), zero = integer(0);
    OK(amber_context_insert(&dune, context, book));
    OK(amber_object_set_named(dune, "title", &dune_title));
    OK(amber_context_save(context));

    OK(amber_context_insert(&thin, context, book));
    OK(amber_object_set_named(thin, "title", &thin_title));
    OK(amber_object_set_named(thin, "pages", &zero));
    OK(amber_context_insert(&twin, context, book));
    OK(amber_object_set_named(twin, "title", &dune_title));
    FAILS(amber_context_save(context), AMBER_E_SAVE_FAILED, "uniqueness constraint violated");
    CHECK(amber_last_error_problem_count() == 2);
    const amber_problem *first = amber_last_error_problem(0), *second = amber_last_error_problem(1);
    CHECK(first != NULL && second != NULL && amber_last_error_problem(2) == NULL);
    if (first == NULL || second == NULL) return;
    char *thin_uri = NULL, *twin_uri = NULL;
    size_t length = 0;
    /* Reading the problems changes nothing; a successful call keeps the last error too. */
    OK(amber_object_uri(&thin_uri, &length, thin));
    OK(amber_object_uri(&twin_uri, &length, twin));
    CHECK(strcmp(first->object_uri, thin_uri) == 0 && strcmp(first->place, "Book.pages") == 0);
    CHECK(strcmp(first->rule, "minValue") == 0 && strcmp(first->message, "0 is less than the minimum 1") == 0);
    CHECK(strcmp(second->object_uri, twin_uri) == 0 && strcmp(second->place, "Book(title)") == 0);
    CHECK(strcmp(second->rule, "uniqueness") == 0 && strstr(second->message, "title = \"Dune\"") != NULL);
    /* A problem's URI finds its (new, unsaved) object in the saving context. */
    OK(amber_context_object_with_uri(&found, context, second->object_uri));
    char *found_uri = NULL;
    OK(amber_object_uri(&found_uri, &length, found));
    CHECK(strcmp(found_uri, twin_uri) == 0);
    amber_free(thin_uri);
    amber_free(twin_uri);
    amber_free(found_uri);

    /* Another failure replaces the list; one that lists nothing empties it. */
    FAILS(amber_context_insert(NULL, context, book), AMBER_E_NULL_ARGUMENT, "out");
    CHECK(amber_last_error_problem_count() == 0 && amber_last_error_problem(0) == NULL);

    /* Fixed, the same changes save. */
    amber_value pages = integer(12), other = text("Dune Messiah");
    OK(amber_object_set_named(thin, "pages", &pages));
    OK(amber_object_set_named(twin, "title", &other));
    OK(amber_context_save(context));

    /* A model that does not bind lists its problems, with no object and no rule. */
    static const char bad[] =
        "{\"entities\": [{\"name\": \"Book\", \"attributes\": ["
        "  {\"name\": \"title\", \"type\": \"string\", \"minLength\": 5, \"maxLength\": 2},"
        "  {\"name\": \"pages\", \"type\": \"integer16\", \"minValue\": 9, \"maxValue\": 1}]}]}";
    amber_model *refused = NULL;
    FAILS(amber_model_from_json(&refused, bad, sizeof bad - 1, NULL), AMBER_E_INVALID_MODEL, "Book.title");
    CHECK(amber_last_error_problem_count() == 2);
    const amber_problem *model_problem = amber_last_error_problem(1);
    CHECK(model_problem != NULL && strcmp(model_problem->place, "Book.pages") == 0 && model_problem->rule[0] == 0 &&
          model_problem->object_uri[0] == 0);
    amber_clear_error();
    CHECK(amber_last_error_problem_count() == 0);

    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "roundtrip_test.amber";
    remove(path);
    test_round_trip(path);
    test_builder();
    test_batches_and_introspection();
    test_save_problems();
    return report();
}
