/* Several processes on one store file through the C API: they create the
 * same new store at once (all succeed, with one identity), then each saves
 * many times while the others do (a save that meets another writer waits
 * for it: no AMBER_E_BUSY under the timeout, no lost row or update). Then
 * they all increment one counter (every conflict reported under
 * AMBER_MERGE_ERROR, retried after a refresh: no increment lost) and each
 * set their own key of one row (AMBER_MERGE_OBJECT_WINS: no save fails, no
 * key lost). Also amber_store_options and merge policy misuse.
 *
 * Each writer saves AMBER_STRESS_SAVES times (default 1000). */
#define _POSIX_C_SOURCE 200809L
#include <amber.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

enum { WRITERS = 3 };
static int64_t saves = 1000;

static amber_model *model;
static amber_entity *counter_entity, *entry_entity;
static amber_attribute *name_attribute, *value_attribute, *writer_attribute;
/* Counter.k0 … k2: one key per writer. */
static amber_attribute *own_attributes[WRITERS];

static void build_model(void) {
    amber_model_builder *builder = NULL;
    OK(amber_model_builder_new(&builder));
    OK(amber_model_builder_add_entity(builder, "Counter"));
    add_attribute(builder, "Counter", "name", AMBER_TYPE_STRING);
    add_attribute(builder, "Counter", "value", AMBER_TYPE_INTEGER64);
    add_attribute(builder, "Counter", "k0", AMBER_TYPE_INTEGER64);
    add_attribute(builder, "Counter", "k1", AMBER_TYPE_INTEGER64);
    add_attribute(builder, "Counter", "k2", AMBER_TYPE_INTEGER64);
    OK(amber_model_builder_add_entity(builder, "Entry"));
    add_attribute(builder, "Entry", "writer", AMBER_TYPE_STRING);
    OK(amber_model_builder_bind(&model, builder, NULL));
    OK(amber_model_builder_free(builder));
    OK(amber_model_entity(&counter_entity, model, "Counter"));
    OK(amber_model_entity(&entry_entity, model, "Entry"));
    OK(amber_entity_attribute(&name_attribute, counter_entity, "name"));
    OK(amber_entity_attribute(&value_attribute, counter_entity, "value"));
    OK(amber_entity_attribute(&writer_attribute, entry_entity, "writer"));
    for (int i = 0; i < WRITERS; i++) {
        char key[4];
        snprintf(key, sizeof key, "k%d", i);
        OK(amber_entity_attribute(&own_attributes[i], counter_entity, key));
    }
}

