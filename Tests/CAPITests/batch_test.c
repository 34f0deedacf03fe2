/* Batch changes by predicate through the C API: amber_context_batch_update
 * (arithmetic, constants, copies; the count and object URIs of what changed;
 * an overflow and a rule refused with each object named and nothing
 * written; bad assignments named by position) and amber_context_batch_delete
 * (the objects gone; a deny rule refusing while linked). The store is the URL
 * in AMBER_TEST_STORE ("memory:" when unset): the test command runs it on
 * each kind of store. */
#define _POSIX_C_SOURCE 200809L
#include <amber.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static amber_model *model;
static amber_entity *note_entity, *folder_entity;
static amber_attribute *small_attribute, *count_attribute, *label_attribute, *title_attribute;
static amber_relationship *folder_relationship;

static void build_model(void) {
    amber_model_builder *builder = NULL;
    OK(amber_model_builder_new(&builder));
    OK(amber_model_builder_add_entity(builder, "Folder"));
    OK(amber_model_builder_add_entity(builder, "Note"));
    add_attribute(builder, "Folder", "title", AMBER_TYPE_STRING);
    add_attribute(builder, "Note", "small", AMBER_TYPE_INTEGER16);
    add_attribute(builder, "Note", "count", AMBER_TYPE_INTEGER64);
    add_attribute(builder, "Note", "label", AMBER_TYPE_STRING);
    amber_relationship_spec notes = AMBER_RELATIONSHIP_SPEC_INIT;
    notes.name = "notes";
    notes.destination = "Note";
    notes.inverse = "folder";
    notes.flags = AMBER_RELATIONSHIP_TO_MANY;
    notes.delete_rule = AMBER_DELETE_DENY;
    OK(amber_model_builder_add_relationship(builder, "Folder", &notes));
    amber_relationship_spec folder = AMBER_RELATIONSHIP_SPEC_INIT;
    folder.name = "folder";
    folder.destination = "Folder";
    folder.inverse = "notes";
    OK(amber_model_builder_add_relationship(builder, "Note", &folder));
    OK(amber_model_builder_bind(&model, builder, NULL));
    OK(amber_model_builder_free(builder));
    OK(amber_model_entity(&note_entity, model, "Note"));
    OK(amber_model_entity(&folder_entity, model, "Folder"));
    OK(amber_entity_attribute(&small_attribute, note_entity, "small"));
    OK(amber_entity_attribute(&count_attribute, note_entity, "count"));
    OK(amber_entity_attribute(&label_attribute, note_entity, "label"));
    OK(amber_entity_attribute(&title_attribute, folder_entity, "title"));
    OK(amber_entity_relationship(&folder_relationship, note_entity, "folder"));
}

/* The integer attribute `attribute` of every Note, in key order, into `out` (at most 16). */
static size_t integers(amber_context *context, amber_attribute *attribute, int64_t *out) {
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Note";
    amber_batch *batch = NULL;
    const amber_value *values = NULL;
    size_t count = 0;
    amber_attribute *attributes[1] = {attribute};
    OK(amber_context_fetch_batch(&batch, &values, NULL, &count, context, &request, attributes, 1));
    for (size_t i = 0; i < count && i < 16; i++) out[i] = values[i].v.integer;
    OK(amber_batch_free(batch));
    return count;
}

