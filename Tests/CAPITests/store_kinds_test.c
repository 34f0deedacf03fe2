/* What every kind of store keeps, through the C API: the store is the URL in
 * AMBER_TEST_STORE ("memory:" when unset), and the test command runs this
 * program on each kind (memory:, a file, the PostgreSQL test server). Values
 * read back exactly, predicates and counts, links from both sides, a
 * conflict between two contexts reported and then settled by policy, a
 * duplicate refused naming its constraint; on a server, a bad schema name
 * and an unknown database named. */
#define _POSIX_C_SOURCE 200809L
#include <amber.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static amber_model *model;
static amber_entity *note_entity, *folder_entity;
static amber_attribute *count_attribute, *label_attribute, *ratio_attribute, *title_attribute;
static amber_relationship *folder_relationship, *notes_relationship;

static void build_model(void) {
    amber_model_builder *builder = NULL;
    OK(amber_model_builder_new(&builder));
    OK(amber_model_builder_add_entity(builder, "Folder"));
    OK(amber_model_builder_add_entity(builder, "Note"));
    add_attribute(builder, "Folder", "title", AMBER_TYPE_STRING);
    add_attribute(builder, "Note", "count", AMBER_TYPE_INTEGER64);
    add_attribute(builder, "Note", "label", AMBER_TYPE_STRING);
    add_attribute(builder, "Note", "ratio", AMBER_TYPE_DOUBLE);
    const char *unique[] = {"title"};
    OK(amber_model_builder_add_unique(builder, "Folder", unique, 1));
    amber_relationship_spec notes = AMBER_RELATIONSHIP_SPEC_INIT;
    notes.name = "notes";
    notes.destination = "Note";
    notes.inverse = "folder";
    notes.flags = AMBER_RELATIONSHIP_TO_MANY;
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
    OK(amber_entity_attribute(&count_attribute, note_entity, "count"));
    OK(amber_entity_attribute(&label_attribute, note_entity, "label"));
    OK(amber_entity_attribute(&ratio_attribute, note_entity, "ratio"));
    OK(amber_entity_attribute(&title_attribute, folder_entity, "title"));
    OK(amber_entity_relationship(&folder_relationship, note_entity, "folder"));
    OK(amber_entity_relationship(&notes_relationship, folder_entity, "notes"));
}

static amber_value real(double d) {
    amber_value value = {.type = AMBER_VALUE_DOUBLE};
    value.v.real = d;
    return value;
}

/* The one Note whose count is `count`, fetched into `context`. */
static amber_object *note(amber_context *context, int64_t count) {
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Note";
    request.predicate = "count == %@";
    amber_value wanted = integer(count);
    request.arguments = &wanted;
    request.argument_count = 1;
    amber_object **objects = NULL;
    size_t found = 0;
    OK(amber_context_fetch(&objects, &found, context, &request));
    CHECK(found == 1);
    amber_object *first = found ? objects[0] : NULL;
    amber_free(objects);
    return first;
}