/* One writer process: opens (perhaps creating) the store as the others do,
 * then saves `saves` times. Exits 0 only if every call succeeded. */
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
    for (int64_t step = 1; step <= saves; step++) {
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

/* Runs `body(path, i)` in WRITERS child processes started together; checks each exits 0. */
static void in_processes(const char *path, int (*body)(const char *, int)) {
    int go[2];
    CHECK(pipe(go) == 0);
    pid_t children[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        children[i] = fork();
        if (children[i] == 0) {
            /* Wait for the start signal so the processes start together. */
            char byte;
            close(go[1]);
            if (read(go[0], &byte, 1) != 0) _exit(2);
            _exit(body(path, i));
        }
    }
    close(go[0]);
    close(go[1]); /* every child's read returns at once */
    for (int i = 0; i < WRITERS; i++) {
        int status = 0;
        CHECK(waitpid(children[i], &status, 0) == children[i]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
}

static void writers_share_a_new_file(const char *path) {
    unlink(path);
    in_processes(path, writer);

    amber_store *store = NULL;
    amber_context *context = NULL;
    OK(amber_store_open(&store, path, model));
    OK(amber_context_new(&context, store));
    int64_t count = -1;
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Entry";
    OK(amber_context_count(&count, context, &request));
    CHECK(count == WRITERS * saves);
    amber_object **counters = NULL;
    size_t found = 0;
    request.entity = "Counter";
    OK(amber_context_fetch(&counters, &found, context, &request));
    CHECK(found == WRITERS);
    for (size_t i = 0; i < found; i++) {
        amber_value value;
        OK(amber_object_get(&value, counters[i], value_attribute));
        CHECK(value.type == AMBER_VALUE_INT && value.v.integer == saves);
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

/* Opens the store at `path` (a long busy timeout: the writers queue for the
 * lock) with a context holding the counter named `name`. 0 on success. */
static int open_counter(amber_store **store, amber_context **context, amber_object **counter, const char *path, const char *name) {
    amber_store_options options = AMBER_STORE_OPTIONS_INIT;
    options.busy_timeout_ms = 60000;
    char predicate[64];
    snprintf(predicate, sizeof predicate, "name == '%s'", name);
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Counter";
    request.predicate = predicate;
    amber_object **found = NULL;
    size_t count = 0;
    if (amber_store_open_with_options(store, path, model, &options) != AMBER_OK) return 1;
    if (amber_context_new(context, *store) != AMBER_OK) return 1;
    if (amber_context_fetch(&found, &count, *context, &request) != AMBER_OK || count != 1) return 1;
    *counter = found[0];
    amber_free(found);
    return 0;
}

/* Adds one to the shared counter `saves` times. A save that meets another
 * process's must fail with the conflict named and both values listed; the
 * counter is then read again and the increment retried. */
static int incrementer(const char *path, int index) {
    amber_store *store = NULL;
    amber_context *context = NULL;
    amber_object *counter = NULL;
    int64_t conflicts = 0;
    if (open_counter(&store, &context, &counter, path, "total") != 0) goto fail;
    for (int64_t step = 0; step < saves; step++) {
        for (;;) {
            amber_value value;
            if (amber_object_get(&value, counter, value_attribute) != AMBER_OK || value.type != AMBER_VALUE_INT) goto fail;
            value.v.integer += 1;
            if (amber_object_set(counter, value_attribute, &value) != AMBER_OK) goto fail;
            amber_status status = amber_context_save(context);
            if (status == AMBER_OK) break;
            const char *message = amber_last_error_message();
            if (status != AMBER_E_SAVE_FAILED || !strstr(message, "was changed in the store") || !strstr(message, "value: read "))
                goto fail;
            conflicts++;
            if (amber_context_refresh(context, counter, 0) != AMBER_OK) goto fail;
        }
    }
    printf("  incrementer %d: %lld saves, %lld conflicts reported and retried\n", index, (long long)saves, (long long)conflicts);
    fflush(stdout);
    amber_context_free(context);
    amber_store_close(store);
    return 0;
fail:
    fprintf(stderr, "incrementer %d: %d %s\n", index, amber_last_error_code(), amber_last_error_message());
    return 1;
}

/* Sets its own key of the shared row `saves` times under AMBER_MERGE_OBJECT_WINS:
 * every save succeeds, whatever the others saved meanwhile. */
static int own_key_writer(const char *path, int index) {
    amber_store *store = NULL;
    amber_context *context = NULL;
    amber_object *counter = NULL;
    if (open_counter(&store, &context, &counter, path, "keys") != 0) goto fail;
    if (amber_context_set_merge_policy(context, AMBER_MERGE_OBJECT_WINS) != AMBER_OK) goto fail;
    for (int64_t step = 1; step <= saves; step++) {
        amber_value value = {.type = AMBER_VALUE_INT};
        value.v.integer = step;
        if (amber_object_set(counter, own_attributes[index], &value) != AMBER_OK) goto fail;
        if (amber_context_save(context) != AMBER_OK) goto fail;
    }
    amber_context_free(context);
    amber_store_close(store);
    return 0;
fail:
    fprintf(stderr, "own-key writer %d: %d %s\n", index, amber_last_error_code(), amber_last_error_message());
    return 1;
}

static void contended_saves_lose_nothing(const char *path) {
    amber_store *store = NULL;
    amber_context *context = NULL;
    amber_object *total = NULL, *keys = NULL;
    OK(amber_store_open(&store, path, model));
    OK(amber_context_new(&context, store));
    amber_value zero = {.type = AMBER_VALUE_INT};
    OK(amber_context_insert(&total, context, counter_entity));
    amber_value name = text("total");
    OK(amber_object_set(total, name_attribute, &name));
    OK(amber_object_set(total, value_attribute, &zero));
    OK(amber_context_insert(&keys, context, counter_entity));
    name = text("keys");
    OK(amber_object_set(keys, name_attribute, &name));
    OK(amber_context_save(context));

    in_processes(path, incrementer);
    in_processes(path, own_key_writer);

    OK(amber_context_refresh(context, total, 0));
    OK(amber_context_refresh(context, keys, 0));
    amber_value value;
    OK(amber_object_get(&value, total, value_attribute));
    CHECK(value.type == AMBER_VALUE_INT && value.v.integer == WRITERS * saves);
    for (int i = 0; i < WRITERS; i++) {
        OK(amber_object_get(&value, keys, own_attributes[i]));
        CHECK(value.type == AMBER_VALUE_INT && value.v.integer == saves);
    }

    /* The policy is one of four, and reads back. */
    int32_t policy = -1;
    OK(amber_context_merge_policy(&policy, context));
    CHECK(policy == AMBER_MERGE_ERROR);
    OK(amber_context_set_merge_policy(context, AMBER_MERGE_OVERWRITE));
    OK(amber_context_merge_policy(&policy, context));
    CHECK(policy == AMBER_MERGE_OVERWRITE);
    FAILS(amber_context_set_merge_policy(context, 4), AMBER_E_INVALID_VALUE, "policy is 4");
    FAILS(amber_context_merge_policy(NULL, context), AMBER_E_NULL_ARGUMENT, "out is NULL");
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
    const char *stress = getenv("AMBER_STRESS_SAVES");
    if (stress && atoll(stress) > 0) saves = atoll(stress);
    build_model();
    writers_share_a_new_file(path);
    merges_see_another_process(path);
    contended_saves_lose_nothing(path);
    options_misuse(path);
    OK(amber_model_free(model));
    return report();
}