int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    const char *url = getenv("AMBER_TEST_STORE") ? getenv("AMBER_TEST_STORE") : "memory:";
    build_model();
    amber_store *store = NULL;
    OK(amber_store_open_url(&store, url, model, NULL));
    amber_context *context = NULL;
    OK(amber_context_new(&context, store));
    amber_object *folder = NULL;
    OK(amber_context_insert(&folder, context, folder_entity));
    amber_value title = text("inbox");
    OK(amber_object_set(folder, title_attribute, &title));
    for (int i = 0; i < 10; i++) {
        amber_object *note = NULL;
        OK(amber_context_insert(&note, context, note_entity));
        amber_value small = integer(i * 1000), count = integer(i), label = text("n");
        OK(amber_object_set(note, small_attribute, &small));
        OK(amber_object_set(note, count_attribute, &count));
        OK(amber_object_set(note, label_attribute, &label));
        if (i < 3) OK(amber_object_set_object(note, folder_relationship, folder));
    }
    OK(amber_context_save(context));

    /* small = small + 5 and count = count * 3 where count >= 5; label = "big" there too. */
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Note";
    request.predicate = "count >= %@";
    amber_value five = integer(5);
    request.arguments = &five;
    request.argument_count = 1;
    amber_batch_assignment assignments[3] = {
        {small_attribute, AMBER_BATCH_ADD, integer(5), NULL},
        {count_attribute, AMBER_BATCH_MULTIPLY, integer(3), NULL},
        {label_attribute, AMBER_BATCH_SET, text("big"), NULL},
    };
    char *ids = NULL;
    size_t changed = 0;
    OK(amber_context_batch_update(&ids, &changed, context, &request, assignments, 3));
    CHECK(changed == 5);
    CHECK(ids != NULL && strstr(ids, "/Note/p") != NULL);
    int lines = 1;
    for (const char *c = ids; c && *c; c++) lines += *c == '\n';
    CHECK(lines == 5);
    amber_free(ids);
    int64_t values[16];
    CHECK(integers(context, small_attribute, values) == 10);
    for (int i = 0; i < 10; i++) CHECK(values[i] == i * 1000 + (i >= 5 ? 5 : 0));
    CHECK(integers(context, count_attribute, values) == 10);
    for (int i = 0; i < 10; i++) CHECK(values[i] == (i >= 5 ? i * 3 : i));

    /* small * 4 overflows Integer 16 for 9005 (36020): refused, the object named, nothing written. */
    amber_batch_assignment overflow = {small_attribute, AMBER_BATCH_MULTIPLY, integer(4), NULL};
    request.predicate = NULL;
    request.argument_count = 0;
    FAILS(amber_context_batch_update(NULL, &changed, context, &request, &overflow, 1), AMBER_E_SAVE_FAILED, "Note.small");
    CHECK(amber_last_error_problem_count() == 1);
    CHECK(strstr(amber_last_error_problem(0)->message, "36020, out of range, which Integer 16 cannot hold") != NULL);
    CHECK(strcmp(amber_last_error_problem(0)->place, "Note.small") == 0);
    CHECK(integers(context, small_attribute, values) == 10 && values[9] == 9005);

    /* Copies and bad assignments. */
    amber_batch_assignment copy = {count_attribute, AMBER_BATCH_COPY, integer(0), small_attribute};
    OK(amber_context_batch_update(NULL, &changed, context, &request, &copy, 1));
    CHECK(integers(context, count_attribute, values) == 10 && values[9] == 9005);
    amber_batch_assignment bad = {count_attribute, 42, integer(0), NULL};
    FAILS(amber_context_batch_update(NULL, NULL, context, &request, &bad, 1), AMBER_E_INVALID_VALUE, "amber_batch_operation");
    CHECK(strcmp(amber_last_error_origin(), "assignments[0].operation") == 0);
    amber_batch_assignment wrong = {label_attribute, AMBER_BATCH_MULTIPLY, integer(2), NULL};
    FAILS(amber_context_batch_update(NULL, NULL, context, &request, &wrong, 1), AMBER_E_INVALID_VALUE, "Note.label");
    FAILS(amber_context_batch_update(NULL, NULL, context, &request, NULL, 0), AMBER_E_INVALID_VALUE, "assignment_count");
    amber_batch_assignment foreign = {title_attribute, AMBER_BATCH_SET, text("x"), NULL};
    FAILS(amber_context_batch_update(NULL, NULL, context, &request, &foreign, 1), AMBER_E_NOT_FOUND, "not an attribute of Note");

    /* Deleting the folder is denied while it has notes; deleting its notes, then it, is not. */
    amber_fetch_request folders = AMBER_FETCH_REQUEST_INIT;
    folders.entity = "Folder";
    FAILS(amber_context_batch_delete(NULL, &changed, context, &folders), AMBER_E_SAVE_FAILED, "Folder.notes");
    request.predicate = "folder != nil";
    OK(amber_context_batch_delete(&ids, &changed, context, &request));
    CHECK(changed == 3);
    amber_free(ids);
    OK(amber_context_batch_delete(NULL, &changed, context, &folders));
    CHECK(changed == 1);
    CHECK(integers(context, small_attribute, values) == 7);

    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));
    return report();
}
