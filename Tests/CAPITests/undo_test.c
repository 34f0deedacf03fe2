/* Undo and redo through the C API: sets, inserts, deletions and a
 * relationship, named groups, undo after a save, the levels limit, and
 * misuse (no undo enabled, no open group, bad arguments). */
#include <amber.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static const char model_json[] =
    "{\"entities\": ["
    " {\"name\": \"Author\", \"attributes\": [{\"name\": \"name\", \"type\": \"string\"}],"
    "  \"relationships\": [{\"name\": \"books\", \"destination\": \"Book\", \"toMany\": true, \"inverse\": \"author\"}]},"
    " {\"name\": \"Book\", \"attributes\": [{\"name\": \"title\", \"type\": \"string\"}],"
    "  \"relationships\": [{\"name\": \"author\", \"destination\": \"Author\", \"inverse\": \"books\"}]}]}";

/* Whether `object`'s `attribute` holds the string `want` (NULL: holds null). */
static int holds(amber_object *object, amber_attribute *attribute, const char *want) {
    amber_value value;
    if (amber_object_get(&value, object, attribute) != AMBER_OK) return 0;
    int same = want == NULL ? value.type == AMBER_VALUE_NULL
                            : value.type == AMBER_VALUE_STRING && value.v.text.length == strlen(want) &&
                                  memcmp(value.v.text.data, want, strlen(want)) == 0;
    amber_value_release(&value);
    return same;
}

static int64_t count(amber_context *context, const char *entity) {
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = entity;
    int64_t n = -1;
    OK(amber_context_count(&n, context, &request));
    return n;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "/tmp/amber-undo-test.amber";
    remove(path);
    amber_model *model = NULL;
    amber_store *store = NULL;
    amber_context *context = NULL;
    amber_entity *author_entity = NULL, *book_entity = NULL;
    amber_attribute *name = NULL, *title = NULL;
    amber_relationship *written_by = NULL;
    OK(amber_model_from_json(&model, model_json, sizeof model_json - 1, NULL));
    OK(amber_model_entity(&author_entity, model, "Author"));
    OK(amber_model_entity(&book_entity, model, "Book"));
    OK(amber_entity_attribute(&name, author_entity, "name"));
    OK(amber_entity_attribute(&title, book_entity, "title"));
    OK(amber_entity_relationship(&written_by, book_entity, "author"));
    OK(amber_store_open(&store, path, model));
    OK(amber_context_new(&context, store));

    /* Without undo: nothing to undo, and groups are refused. */
    int32_t done = -1, can_undo = -1, can_redo = -1;
    OK(amber_context_undo(&done, context));
    CHECK(done == 0);
    FAILS(amber_context_begin_undo_group(context, "x"), AMBER_E_UNAVAILABLE, "amber_context_enable_undo");
    FAILS(amber_context_enable_undo(context, -1), AMBER_E_INVALID_VALUE, "levels_limit is -1");
    OK(amber_context_enable_undo(context, 0));
    FAILS(amber_context_end_undo_group(context), AMBER_E_UNAVAILABLE, "no undo group is open");
    FAILS(amber_context_undo(NULL, context), AMBER_E_NULL_ARGUMENT, "out_done");

    /* One named group: an author, a book, the link. */
    amber_object *author = NULL, *book = NULL;
    OK(amber_context_begin_undo_group(context, "Add Book"));
    OK(amber_context_insert(&author, context, author_entity));
    amber_value value = text("Le Guin");
    OK(amber_object_set(author, name, &value));
    OK(amber_context_insert(&book, context, book_entity));
    value = text("Lathe");
    OK(amber_object_set(book, title, &value));
    OK(amber_object_set_object(book, written_by, author));
    OK(amber_context_end_undo_group(context));
    OK(amber_context_save(context));
    char *action = NULL;
    OK(amber_context_undo_action_name(&action, context, 0));
    CHECK(action != NULL && strcmp(action, "Add Book") == 0);
    amber_free(action);
    FAILS(amber_context_undo_action_name(&action, context, 2), AMBER_E_INVALID_VALUE, "redo is 2");

    /* A set after the save; undo makes the context dirty with the old value. */
    value = text("The Lathe of Heaven");
    OK(amber_object_set(book, title, &value));
    OK(amber_context_save(context));
    OK(amber_context_undo(&done, context));
    CHECK(done == 1);
    CHECK(holds(book, title, "Lathe"));
    int32_t dirty = 0;
    OK(amber_context_has_changes(&dirty, context));
    CHECK(dirty == 1);
    OK(amber_context_redo(&done, context));
    CHECK(done == 1 && holds(book, title, "The Lathe of Heaven"));
    OK(amber_context_undo(&done, context));

    /* Undo the saved group: both objects become pending deletions; saving removes them. */
    OK(amber_context_undo(&done, context));
    CHECK(done == 1);
    OK(amber_context_undo_state(&can_undo, &can_redo, context));
    CHECK(can_undo == 0 && can_redo == 1);
    OK(amber_context_undo_action_name(&action, context, 1));
    CHECK(action != NULL && strcmp(action, "Add Book") == 0);
    amber_free(action);
    OK(amber_context_save(context));
    CHECK(count(context, "Book") == 0 && count(context, "Author") == 0);
    /* Redo brings them back, linked, under their own keys. */
    OK(amber_context_redo(&done, context));
    OK(amber_context_save(context));
    CHECK(count(context, "Book") == 1 && count(context, "Author") == 1);
    amber_object *linked = NULL;
    OK(amber_object_get_object(&linked, book, written_by));
    CHECK(linked == author && holds(author, name, "Le Guin"));

    /* The levels limit keeps the newest groups; a new change clears redo. */
    OK(amber_context_enable_undo(context, 2));
    const char *titles[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++) {
        value = text(titles[i]);
        OK(amber_object_set(book, title, &value));
    }
    OK(amber_context_undo(&done, context));
    OK(amber_context_undo(&done, context));
    CHECK(done == 1 && holds(book, title, "b"));
    OK(amber_context_undo(&done, context));
    CHECK(done == 0 && holds(book, title, "b")); /* past the limit: a no-op that says so */
    value = text("e");
    OK(amber_object_set(book, title, &value));
    OK(amber_context_redo(&done, context));
    CHECK(done == 0);
    OK(amber_context_disable_undo(context));
    OK(amber_context_undo_state(&can_undo, NULL, context));
    CHECK(can_undo == 0);

    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));
    return report();
}
