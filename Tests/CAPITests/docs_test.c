/* The C samples of docs/durability.md and docs/migration.md, as written,
 * between the setup their prose supplies and checks of what they did; the
 * Swift test ReadmeSampleTests.everySampleIsRun fails when a C sample in
 * docs/ pages (other than c-guide.md, which the test command builds whole)
 * is not in this file. The samples name files such as "books.amber", so this
 * runs in a new folder beside the store path it is given (left for a look). */
#define _POSIX_C_SOURCE 200809L
#include <amber.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static const char *version1_json = "{\"entities\": [{\"name\": \"Book\", \"attributes\": ["
                                   "{\"name\": \"title\", \"type\": \"string\"}]}]}";
static const char *version2_json = "{\"entities\": [{\"name\": \"Book\", \"attributes\": ["
                                   "{\"name\": \"title\", \"type\": \"string\"},"
                                   "{\"name\": \"subtitle\", \"type\": \"string\", \"default\": \"none\"}]}]}";

static int progress_calls;

static int32_t on_progress(void *context, const char *step, uint64_t completed, uint64_t total) {
    (void)context;
    CHECK(step != NULL && completed <= total);
    progress_calls++;
    return 0;
}

static amber_model *model_of(const char *json) {
    amber_model *model = NULL;
    OK(amber_model_from_json(&model, json, strlen(json), NULL));
    return model;
}

/* Saves one book with `title` in `store`, opened with `model`. */
static void save_book(amber_store *store, amber_model *model, const char *title) {
    amber_context *context = NULL;
    amber_entity *entity = NULL;
    amber_object *book = NULL;
    amber_value value = text(title);
    OK(amber_context_new(&context, store));
    OK(amber_model_entity(&entity, model, "Book"));
    OK(amber_context_insert(&book, context, entity));
    OK(amber_object_set_named(book, "title", &value));
    OK(amber_context_save(context));
    OK(amber_context_free(context));
}

static void durability(amber_model *model) {
    amber_store *store = NULL;
    amber_store_options options = AMBER_STORE_OPTIONS_INIT;
    options.durability = AMBER_DURABILITY_FULL;
    amber_status status = amber_store_open_with_options(&store, "ledger.amber", model, &options);
    OK(status);
    save_book(store, model, "Ledger");
    OK(amber_store_close(store));
}

static void migration(amber_model *version1, amber_model *version2) {
    amber_store *store = NULL;
    char *text = NULL;
    size_t count = 0;
    OK(amber_store_open(&store, "books.amber", version1));
    save_book(store, version1, "Dune");
    OK(amber_store_close(store));
    store = NULL;

    amber_store_options options = AMBER_STORE_OPTIONS_INIT;   /* migrate = 1, backup = 1 */
    options.progress = on_progress;                            /* optional; return nonzero to cancel */
    amber_store_migration_plan(&text, &count, "books.amber", version2);  /* what it would do */
    amber_store_open_with_options(&store, "books.amber", version2, &options);
    CHECK(count == 1 && text != NULL && strstr(text, "add Book.subtitle") != NULL);
    CHECK(store != NULL && progress_calls > 0);
    amber_free(text);
    OK(amber_store_migration_plan(&text, &count, "books.amber", version2));
    CHECK(count == 0);
    amber_free(text);
    OK(amber_store_close(store));
}

int main(int argc, char **argv) {
    char folder[4096];
    snprintf(folder, sizeof folder, "%s.docs-XXXXXX", argc > 1 ? argv[1] : "/tmp/docs_test");
    CHECK(mkdtemp(folder) != NULL);
    CHECK(chdir(folder) == 0);

    amber_model *version1 = model_of(version1_json), *version2 = model_of(version2_json);
    durability(version1);
    migration(version1, version2);
    OK(amber_model_free(version1));
    OK(amber_model_free(version2));
    return report();
}
