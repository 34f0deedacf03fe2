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
#include <sys/wait.h>
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
    for (int by_url = 0; by_url < 2; by_url++) {
        amber_store *store = NULL;
        if (by_url) OK(amber_store_open_url(&store, "memory:", model, &options));
        else OK(amber_store_open_with_options(&store, NULL, model, &options));
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
}

/* What the observer and the live query of merges_another_process saw. */
static struct {
    int reports, inserted, deleted, refreshed, body_keys, number_keys, other_keys;
} seen;
static struct {
    int inserts, deletes, moves, updates;
} followed;

static int32_t observe(amber_changes *changes, void *userdata) {
    (void)userdata;
    int32_t event = 0;
    size_t count = 0;
    OK(amber_changes_event(&event, changes));
    CHECK(event == AMBER_EVENT_MERGED);
    seen.reports++;
    OK(amber_changes_count(&count, changes, AMBER_CHANGES_INSERTED));
    seen.inserted += (int)count;
    OK(amber_changes_count(&count, changes, AMBER_CHANGES_DELETED));
    seen.deleted += (int)count;
    OK(amber_changes_count(&count, changes, AMBER_CHANGES_REFRESHED));
    seen.refreshed += (int)count;
    for (size_t i = 0; i < count; i++) {
        const char *const *keys = NULL;
        size_t key_count = 0;
        OK(amber_changes_keys(&keys, &key_count, changes, AMBER_CHANGES_REFRESHED, i));
        for (size_t k = 0; k < key_count; k++) {
            if (strcmp(keys[k], "body") == 0) seen.body_keys++;
            else if (strcmp(keys[k], "number") == 0) seen.number_keys++;
            else seen.other_keys++;
        }
    }
    return 0;
}

static int32_t follow(amber_live_query *query, const amber_index_change *changes, size_t count, void *userdata) {
    (void)query;
    (void)userdata;
    for (size_t i = 0; i < count; i++) {
        switch (changes[i].kind) {
        case AMBER_INDEX_INSERT: followed.inserts++; break;
        case AMBER_INDEX_DELETE: followed.deletes++; break;
        case AMBER_INDEX_MOVE: followed.moves++; break;
        case AMBER_INDEX_UPDATE: followed.updates++; break;
        default: break;
        }
    }
    return 0;
}

/* The one Note whose number is `number`, in `context`. */
static amber_object *note_numbered(amber_context *context, int64_t number) {
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Note";
    request.predicate = "number == %@";
    amber_value argument = integer(number);
    request.arguments = &argument;
    request.argument_count = 1;
    amber_object **objects = NULL;
    size_t count = 0;
    OK(amber_context_fetch(&objects, &count, context, &request));
    amber_object *found = count == 1 ? objects[0] : NULL;
    amber_free(objects);
    return found;
}

/* The other process: two new notes, note 0's body changed, note 1 deleted,
 * and notes 15 to 19 renumbered by one batch update; each its own save. */
static int write_elsewhere(const char *path) {
    amber_store *store = NULL;
    amber_context *context = NULL;
    if (amber_store_open_url(&store, path, model, NULL) != AMBER_OK || amber_context_new(&context, store) != AMBER_OK) return 1;
    for (int64_t number = 100; number < 102; number++) {
        amber_object *note = NULL;
        amber_value value = integer(number), body = text("new");
        if (amber_context_insert(&note, context, note_entity) != AMBER_OK || amber_object_set(note, number_attribute, &value) != AMBER_OK
            || amber_object_set(note, body_attribute, &body) != AMBER_OK) return 2;
    }
    if (amber_context_save(context) != AMBER_OK) return 3;
    amber_object *first = note_numbered(context, 0), *second = note_numbered(context, 1);
    amber_value changed = text("changed");
    if (!first || !second || amber_object_set(first, body_attribute, &changed) != AMBER_OK || amber_context_save(context) != AMBER_OK) return 4;
    if (amber_context_delete(context, second) != AMBER_OK || amber_context_save(context) != AMBER_OK) return 5;
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Note";
    request.predicate = "number >= 15 AND number < 100";
    amber_batch_assignment renumber = {number_attribute, AMBER_BATCH_ADD, integer(1000), NULL};
    size_t renumbered = 0;
    if (amber_context_batch_update(NULL, &renumbered, context, &request, &renumber, 1) != AMBER_OK || renumbered != 5) return 6;
    amber_context_free(context);
    amber_store_close(store);
    return 0;
}

static void merges_another_process(const char *path) {
    amber_store *store = NULL;
    amber_context *context = NULL;
    OK(amber_store_open_url(&store, path, model, NULL));
    OK(amber_context_new(&context, store));
    for (int64_t number = 0; number < 20; number++) {
        amber_object *note = NULL;
        amber_value value = integer(number), body = text("note");
        OK(amber_context_insert(&note, context, note_entity));
        OK(amber_object_set(note, number_attribute, &value));
        OK(amber_object_set(note, body_attribute, &body));
    }
    OK(amber_context_save(context));
    /* The other process starts first and waits, so it shares none of the observer and live query made below. */
    int go[2];
    CHECK(pipe(go) == 0);
    pid_t child = fork();
    if (child == 0) {
        char byte;
        close(go[1]);
        if (read(go[0], &byte, 1) != 0) _exit(9);
        _exit(write_elsewhere(path));
    }
    close(go[0]);
    amber_fetch_request all = AMBER_FETCH_REQUEST_INIT;
    all.entity = "Note";
    amber_object **held = NULL;
    size_t held_count = 0;
    OK(amber_context_fetch(&held, &held_count, context, &all));
    CHECK(held_count == 20);
    uint64_t token = 0;
    OK(amber_context_add_observer(&token, context, observe, NULL, NULL));
    amber_fetch_request upper = AMBER_FETCH_REQUEST_INIT;
    upper.entity = "Note";
    upper.predicate = "number >= 10";
    amber_sort by_number = {"number", 0, 0};
    upper.sort = &by_number;
    upper.sort_count = 1;
    amber_live_query *query = NULL;
    OK(amber_live_query_new(&query, context, &upper, NULL, follow, NULL, NULL));

    close(go[1]); /* the child's read returns: it writes now */
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);

    OK(amber_context_merge_saved_changes(context));
    /* Exactly what the other process did: its two new notes, one deletion,
     * note 0 refreshed with its body, notes 15-19 with their numbers, nothing else. */
    CHECK(seen.reports == 1);
    CHECK(seen.inserted == 2 && seen.deleted == 1 && seen.refreshed == 6);
    CHECK(seen.body_keys == 1 && seen.number_keys == 5 && seen.other_keys == 0);
    /* The live query: the two new notes joined, the renumbered five moved to the end, nothing left. */
    CHECK(followed.inserts == 2 && followed.deletes == 0 && followed.moves + followed.updates == 5);
    size_t count = 0;
    OK(amber_live_query_count(&count, NULL, query));
    CHECK(count == 12);
    amber_free(held);
    OK(amber_live_query_free(query));
    OK(amber_context_free(context));
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
    unlink(path);
    merges_another_process(path);
    OK(amber_model_free(model));
    unlink(path);
    return report();
}
