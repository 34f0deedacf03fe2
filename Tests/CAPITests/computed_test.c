/* Computed attributes through the C API: a C function registered with
 * userdata computes a book's label from its title and pages; it runs on
 * the first read only, again after a source changes (after every one of 300
 * random sets the label equals what a plain C rendering of the current
 * sources gives, and the call count is exactly the number of reads after a
 * change), its failures and wrong results are errors naming the attribute and
 * the function, sets are refused, and its userdata is freed exactly once. */
#define _POSIX_C_SOURCE 200809L /* rand_r */
#include <amber.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef struct {
    int calls;
    int freed;
    char buffer[128];
} counter;

/* "title (N pages)", or the title alone without pages; nil without a title. Fails for the title "fail". */
static int32_t label(amber_value *output, const amber_value *inputs, size_t count, void *userdata) {
    counter *state = userdata;
    state->calls++;
    if (count != 2) return -1;
    if (inputs[0].type != AMBER_VALUE_STRING) {
        output->type = AMBER_VALUE_NULL;
        return AMBER_OK;
    }
    const char *title = inputs[0].v.text.data;
    size_t length = inputs[0].v.text.length;
    if (length == 4 && memcmp(title, "fail", 4) == 0) {
        amber_transformer_error("no label for fail");
        return -1;
    }
    if (length == 5 && memcmp(title, "wrong", 5) == 0) {
        *output = integer(5);
        return AMBER_OK;
    }
    int written = inputs[1].type == AMBER_VALUE_INT
        ? snprintf(state->buffer, sizeof state->buffer, "%.*s (%lld pages)", (int)length, title, (long long)inputs[1].v.integer)
        : snprintf(state->buffer, sizeof state->buffer, "%.*s", (int)length, title);
    output->type = AMBER_VALUE_STRING;
    output->v.text.data = state->buffer;
    output->v.text.length = (size_t)written;
    return AMBER_OK;
}

static void free_counter(void *userdata) { ((counter *)userdata)->freed++; }

static void add(amber_model_builder *builder, const char *name, int32_t type, const char *function, const char *const *sources,
                size_t count) {
    amber_attribute_spec spec = AMBER_ATTRIBUTE_SPEC_INIT;
    spec.name = name;
    spec.type = type;
    spec.computed_by = function;
    spec.sources = sources;
    spec.source_count = count;
    OK(amber_model_builder_add_attribute(builder, "Book", &spec));
}

static amber_status build(amber_model **out, amber_registry *registry, const char *function) {
    static const char *const sources[] = {"title", "pages"};
    amber_model_builder *builder = NULL;
    OK(amber_model_builder_new(&builder));
    OK(amber_model_builder_add_entity(builder, "Book"));
    add(builder, "title", AMBER_TYPE_STRING, NULL, NULL, 0);
    add(builder, "pages", AMBER_TYPE_INTEGER64, NULL, NULL, 0);
    add(builder, "label", AMBER_TYPE_STRING, function, sources, 2);
    amber_status status = amber_model_builder_bind(out, builder, registry);
    OK(amber_model_builder_free(builder));
    return status;
}

static int label_is(amber_object *book, amber_attribute *attribute, const char *expected) {
    amber_value value;
    if (amber_object_get(&value, book, attribute) != AMBER_OK) return 0;
    int same = expected == NULL ? value.type == AMBER_VALUE_NULL
        : value.type == AMBER_VALUE_STRING && value.v.text.length == strlen(expected) && memcmp(value.v.text.data, expected, value.v.text.length) == 0;
    amber_value_release(&value);
    return same;
}

