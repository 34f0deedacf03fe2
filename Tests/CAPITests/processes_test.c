/* Several processes on one store file through the C API: they create the
 * same new store at once (all succeed, with one identity), then each saves
 * many times while the others do (a save that meets another writer waits
 * for it: no AMBER_E_BUSY under the timeout, no lost row or update). Also
 * amber_store_options misuse. */
#define _POSIX_C_SOURCE 200809L
#include <amber.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

enum { WRITERS = 3, SAVES = 60 };

static amber_model *model;
static amber_entity *counter_entity, *entry_entity;
static amber_attribute *name_attribute, *value_attribute, *writer_attribute;

static void add(amber_model_builder *builder, const char *entity, const char *name, int32_t type) {
    amber_attribute_spec spec = AMBER_ATTRIBUTE_SPEC_INIT;
    spec.name = name;
    spec.type = type;
    OK(amber_model_builder_add_attribute(builder, entity, &spec));
}

static void build_model(void) {
    amber_model_builder *builder = NULL;
    OK(amber_model_builder_new(&builder));
    OK(amber_model_builder_add_entity(builder, "Counter"));
    add(builder, "Counter", "name", AMBER_TYPE_STRING);
    add(builder, "Counter", "value", AMBER_TYPE_INTEGER64);
    OK(amber_model_builder_add_entity(builder, "Entry"));
    add(builder, "Entry", "writer", AMBER_TYPE_STRING);
    OK(amber_model_builder_bind(&model, builder, NULL));
    OK(amber_model_builder_free(builder));
    OK(amber_model_entity(&counter_entity, model, "Counter"));
    OK(amber_model_entity(&entry_entity, model, "Entry"));
    OK(amber_entity_attribute(&name_attribute, counter_entity, "name"));
    OK(amber_entity_attribute(&value_attribute, counter_entity, "value"));
    OK(amber_entity_attribute(&writer_attribute, entry_entity, "writer"));
}

static amber_value text(const char *s) {
    amber_value value = {.type = AMBER_VALUE_STRING};
    value.v.text.data = s;
    value.v.text.length = strlen(s);
    return value;
}

/* One writer process: opens (perhaps creating) the store as the others do,
 * then saves SAVES times. Exits 0 only if every call succeeded. */
static int writer(const char *path, int index) {
    amber_store_options options = AMBER_STORE_OPTIONS_INIT;
    options.busy_timeout_ms = 20000;
    amber_store *store = NULL;
    amber_context *context = NULL;
    amber_object *counter = NULL, *entry = NULL;
    char name[16];
    snprintf(name, sizeof name, "w%d", index);
    amber_value label = text(name);
    const char *step_name = "open";
    if (amber_store_open_with_options(&store, path, model, &options) != AMBER_OK) goto fail;
    step_name = "save";
    if (amber_context_new(&context, store) != AMBER_OK) goto fail;
    if (amber_context_insert(&counter, context, counter_entity) != AMBER_OK) goto fail;
    if (amber_object_set(counter, name_attribute, &label) != AMBER_OK) goto fail;
    for (int64_t step = 1; step <= SAVES; step++) {
        amber_value value = {.type = AMBER_VALUE_INT};
        value.v.integer = step;
        if (amber_object_set(counter, value_attribute, &value) != AMBER_OK) goto fail;
        if (amber_context_insert(&entry, context, entry_entity) != AMBER_OK) goto fail;
        if (amber_object_set(entry, writer_attribute, &label) != AMBER_OK) goto fail;
        if (amber_context_save(context) != AMBER_OK) goto fail;
    }
    amber_context_free(context);
    amber_store_close(store);
    return 0;
fail:
    fprintf(stderr, "writer %d, %s: %d %s\n", index, step_name, amber_last_error_code(), amber_last_error_message());
    return 1;
}

