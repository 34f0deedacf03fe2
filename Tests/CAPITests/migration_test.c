/* Migration through the C API: amber_store_migration_plan lists what opening
 * a store with another model does; opening migrates it (values kept, the
 * added attribute's default given, the backup made by default), reporting
 * progress; a callback that returns nonzero cancels and changes nothing;
 * migrate = 0 keeps the old behaviour (AMBER_E_MODEL_MISMATCH); a change that
 * cannot be inferred is AMBER_E_MIGRATION_FAILED naming it; options from a
 * caller compiled before the migration fields get their defaults. */
#define _POSIX_C_SOURCE 200809L
#include <amber.h>

#include <glob.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

enum { BOOKS = 50 };

static const char *v1 = "{\"entities\": [{\"name\": \"Book\", \"attributes\": ["
                        "{\"name\": \"title\", \"type\": \"string\", \"optional\": false},"
                        "{\"name\": \"pages\", \"type\": \"integer16\"}]}]}";
static const char *v2 = "{\"entities\": [{\"name\": \"Book\", \"attributes\": ["
                        "{\"name\": \"title\", \"type\": \"string\", \"optional\": false},"
                        "{\"name\": \"pages\", \"type\": \"integer64\"},"
                        "{\"name\": \"subtitle\", \"type\": \"string\", \"default\": \"none\"}]}]}";
static const char *titles_only = "{\"entities\": [{\"name\": \"Book\", \"attributes\": ["
                                 "{\"name\": \"title\", \"type\": \"string\", \"optional\": false}]}]}";
static const char *refused = "{\"entities\": [{\"name\": \"Book\", \"attributes\": ["
                             "{\"name\": \"title\", \"type\": \"integer64\"}, {\"name\": \"pages\", \"type\": \"integer16\"}]}]}";

static amber_model *model_of(const char *json) {
    amber_model *model = NULL;
    OK(amber_model_from_json(&model, json, strlen(json), NULL));
    return model;
}

static void fill(const char *path) {
    amber_model *model = model_of(v1);
    amber_store *store = NULL;
    amber_context *context = NULL;
    amber_entity *book = NULL;
    OK(amber_store_open(&store, path, model));
    OK(amber_context_new(&context, store));
    OK(amber_model_entity(&book, model, "Book"));
    for (int i = 0; i < BOOKS; i++) {
        amber_object *object = NULL;
        char title[32];
        snprintf(title, sizeof title, "Book %d", i);
        amber_value value = text(title), pages = integer(i);
        OK(amber_context_insert(&object, context, book));
        OK(amber_object_set_named(object, "title", &value));
        OK(amber_object_set_named(object, "pages", &pages));
    }
    OK(amber_context_save(context));
    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));
}

typedef struct {
    int calls;
    int copied;
    int32_t answer;
} progress_log;

static int32_t progress(void *context, const char *step, uint64_t completed, uint64_t total) {
    progress_log *log = context;
    log->calls++;
    if (strcmp(step, "copy Book") == 0 && completed == BOOKS && total == BOOKS) log->copied = 1;
    return log->answer;
}

static int64_t count_where(amber_store *store, const char *predicate, amber_value argument) {
    amber_context *context = NULL;
    OK(amber_context_new(&context, store));
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Book";
    request.predicate = predicate;
    request.arguments = &argument;
    request.argument_count = 1;
    int64_t count = -1;
    OK(amber_context_count(&count, context, &request));
    OK(amber_context_free(context));
    return count;
}

static size_t plan_lines(const char *path, amber_model *model, const char *expected) {
    char *plan = NULL;
    size_t count = 0;
    OK(amber_store_migration_plan(&plan, &count, path, model));
    if (expected) CHECK(plan && strstr(plan, expected) != NULL);
    amber_free(plan);
    return count;
}