int main(void) {
    static counter state;
    amber_registry *registry = NULL;
    OK(amber_registry_new(&registry));
    OK(amber_registry_register_function(registry, "label", label, NULL, &state, free_counter));
    FAILS(amber_registry_register_function(registry, "label", label, NULL, &state, free_counter), AMBER_E_DUPLICATE, "function \"label\"");
    CHECK(state.freed == 1); /* the refused registration's userdata, at once */
    FAILS(amber_registry_register_function(registry, "label2", NULL, NULL, &state, free_counter), AMBER_E_NULL_ARGUMENT, "function");
    CHECK(state.freed == 2);
    state.freed = 0;

    amber_model *model = NULL;
    FAILS(build(&model, registry, "lable"), AMBER_E_INVALID_MODEL, "Book.label: function \"lable\": no such function or transformer");
    CHECK(strstr(amber_last_error_message(), "did you mean label?") != NULL);
    OK(build(&model, registry, "label"));
    amber_entity *book_entity = NULL;
    amber_attribute *title = NULL, *pages = NULL, *label_attribute = NULL;
    OK(amber_model_entity(&book_entity, model, "Book"));
    OK(amber_entity_attribute(&title, book_entity, "title"));
    OK(amber_entity_attribute(&pages, book_entity, "pages"));
    OK(amber_entity_attribute(&label_attribute, book_entity, "label"));
    const char *function = NULL;
    const char *const *sources = NULL;
    size_t source_count = 0;
    OK(amber_attribute_computation(&function, &sources, &source_count, label_attribute));
    CHECK(function && strcmp(function, "label") == 0 && source_count == 2 && strcmp(sources[1], "pages") == 0);
    OK(amber_attribute_computation(&function, NULL, &source_count, title));
    CHECK(function == NULL && source_count == 0);

    amber_store *store = NULL;
    amber_context *context = NULL;
    OK(amber_store_open(&store, NULL, model));
    OK(amber_context_new(&context, store));
    amber_object *book = NULL;
    OK(amber_context_insert(&book, context, book_entity));
    amber_value value = text("Niebla");
    FAILS(amber_object_set(book, label_attribute, &value), AMBER_E_INVALID_VALUE, "Book.label: expected no value: it is computed by label");

    /* Random sets of the sources; a read after each, compared with the same rendering done here. */
    static const char *const titles[] = {"Niebla", "Ficciones", "Crème brûlée", ""};
    char expected[128];
    const char *current_title = NULL;
    long long current_pages = -1;
    int changes = 0;
    unsigned seed = 15;
    CHECK(label_is(book, label_attribute, NULL) && state.calls == 1);
    for (int step = 0; step < 300; step++) {
        int choice = (int)(rand_r(&seed) % 3);
        if (choice == 0) {
            current_title = titles[rand_r(&seed) % 4];
            value = text(current_title);
            OK(amber_object_set(book, title, &value));
            changes++;
        } else if (choice == 1) {
            current_pages = rand_r(&seed) % 1000;
            value = integer(current_pages);
            OK(amber_object_set(book, pages, &value));
            changes++;
        }
        int calls_before = state.calls;
        if (current_title == NULL) {
            CHECK(label_is(book, label_attribute, NULL));
        } else {
            if (current_pages >= 0) snprintf(expected, sizeof expected, "%s (%lld pages)", current_title, current_pages);
            else snprintf(expected, sizeof expected, "%s", current_title);
            CHECK(label_is(book, label_attribute, expected));
        }
        CHECK(label_is(book, label_attribute, current_title == NULL ? NULL : expected)); /* cached */
        CHECK(state.calls - calls_before == (choice < 2 ? 1 : 0));
    }
    CHECK(state.calls == 1 + changes);

    value = text("fail");
    OK(amber_object_set(book, title, &value));
    amber_value got;
    FAILS(amber_object_get(&got, book, label_attribute), AMBER_E_TRANSFORMER, "Book.label: function \"label\" (C API) failed");
    CHECK(strstr(amber_last_error_message(), "no label for fail") != NULL);
    CHECK(strcmp(amber_last_error_origin(), "label") == 0);
    value = text("wrong");
    OK(amber_object_set(book, title, &value));
    FAILS(amber_object_get(&got, book, label_attribute), AMBER_E_TRANSFORMER, "returned Integer 5, but the attribute holds String");
    OK(amber_context_save(context));

    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));
    CHECK(state.freed == 0); /* the registry still has it */
    OK(amber_registry_free(registry));
    CHECK(state.freed == 1);
    return report();
}
