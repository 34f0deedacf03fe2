/* Stores by URL and the history through the C API: amber_store_open_url
 * (a path, a file: URL, memory:, and text naming no store, which creates
 * nothing), amber_store_history_token, amber_store_history (the JSON of each
 * save: kinds, keys, changed keys, context name and author),
 * amber_store_purge_history, tokens of other stores, malformed and purged
 * tokens, and a store opened with history off. */
#define _POSIX_C_SOURCE 200809L
#include <amber.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static amber_model *model;
static amber_entity *note_entity;
static amber_attribute *body_attribute, *number_attribute;

static void build_model(void) {
    amber_model_builder *builder = NULL;
    OK(amber_model_builder_new(&builder));
    OK(amber_model_builder_add_entity(builder, "Note"));
    add_attribute(builder, "Note", "body", AMBER_TYPE_STRING);
    add_attribute(builder, "Note", "number", AMBER_TYPE_INTEGER64);
    OK(amber_model_builder_bind(&model, builder, NULL));
    OK(amber_model_builder_free(builder));
    OK(amber_model_entity(&note_entity, model, "Note"));
    OK(amber_entity_attribute(&body_attribute, note_entity, "body"));
    OK(amber_entity_attribute(&number_attribute, note_entity, "number"));
}

/* How many times `needle` occurs in `text`. */
static int occurrences(const char *text, const char *needle) {
    int count = 0;
    for (const char *at = strstr(text, needle); at != NULL; at = strstr(at + 1, needle)) count++;
    return count;
}

/* Saves three notes, then changes one's number and deletes another, through a named context. */
static void save_some(amber_store *store) {
    amber_context *context = NULL;
    OK(amber_context_new(&context, store));
    OK(amber_context_set_names(context, "importer", "alice"));
    amber_object *notes[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) {
        OK(amber_context_insert(&notes[i], context, note_entity));
        amber_value body = text("note"), number = integer(i);
        OK(amber_object_set(notes[i], body_attribute, &body));
        OK(amber_object_set(notes[i], number_attribute, &number));
    }
    OK(amber_context_save(context));
    amber_value changed = integer(42);
    OK(amber_object_set(notes[0], number_attribute, &changed));
    OK(amber_context_delete(context, notes[1]));
    OK(amber_context_save(context));
    OK(amber_context_free(context));
}

static void opens_by_url(const char *path) {
    char url[4200];
    snprintf(url, sizeof url, "file://%s", path);
    amber_store *store = NULL;
    OK(amber_store_open_url(&store, url, model, NULL));
    CHECK(access(path, F_OK) == 0);
    OK(amber_store_close(store));
    OK(amber_store_open_url(&store, path, model, NULL));
    OK(amber_store_close(store));
    OK(amber_store_open_url(&store, "memory:", model, NULL));
    OK(amber_store_close(store));

    char missing[4200];
    snprintf(missing, sizeof missing, "nosuch://%s.never", path);
    FAILS(amber_store_open_url(&store, missing, model, NULL), AMBER_E_INVALID_URL, "scheme nosuch");
    CHECK(strcmp(amber_last_error_origin(), "scheme nosuch") == 0);
    snprintf(missing, sizeof missing, "%s.never", path);
    CHECK(access(missing, F_OK) != 0);
    FAILS(amber_store_open_url(&store, "memory:shared", model, NULL), AMBER_E_INVALID_URL, "nothing may follow memory:");
    FAILS(amber_store_open_url(&store, "file://example.com/x.amber", model, NULL), AMBER_E_INVALID_URL, "host example.com");
    FAILS(amber_store_open_url(&store, NULL, model, NULL), AMBER_E_NULL_ARGUMENT, "url");
}

static void reads_the_history(const char *path) {
    amber_store *store = NULL, *other = NULL;
    OK(amber_store_open_url(&store, path, model, NULL));
    char *start = NULL;
    OK(amber_store_history_token(&start, store));
    save_some(store);

    char *json = NULL;
    size_t count = 0;
    OK(amber_store_history(&json, &count, store, start));
    CHECK(count == 2);
    CHECK(occurrences(json, "\"kind\":\"inserted\"") == 3);
    CHECK(occurrences(json, "\"kind\":\"updated\"") == 1);
    CHECK(occurrences(json, "\"kind\":\"deleted\"") == 1);
    CHECK(occurrences(json, "\"keys\":[\"number\"]") == 1);
    CHECK(occurrences(json, "\"author\":\"alice\"") == 2);
    CHECK(occurrences(json, "\"context\":\"importer\"") == 2);
    CHECK(occurrences(json, "\"recorded\":true") == 2);
    amber_free(json);

    /* After the last token: nothing. */
    char *last = NULL;
    OK(amber_store_history_token(&last, store));
    OK(amber_store_history(&json, &count, store, last));
    CHECK(count == 0 && strcmp(json, "[]") == 0);
    amber_free(json);

    /* Purged: reading from before the purge is refused, from the purge on is not. */
    OK(amber_store_purge_history(store, last));
    FAILS(amber_store_history(&json, &count, store, start), AMBER_E_HISTORY, "purged");
    OK(amber_store_history(&json, &count, store, last));
    amber_free(json);

    /* Tokens of another store, malformed tokens. */
    OK(amber_store_open_url(&other, "memory:", model, NULL));
    char *foreign = NULL;
    OK(amber_store_history_token(&foreign, other));
    FAILS(amber_store_history(&json, &count, store, foreign), AMBER_E_HISTORY, "belongs to the store");
    FAILS(amber_store_purge_history(store, foreign), AMBER_E_HISTORY, "belongs to the store");
    FAILS(amber_store_history(&json, &count, store, "12"), AMBER_E_INVALID_VALUE, "UUID/sequence");
    FAILS(amber_store_purge_history(store, NULL), AMBER_E_NULL_ARGUMENT, "through_token");
    amber_free(foreign);
    amber_free(start);
    amber_free(last);
    OK(amber_store_close(other));
    OK(amber_store_close(store));
}

static void history_off(void) {
    amber_store_options options = AMBER_STORE_OPTIONS_INIT;
    CHECK(options.history == 1);
    options.history = 0;
    amber_store *store = NULL;
    OK(amber_store_open_url(&store, "memory:", model, &options));
    save_some(store);
    char *json = NULL;
    size_t count = 0;
    OK(amber_store_history(&json, &count, store, NULL));
    CHECK(count == 2);
    CHECK(occurrences(json, "\"recorded\":false") == 2);
    CHECK(occurrences(json, "\"kind\"") == 0);
    amber_free(json);
    OK(amber_store_close(store));
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "history_test.amber";
    unlink(path);
    build_model();
    opens_by_url(path);
    unlink(path);
    reads_the_history(path);
    history_off();
    OK(amber_model_free(model));
    unlink(path);
    return report();
}