int main(void) {
    const char *url = getenv("AMBER_TEST_STORE") ? getenv("AMBER_TEST_STORE") : "memory:";
    build_model();
    amber_store *store = NULL;
    OK(amber_store_open_url(&store, url, model, NULL));
    amber_context *writer = NULL;
    OK(amber_context_new(&writer, store));
    amber_object *folder = NULL;
    OK(amber_context_insert(&folder, writer, folder_entity));
    amber_value title = text("inbox");
    OK(amber_object_set(folder, title_attribute, &title));
    /* Doubles that text would round: each must come back bit for bit (-0.0, which SQLite reads back as 0.0,
     * is the one documented exception: docs/values.md). */
    const double ratios[] = {0.1, 1.0 / 3.0, 5e-324, 1.7976931348623157e308, -1e-300, 123456789.123456789};
    for (int i = 0; i < 6; i++) {
        amber_object *created = NULL;
        OK(amber_context_insert(&created, writer, note_entity));
        amber_value count = integer(i), label = text(i % 2 ? "odd" : "even \xc3\xa9'\"; --"), ratio = real(ratios[i]);
        OK(amber_object_set(created, count_attribute, &count));
        OK(amber_object_set(created, label_attribute, &label));
        OK(amber_object_set(created, ratio_attribute, &ratio));
        if (i < 4) OK(amber_object_set_object(created, folder_relationship, folder));
    }
    OK(amber_context_save(writer));

    amber_context *reader = NULL;
    OK(amber_context_new(&reader, store));
    /* A context made after the save has nothing to wait for; a negative timeout is named. */
    int32_t changed = -1;
    OK(amber_context_wait_for_saved_changes(&changed, reader, 10));
    CHECK(changed == 0);
    FAILS(amber_context_wait_for_saved_changes(&changed, reader, -1), AMBER_E_INVALID_VALUE, "timeout_ms");
    for (int i = 0; i < 6; i++) {
        amber_object *read = note(reader, i);
        amber_value ratio;
        OK(amber_object_get(&ratio, read, ratio_attribute));
        CHECK(ratio.type == AMBER_VALUE_DOUBLE && memcmp(&ratio.v.real, &ratios[i], sizeof(double)) == 0);
        amber_value label;
        OK(amber_object_get(&label, read, label_attribute));
        CHECK(label.type == AMBER_VALUE_STRING && strcmp(label.v.text.data, i % 2 ? "odd" : "even \xc3\xa9'\"; --") == 0);
        amber_value_release(&label);
    }
    amber_fetch_request odd = AMBER_FETCH_REQUEST_INIT;
    odd.entity = "Note";
    odd.predicate = "label == 'odd' AND folder.title == 'inbox'";
    int64_t counted = 0;
    OK(amber_context_count(&counted, reader, &odd));
    CHECK(counted == 2);
    amber_object *member = note(reader, 5);
    amber_object *owner = NULL;
    OK(amber_object_get_object(&owner, member, folder_relationship));
    CHECK(owner == NULL);
    member = note(reader, 3);
    OK(amber_object_get_object(&owner, member, folder_relationship));
    CHECK(owner != NULL);
    size_t members = 0;
    OK(amber_object_count_objects(&members, owner, notes_relationship));
    CHECK(members == 4);

    /* Both contexts change note 0; the second save is a conflict, then settled by its policy. */
    amber_object *mine = note(writer, 0), *theirs = note(reader, 0);
    amber_value first = text("first"), second = text("second");
    OK(amber_object_set(mine, label_attribute, &first));
    OK(amber_context_save(writer));
    OK(amber_context_wait_for_saved_changes(&changed, reader, 5000));
    CHECK(changed == 1);
    OK(amber_object_set(theirs, label_attribute, &second));
    FAILS(amber_context_save(reader), AMBER_E_SAVE_FAILED, "was changed in the store");
    OK(amber_context_set_merge_policy(reader, AMBER_MERGE_OBJECT_WINS));
    OK(amber_context_save(reader));
    amber_context *fresh = NULL;
    OK(amber_context_new(&fresh, store));
    amber_value label;
    OK(amber_object_get(&label, note(fresh, 0), label_attribute));
    CHECK(label.type == AMBER_VALUE_STRING && strcmp(label.v.text.data, "second") == 0);
    amber_value_release(&label);

    /* A second folder named "inbox": refused naming the constraint, nothing written. */
    amber_object *duplicate = NULL;
    OK(amber_context_insert(&duplicate, fresh, folder_entity));
    OK(amber_object_set(duplicate, title_attribute, &title));
    FAILS(amber_context_save(fresh), AMBER_E_SAVE_FAILED, "Folder(title)");
    amber_fetch_request folders = AMBER_FETCH_REQUEST_INIT;
    folders.entity = "Folder";
    OK(amber_context_count(&counted, reader, &folders));
    CHECK(counted == 1);

    if (strncmp(url, "postgres", 8) == 0) {
        /* A schema that would need quoting, and a database that is not there, are named. */
        char bad[1024];
        snprintf(bad, sizeof bad, "%.900s%sschema=Bad-Name", url, strchr(url, '?') ? "&" : "?");
        amber_store *refused = NULL;
        FAILS(amber_store_open_url(&refused, bad, model, NULL), AMBER_E_INVALID_URL, "schema");
        CHECK(refused == NULL);
        char missing[1024];
        const char *query = strchr(url, '?');
        snprintf(missing, sizeof missing, "%.*s_missing%s", (int)(query ? query - url : (long)strlen(url)), url, query ? query : "");
        FAILS(amber_store_open_url(&refused, missing, model, NULL), AMBER_E_SERVER, "_missing");
        CHECK(strcmp(amber_last_error_origin(), "08001") == 0);
    }

    OK(amber_context_free(fresh));
    OK(amber_context_free(reader));
    OK(amber_context_free(writer));
    OK(amber_store_close(store));
    OK(amber_model_free(model));
    return report();
}