static void writers_share_a_new_file(const char *path) {
    unlink(path);
    int go[2];
    CHECK(pipe(go) == 0);
    pid_t children[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        children[i] = fork();
        if (children[i] == 0) {
            /* Wait for the start signal so the processes create the store together. */
            char byte;
            close(go[1]);
            if (read(go[0], &byte, 1) != 0) _exit(2);
            _exit(writer(path, i));
        }
    }
    close(go[0]);
    close(go[1]); /* every child's read returns at once */
    for (int i = 0; i < WRITERS; i++) {
        int status = 0;
        CHECK(waitpid(children[i], &status, 0) == children[i]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }

    amber_store *store = NULL;
    amber_context *context = NULL;
    OK(amber_store_open(&store, path, model));
    OK(amber_context_new(&context, store));
    int64_t count = -1;
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Entry";
    OK(amber_context_count(&count, context, &request));
    CHECK(count == WRITERS * SAVES);
    amber_object **counters = NULL;
    size_t found = 0;
    request.entity = "Counter";
    OK(amber_context_fetch(&counters, &found, context, &request));
    CHECK(found == WRITERS);
    for (size_t i = 0; i < found; i++) {
        amber_value value;
        OK(amber_object_get(&value, counters[i], value_attribute));
        CHECK(value.type == AMBER_VALUE_INT && value.v.integer == SAVES);
    }
    amber_free(counters);
    OK(amber_context_free(context));
    OK(amber_store_close(store));
}

/* Another process's save reaches a context here through a merge: the value
 * set here stays, the one saved there arrives. */
static void merges_see_another_process(const char *path) {
    amber_store *store = NULL;
    amber_context *context = NULL;
    amber_object *counter = NULL;
    OK(amber_store_open(&store, path, model));
    OK(amber_context_new(&context, store));
    OK(amber_context_insert(&counter, context, counter_entity));
    amber_value name = text("shared");
    OK(amber_object_set(counter, name_attribute, &name));
    OK(amber_context_save(context));
    amber_value here = text("mine");
    OK(amber_object_set(counter, name_attribute, &here));

    pid_t child = fork();
    if (child == 0) {
        amber_store *theirs = NULL;
        amber_context *other = NULL;
        amber_object **found = NULL;
        size_t count = 0;
        amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
        request.entity = "Counter";
        request.predicate = "name == 'shared'";
        amber_value value = {.type = AMBER_VALUE_INT};
        value.v.integer = 77;
        int ok = amber_store_open(&theirs, path, model) == AMBER_OK && amber_context_new(&other, theirs) == AMBER_OK &&
                 amber_context_fetch(&found, &count, other, &request) == AMBER_OK && count == 1 &&
                 amber_object_set(found[0], value_attribute, &value) == AMBER_OK && amber_context_save(other) == AMBER_OK;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    OK(amber_context_merge_saved_changes(context));
    amber_value value;
    OK(amber_object_get(&value, counter, value_attribute));
    CHECK(value.type == AMBER_VALUE_INT && value.v.integer == 77);
    OK(amber_object_get(&value, counter, name_attribute));
    CHECK(value.type == AMBER_VALUE_STRING && value.v.text.length == 4 && memcmp(value.v.text.data, "mine", 4) == 0);
    amber_value_release(&value);
    OK(amber_context_save(context)); /* the merge took their save as the one to compare with */

    /* refresh without merging drops what was set here; flags are 0 or 1. */
    OK(amber_object_set(counter, name_attribute, &name));
    OK(amber_context_refresh(context, counter, 0));
    OK(amber_object_get(&value, counter, name_attribute));
    CHECK(value.type == AMBER_VALUE_STRING && value.v.text.length == 4 && memcmp(value.v.text.data, "mine", 4) == 0);
    amber_value_release(&value);
    FAILS(amber_context_refresh(context, counter, 2), AMBER_E_INVALID_VALUE, "merge_changes is 2");
    OK(amber_context_set_automatic_merging(context, 1));
    FAILS(amber_context_set_automatic_merging(context, -1), AMBER_E_INVALID_VALUE, "enabled is -1");
    OK(amber_context_free(context));
    OK(amber_store_close(store));
}

static void options_misuse(const char *path) {
    amber_store *store = NULL;
    amber_store_options options = AMBER_STORE_OPTIONS_INIT;
    CHECK(options.size == sizeof options && options.busy_timeout_ms == 5000);
    options.busy_timeout_ms = -1;
    FAILS(amber_store_open_with_options(&store, path, model, &options), AMBER_E_INVALID_VALUE, "options->busy_timeout_ms is -1");
    options.busy_timeout_ms = 0;
    options.size = 3;
    FAILS(amber_store_open_with_options(&store, path, model, &options), AMBER_E_INVALID_VALUE, "AMBER_STORE_OPTIONS_INIT");
    CHECK(store == NULL);
    /* NULL options are the defaults. */
    OK(amber_store_open_with_options(&store, path, model, NULL));
    OK(amber_store_close(store));
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "/tmp/amber-processes-test.amber";
    build_model();
    writers_share_a_new_file(path);
    merges_see_another_process(path);
    options_misuse(path);
    OK(amber_model_free(model));
    return report();
}