int main(int argc, char **argv) {
    const char *base = argc > 1 ? argv[1] : "/tmp/migration_test.amber";
    char path[512], second[512];
    snprintf(path, sizeof path, "%s.a", base);
    snprintf(second, sizeof second, "%s.b", base);
    unlink(path);
    unlink(second);
    fill(path);
    fill(second);
    amber_model *target = model_of(v2);

    // The plan, and nothing changed by asking.
    CHECK(plan_lines(path, target, "add Book.subtitle (default \"none\")") == 2);
    CHECK(plan_lines(path, target, "Book.pages: widen integer16 to integer64") == 2);

    // migrate = 0: the store is refused as before.
    amber_store *store = NULL;
    amber_store_options options = AMBER_STORE_OPTIONS_INIT;
    CHECK(options.migrate == 1 && options.backup == 1 && options.progress == NULL);
    options.migrate = 0;
    FAILS(amber_store_open_with_options(&store, path, target, &options), AMBER_E_MODEL_MISMATCH, "Book.subtitle");

    // A progress callback that answers nonzero cancels: nothing changes.
    progress_log log = {0, 0, 1};
    options = (amber_store_options)AMBER_STORE_OPTIONS_INIT;
    options.backup = 0;
    options.progress = progress;
    options.progress_context = &log;
    FAILS(amber_store_open_with_options(&store, path, target, &options), AMBER_E_MIGRATION_FAILED, "cancelled");
    CHECK(log.calls == 1);
    CHECK(plan_lines(path, target, NULL) == 2);

    // A change that cannot be inferred names itself.
    amber_model *bad = model_of(refused);
    FAILS(amber_store_open(&store, path, bad), AMBER_E_MIGRATION_FAILED, "Book.title: type string to integer64: cannot be inferred");
    FAILS(amber_store_migration_plan(&(char *){NULL}, &(size_t){0}, path, bad), AMBER_E_MIGRATION_FAILED, "Book.title");
    OK(amber_model_free(bad));

    // It migrates, reporting progress, with no backup when asked.
    log = (progress_log){0, 0, 0};
    OK(amber_store_open_with_options(&store, path, target, &options));
    CHECK(log.copied == 1);
    CHECK(count_where(store, "subtitle == %@", text("none")) == BOOKS);
    CHECK(count_where(store, "pages >= %@", integer(0)) == BOOKS);
    OK(amber_store_close(store));
    CHECK(plan_lines(path, target, NULL) == 0);

    // A caller compiled before the migration fields sends a shorter struct: they take their defaults (migrate, back up).
    amber_store_options old = AMBER_STORE_OPTIONS_INIT;
    old.size = offsetof(amber_store_options, migrate);
    OK(amber_store_open_with_options(&store, second, target, &old));
    CHECK(count_where(store, "subtitle == %@", text("none")) == BOOKS);
    OK(amber_store_close(store));
    char pattern[600];
    snprintf(pattern, sizeof pattern, "%s.*.backup", second);
    glob_t backups;
    CHECK(glob(pattern, 0, NULL, &backups) == 0 && backups.gl_pathc == 1);
    globfree(&backups);

    // Dropping pages removes stored values: refused (and counted) without allow_data_removal, nothing changed.
    amber_model *smaller = model_of(titles_only);
    CHECK(plan_lines(path, smaller, "removes stored data: Book.pages: 50 values (needs consent: data removal allowed)") >= 1);
    FAILS(amber_store_open(&store, path, smaller), AMBER_E_MIGRATION_FAILED, "Book.pages: 50 values would be removed");
    CHECK(plan_lines(path, smaller, NULL) >= 1);
    options = (amber_store_options)AMBER_STORE_OPTIONS_INIT;
    CHECK(options.allow_data_removal == 0);
    options.allow_data_removal = 1;
    OK(amber_store_open_with_options(&store, path, smaller, &options));
    CHECK(count_where(store, "title != %@", text("")) == BOOKS);
    OK(amber_store_close(store));
    OK(amber_model_free(smaller));

    FAILS(amber_store_migration_plan(&(char *){NULL}, &(size_t){0}, "/nonexistent/store.amber", target), AMBER_E_NOT_A_STORE,
          "no such file");
    OK(amber_model_free(target));
    return report();
}
