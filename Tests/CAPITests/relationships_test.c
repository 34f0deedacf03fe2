/* Relationships through the C API: declared with the builder and described
 * back, to-one and to-many changed from either side with the inverse in
 * step, saved and read back from the store file (faults), delete rules and
 * the save checks in the last error, and misuse: a destination of the wrong
 * entity or another context, a to-many used as a to-one, NULL members;
 * batch inserts that set relationships (AMBER_COLUMN_OBJECTS), all or nothing. */
#include <amber.h>

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static amber_model *model;
static amber_entity *author_entity, *book_entity;
static amber_attribute *name_attribute, *title_attribute;
static amber_relationship *books, *writer;

static void add_relationship(amber_model_builder *builder, const char *entity, const char *name, const char *destination,
                             const char *inverse, uint32_t flags, int32_t rule) {
    amber_relationship_spec spec = AMBER_RELATIONSHIP_SPEC_INIT;
    spec.name = name;
    spec.destination = destination;
    spec.inverse = inverse;
    spec.flags = flags;
    spec.delete_rule = rule;
    OK(amber_model_builder_add_relationship(builder, entity, &spec));
}

static void add_string(amber_model_builder *builder, const char *entity, const char *name) {
    amber_attribute_spec spec = AMBER_ATTRIBUTE_SPEC_INIT;
    spec.name = name;
    spec.type = AMBER_TYPE_STRING;
    OK(amber_model_builder_add_attribute(builder, entity, &spec));
}

static void build_model(void) {
    amber_model_builder *builder = NULL;
    OK(amber_model_builder_new(&builder));
    OK(amber_model_builder_add_entity(builder, "Author"));
    OK(amber_model_builder_add_entity(builder, "Book"));
    add_string(builder, "Author", "name");
    add_string(builder, "Book", "title");
    add_relationship(builder, "Author", "books", "Book", "author", AMBER_RELATIONSHIP_TO_MANY, AMBER_DELETE_CASCADE);
    add_relationship(builder, "Book", "author", "Author", "books", AMBER_RELATIONSHIP_REQUIRED, AMBER_DELETE_NULLIFY);
    OK(amber_model_builder_add_entity(builder, "Tag"));
    add_string(builder, "Tag", "label");
    add_relationship(builder, "Book", "tags", "Tag", "books", AMBER_RELATIONSHIP_TO_MANY | AMBER_RELATIONSHIP_ORDERED, AMBER_DELETE_NULLIFY);
    add_relationship(builder, "Tag", "books", "Book", "tags", AMBER_RELATIONSHIP_TO_MANY, AMBER_DELETE_NULLIFY);

    /* Spec misuse is refused at once; model rules at bind, with every problem. */
    amber_relationship_spec bad = AMBER_RELATIONSHIP_SPEC_INIT;
    bad.name = "x";
    bad.destination = "Book";
    bad.delete_rule = 9;
    FAILS(amber_model_builder_add_relationship(builder, "Author", &bad), AMBER_E_INVALID_VALUE, "unknown delete rule 9");
    bad.delete_rule = AMBER_DELETE_DENY;
    bad.min_count = -5;
    FAILS(amber_model_builder_add_relationship(builder, "Author", &bad), AMBER_E_INVALID_VALUE, "spec->min_count is -5");
    bad.min_count = -1;
    bad.flags = 64;
    FAILS(amber_model_builder_add_relationship(builder, "Author", &bad), AMBER_E_INVALID_VALUE, "unknown flags 64");
    /* So are attribute flags this version does not know (they were once ignored). */
    amber_attribute_spec odd = AMBER_ATTRIBUTE_SPEC_INIT;
    odd.name = "odd";
    odd.type = AMBER_TYPE_STRING;
    odd.flags = AMBER_ATTRIBUTE_INDEXED | 256;
    FAILS(amber_model_builder_add_attribute(builder, "Author", &odd), AMBER_E_INVALID_VALUE, "spec->flags: unknown flags 256");
    FAILS(amber_model_builder_add_relationship(builder, "Nobody", &(amber_relationship_spec)AMBER_RELATIONSHIP_SPEC_INIT),
          AMBER_E_NULL_ARGUMENT, "spec->name");

    amber_model_builder *broken = NULL;
    amber_model *unbound = NULL;
    OK(amber_model_builder_new(&broken));
    OK(amber_model_builder_add_entity(broken, "Author"));
    add_string(broken, "Author", "name");
    add_relationship(broken, "Author", "books", "Bok", "author", AMBER_RELATIONSHIP_TO_MANY, AMBER_DELETE_NULLIFY);
    add_relationship(broken, "Author", "friend", "Author", NULL, 0, AMBER_DELETE_NULLIFY);
    /* Core Data's external storage is for binary and transformable attributes. */
    amber_attribute_spec external = AMBER_ATTRIBUTE_SPEC_INIT;
    external.name = "nickname";
    external.type = AMBER_TYPE_STRING;
    external.flags = AMBER_ATTRIBUTE_EXTERNAL_STORAGE;
    OK(amber_model_builder_add_attribute(broken, "Author", &external));
    FAILS(amber_model_builder_bind(&unbound, broken, NULL), AMBER_E_INVALID_MODEL, "Author.books: destination \"Bok\": no such entity");
    CHECK(strstr(amber_last_error_message(), "Author.friend: has no inverse") != NULL);
    CHECK(strstr(amber_last_error_message(), "Author.nickname: external storage is for binary and transformable attributes, not string") != NULL);
    OK(amber_model_builder_free(broken));

    OK(amber_model_builder_bind(&model, builder, NULL));
    OK(amber_model_builder_free(builder));
    OK(amber_model_entity(&author_entity, model, "Author"));
    OK(amber_model_entity(&book_entity, model, "Book"));
    OK(amber_entity_attribute(&name_attribute, author_entity, "name"));
    OK(amber_entity_attribute(&title_attribute, book_entity, "title"));
    OK(amber_entity_relationship(&books, author_entity, "books"));
    OK(amber_entity_relationship(&writer, book_entity, "author"));
}

static void test_introspection(void) {
    size_t count = 0;
    OK(amber_entity_relationship_count(&count, book_entity));
    CHECK(count == 2);
    amber_relationship *at = NULL;
    OK(amber_entity_relationship_at(&at, book_entity, 0));
    CHECK(at == writer);
    FAILS(amber_entity_relationship_at(&at, book_entity, 2), AMBER_E_NOT_FOUND, "Book has 2 relationships; index 2 is past them");
    FAILS(amber_entity_relationship(&at, book_entity, "autor"), AMBER_E_NOT_FOUND, "Book.autor: no such relationship; did you mean author?");
    amber_relationship_spec spec = AMBER_RELATIONSHIP_SPEC_INIT;
    OK(amber_relationship_describe(&spec, books));
    CHECK(strcmp(spec.name, "books") == 0 && strcmp(spec.destination, "Book") == 0 && strcmp(spec.inverse, "author") == 0);
    CHECK(spec.flags == AMBER_RELATIONSHIP_TO_MANY && spec.delete_rule == AMBER_DELETE_CASCADE && spec.min_count == -1);
    OK(amber_relationship_describe(&spec, writer));
    CHECK(spec.flags == AMBER_RELATIONSHIP_REQUIRED && spec.delete_rule == AMBER_DELETE_NULLIFY);
    amber_relationship_spec unsized = {0};
    FAILS(amber_relationship_describe(&unsized, writer), AMBER_E_INVALID_VALUE, "start from AMBER_RELATIONSHIP_SPEC_INIT");
    FAILS(amber_relationship_describe(&spec, (amber_relationship *)name_attribute), AMBER_E_WRONG_HANDLE_TYPE,
          "expected an amber_relationship");
}

static amber_object *insert(amber_context *context, amber_entity *entity, amber_attribute *attribute, const char *text) {
    amber_object *object = NULL;
    OK(amber_context_insert(&object, context, entity));
    amber_value value = {.type = AMBER_VALUE_STRING};
    value.v.text.data = text;
    value.v.text.length = strlen(text);
    OK(amber_object_set(object, attribute, &value));
    return object;
}

/* The title or name of `object`, compared with `expected`. */
static int is(amber_object *object, amber_attribute *attribute, const char *expected) {
    amber_value value;
    if (object == NULL || amber_object_get(&value, object, attribute) != AMBER_OK) return 0;
    int same = value.type == AMBER_VALUE_STRING && value.v.text.length == strlen(expected) &&
               memcmp(value.v.text.data, expected, value.v.text.length) == 0;
    amber_value_release(&value);
    return same;
}

static void test_graph(const char *path) {
    amber_store *store = NULL;
    amber_context *context = NULL;
    OK(amber_store_open(&store, path, model));
    OK(amber_context_new(&context, store));
    amber_object *tolkien = insert(context, author_entity, name_attribute, "Tolkien");
    amber_object *austen = insert(context, author_entity, name_attribute, "Austen");
    amber_object *hobbit = insert(context, book_entity, title_attribute, "Hobbit");
    amber_object *emma = insert(context, book_entity, title_attribute, "Emma");

    OK(amber_object_set_object(hobbit, writer, tolkien));
    OK(amber_object_add_object(austen, books, emma));
    amber_object *found = NULL;
    OK(amber_object_get_object(&found, emma, writer));
    CHECK(found == austen);
    size_t count = 0;
    OK(amber_object_count_objects(&count, tolkien, books));
    CHECK(count == 1);
    amber_object **members = NULL;
    OK(amber_object_objects(&members, &count, tolkien, books));
    CHECK(count == 1 && members[0] == hobbit);
    amber_free(members);
    /* Moving from the other side, then back. */
    OK(amber_object_add_object(tolkien, books, emma));
    OK(amber_object_count_objects(&count, austen, books));
    CHECK(count == 0);
    OK(amber_object_remove_object(tolkien, books, emma));
    OK(amber_object_get_object(&found, emma, writer));
    CHECK(found == NULL);
    OK(amber_object_set_object(emma, writer, austen));

    /* Many-to-many, ordered on the book's side: set in order, reorder, read from the other side. */
    amber_entity *tag_entity = NULL;
    amber_attribute *label = NULL;
    amber_relationship *tags = NULL, *tagged = NULL;
    OK(amber_model_entity(&tag_entity, model, "Tag"));
    OK(amber_entity_attribute(&label, tag_entity, "label"));
    OK(amber_entity_relationship(&tags, book_entity, "tags"));
    OK(amber_entity_relationship(&tagged, tag_entity, "books"));
    amber_object *labels[3] = {insert(context, tag_entity, label, "a"), insert(context, tag_entity, label, "b"),
                               insert(context, tag_entity, label, "c")};
    OK(amber_object_set_objects(hobbit, tags, labels, 3));
    amber_object *reordered[2] = {labels[2], labels[0]};
    OK(amber_object_set_objects(hobbit, tags, reordered, 2));
    OK(amber_object_objects(&members, &count, hobbit, tags));
    CHECK(count == 2 && members[0] == labels[2] && members[1] == labels[0]);
    amber_free(members);
    OK(amber_object_count_objects(&count, labels[1], tagged));
    CHECK(count == 0);
    OK(amber_object_add_object(labels[1], tagged, emma));
    OK(amber_object_objects(&members, &count, emma, tags));
    CHECK(count == 1 && members[0] == labels[1]);
    amber_free(members);
    amber_object *twice[2] = {labels[0], labels[0]};
    FAILS(amber_object_set_objects(hobbit, tags, twice, 2), AMBER_E_INVALID_VALUE, "each object once");
    FAILS(amber_object_set_objects(hobbit, tags, NULL, 1), AMBER_E_NULL_ARGUMENT, "members");

    /* Misuse changes nothing. */
    FAILS(amber_object_set_object(hobbit, writer, emma), AMBER_E_INVALID_VALUE, "Book.author: expected an Author");
    FAILS(amber_object_get_object(&found, tolkien, books), AMBER_E_INVALID_VALUE, "expected a to-one relationship");
    FAILS(amber_object_get_object(&found, hobbit, books), AMBER_E_NOT_FOUND, "Author.books is not a relationship of");
    FAILS(amber_object_add_object(tolkien, books, NULL), AMBER_E_NULL_ARGUMENT, "member");
    FAILS(amber_object_objects(&members, &count, tolkien, (amber_relationship *)title_attribute), AMBER_E_WRONG_HANDLE_TYPE,
          "expected an amber_relationship");
    amber_context *other = NULL;
    OK(amber_context_new(&other, store));
    amber_object *stranger = insert(other, author_entity, name_attribute, "Stranger");
    FAILS(amber_object_set_object(hobbit, writer, stranger), AMBER_E_INVALID_VALUE, "of another context");
    OK(amber_context_free(other));
    OK(amber_object_get_object(&found, hobbit, writer));
    CHECK(found == tolkien);

    /* A required to-one is checked at save; the changes stay. */
    amber_object *orphan = insert(context, book_entity, title_attribute, "Orphan");
    FAILS(amber_context_save(context), AMBER_E_SAVE_FAILED, "Book.author: is required");
    OK(amber_object_set_object(orphan, writer, austen));
    OK(amber_context_save(context));
    OK(amber_context_free(context));
    OK(amber_store_close(store));

    /* Read back from the file: faults that are uniqued and fire on first read. */
    OK(amber_store_open(&store, path, model));
    OK(amber_context_new(&context, store));
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Book";
    amber_sort sort = {"title", 0, 0};
    request.sort = &sort;
    request.sort_count = 1;
    amber_object **fetched = NULL;
    OK(amber_context_fetch(&fetched, &count, context, &request));
    CHECK(count == 3); /* Emma, Hobbit, Orphan */
    /* A prefetch reads the authors with the books; a misspelled key path names the nearest relationship. */
    const char *prefetch[] = {"author"};
    request.prefetch = prefetch;
    request.prefetch_count = 1;
    amber_free(fetched);
    OK(amber_context_fetch(&fetched, &count, context, &request));
    CHECK(count == 3);
    const char *misspelled[] = {"autor"};
    request.prefetch = misspelled;
    FAILS(amber_context_fetch(&fetched, &count, context, &request), AMBER_E_NOT_FOUND, "Book.autor: no such relationship; did you mean author?");
    request.prefetch = NULL;
    FAILS(amber_context_fetch(&fetched, &count, context, &request), AMBER_E_NULL_ARGUMENT, "request->prefetch");
    request.prefetch_count = 0;
    amber_object *first = NULL, *third = NULL;
    OK(amber_object_get_object(&first, fetched[0], writer));
    OK(amber_object_get_object(&third, fetched[2], writer));
    CHECK(first == third && is(first, name_attribute, "Austen"));
    OK(amber_object_count_objects(&count, first, books));
    CHECK(count == 2);

    /* A list of objects as a predicate argument: a plist JSON array of their URIs. */
    char *uri = NULL, json[256];
    size_t uri_length = 0, mine_count = 0;
    OK(amber_object_uri(&uri, &uri_length, first));
    snprintf(json, sizeof json, "[\"%s\"]", uri);
    amber_free(uri);
    amber_value list = {.type = AMBER_VALUE_PLIST};
    list.v.text.data = json;
    list.v.text.length = strlen(json);
    amber_fetch_request by_author = AMBER_FETCH_REQUEST_INIT;
    by_author.entity = "Book";
    by_author.predicate = "author IN %@";
    by_author.arguments = &list;
    by_author.argument_count = 1;
    amber_object **mine = NULL;
    OK(amber_context_fetch(&mine, &mine_count, context, &by_author));
    CHECK(mine_count == 2);
    amber_free(mine);

    /* Cascade: deleting an author deletes its books in the same save. */
    OK(amber_context_delete(context, first));
    OK(amber_context_save(context));
    amber_free(fetched);
    OK(amber_context_fetch(&fetched, &count, context, &request));
    CHECK(count == 1 && is(fetched[0], title_attribute, "Hobbit"));
    amber_free(fetched);
    OK(amber_context_free(context));
    OK(amber_store_close(store));
}

/* Inheritance: a sub-entity inherits, is fetched with its parent (unless
 * excluded), and an abstract entity refuses inserts. */
static void test_inheritance(void) {
    amber_model_builder *builder = NULL;
    OK(amber_model_builder_new(&builder));
    OK(amber_model_builder_add_entity(builder, "Person"));
    OK(amber_model_builder_add_entity(builder, "Writer"));
    add_string(builder, "Person", "name");
    add_string(builder, "Writer", "genre");
    OK(amber_model_builder_set_parent(builder, "Person", NULL, 1));
    OK(amber_model_builder_set_parent(builder, "Writer", "Person", 0));
    FAILS(amber_model_builder_set_parent(builder, "Nobody", "Person", 0), AMBER_E_NOT_FOUND, "Nobody: no such entity in the builder");
    amber_model *people = NULL;
    OK(amber_model_builder_bind(&people, builder, NULL));
    OK(amber_model_builder_free(builder));
    amber_entity *person = NULL, *writer_entity = NULL, *parent = NULL;
    OK(amber_model_entity(&person, people, "Person"));
    OK(amber_model_entity(&writer_entity, people, "Writer"));
    OK(amber_entity_parent(&parent, writer_entity));
    CHECK(parent == person);
    OK(amber_entity_parent(&parent, person));
    CHECK(parent == NULL);
    size_t count = 0;
    OK(amber_entity_attribute_count(&count, writer_entity));
    CHECK(count == 2); /* name (inherited), genre */
    OK(amber_entity_subentity_count(&count, person));
    CHECK(count == 1);
    OK(amber_entity_subentity_count(&count, writer_entity));
    CHECK(count == 0);
    amber_attribute *person_name = NULL;
    OK(amber_entity_attribute(&person_name, person, "name"));

    amber_store *store = NULL;
    amber_context *context = NULL;
    OK(amber_store_open(&store, NULL, people));
    OK(amber_context_new(&context, store));
    amber_object *object = NULL;
    FAILS(amber_context_insert(&object, context, person), AMBER_E_INVALID_VALUE, "Person: expected an entity that is not abstract");
    OK(amber_context_insert(&object, context, writer_entity));
    amber_value name = {.type = AMBER_VALUE_STRING};
    name.v.text.data = "King";
    name.v.text.length = 4;
    OK(amber_object_set_named(object, "name", &name));
    OK(amber_context_save(context));
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Person";
    amber_object **found = NULL;
    OK(amber_context_fetch(&found, &count, context, &request));
    CHECK(count == 1 && found[0] == object);
    amber_free(found);
    /* The parent's attribute handle reads the inherited attribute of a sub-entity's object. */
    amber_value read;
    OK(amber_object_get(&read, object, person_name));
    CHECK(read.type == AMBER_VALUE_STRING && read.v.text.length == 4);
    amber_value_release(&read);
    request.exclude_subentities = 1;
    OK(amber_context_fetch(&found, &count, context, &request));
    CHECK(count == 0 && found == NULL);
    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(people));
}

/* Siblings may each declare a property of one name (as in Core Data): each
 * keeps its own column, of its own type, and predicates read the entity's own. */
static void test_sibling_properties(void) {
    amber_model_builder *builder = NULL;
    OK(amber_model_builder_new(&builder));
    OK(amber_model_builder_add_entity(builder, "Person"));
    OK(amber_model_builder_add_entity(builder, "Writer"));
    OK(amber_model_builder_add_entity(builder, "Painter"));
    add_string(builder, "Writer", "genre");
    amber_attribute_spec spec = AMBER_ATTRIBUTE_SPEC_INIT;
    spec.name = "genre";
    spec.type = AMBER_TYPE_INTEGER64;
    OK(amber_model_builder_add_attribute(builder, "Painter", &spec));
    OK(amber_model_builder_set_parent(builder, "Person", NULL, 1));
    OK(amber_model_builder_set_parent(builder, "Writer", "Person", 0));
    OK(amber_model_builder_set_parent(builder, "Painter", "Person", 0));
    amber_model *model = NULL;
    OK(amber_model_builder_bind(&model, builder, NULL));
    OK(amber_model_builder_free(builder));
    amber_entity *writer = NULL, *painter = NULL;
    OK(amber_model_entity(&writer, model, "Writer"));
    OK(amber_model_entity(&painter, model, "Painter"));
    amber_store *store = NULL;
    amber_context *context = NULL;
    OK(amber_store_open(&store, NULL, model));
    OK(amber_context_new(&context, store));
    amber_object *king = NULL, *hopper = NULL;
    OK(amber_context_insert(&king, context, writer));
    OK(amber_context_insert(&hopper, context, painter));
    amber_value horror = {.type = AMBER_VALUE_STRING}, three = {.type = AMBER_VALUE_INT};
    horror.v.text.data = "horror";
    horror.v.text.length = 6;
    three.v.integer = 3;
    OK(amber_object_set_named(king, "genre", &horror));
    OK(amber_object_set_named(hopper, "genre", &three));
    FAILS(amber_object_set_named(king, "genre", &three), AMBER_E_INVALID_VALUE, "Writer.genre");
    OK(amber_context_save(context));
    amber_context *fresh = NULL;
    OK(amber_context_new(&fresh, store));
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Painter";
    request.predicate = "genre == 3";
    amber_object **found = NULL;
    size_t count = 0;
    OK(amber_context_fetch(&found, &count, fresh, &request));
    CHECK(count == 1);
    amber_value read;
    if (count == 1) {
        OK(amber_object_get_named(&read, found[0], "genre"));
        CHECK(read.type == AMBER_VALUE_INT && read.v.integer == 3);
        amber_value_release(&read);
    }
    amber_free(found);
    request.entity = "Writer";
    request.predicate = "genre == 'horror'";
    OK(amber_context_fetch(&found, &count, fresh, &request));
    CHECK(count == 1);
    amber_free(found);
    OK(amber_context_free(fresh));
    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));
}

/* Whether `object`'s members of `relationship` are exactly `want` (of `count`), in order. */
static int members_are(amber_object *object, amber_relationship *relationship, amber_object *const *want, size_t count) {
    amber_object **members = NULL;
    size_t found = 0;
    if (amber_object_objects(&members, &found, object, relationship) != AMBER_OK) return 0;
    int same = found == count;
    for (size_t i = 0; same && i < count; i++) same = members[i] == want[i];
    amber_free(members);
    return same;
}

static void test_batch_insert(void) {
    amber_store *store = NULL;
    OK(amber_store_open_url(&store, "memory:", model, NULL));
    amber_context *context = NULL, *other = NULL;
    OK(amber_context_new(&context, store));
    OK(amber_context_new(&other, store));
    amber_relationship *tags = NULL, *tag_books = NULL;
    amber_entity *tag_entity = NULL;
    OK(amber_entity_relationship(&tags, book_entity, "tags"));
    OK(amber_model_entity(&tag_entity, model, "Tag"));
    OK(amber_entity_relationship(&tag_books, tag_entity, "books"));
    amber_object *le_guin = insert(context, author_entity, name_attribute, "Le Guin");
    amber_object *banks = insert(context, author_entity, name_attribute, "Banks");
    amber_object *red = NULL, *blue = NULL;
    OK(amber_context_insert(&red, context, tag_entity));
    OK(amber_context_insert(&blue, context, tag_entity));

    /* Titles, a to-one per row and an ordered to-many per row, in one call. */
    const char titles[] = "LatheExcessionEarthsea";
    size_t title_lengths[] = {5, 9, 8};
    amber_object *authors[] = {le_guin, banks, le_guin};
    amber_object *members[] = {blue, red, red}; /* row 0: blue, red; row 1: none; row 2: red */
    size_t member_counts[] = {2, 0, 1};
    amber_column columns[3] = {AMBER_COLUMN_INIT, AMBER_COLUMN_INIT, AMBER_COLUMN_INIT};
    columns[0].attribute = title_attribute;
    columns[0].type = AMBER_VALUE_STRING;
    columns[0].data = titles;
    columns[0].lengths = title_lengths;
    columns[0].data_size = sizeof titles - 1;
    columns[1].relationship = writer;
    columns[1].type = AMBER_COLUMN_OBJECTS;
    columns[1].data = authors;
    columns[2].relationship = tags;
    columns[2].type = AMBER_COLUMN_OBJECTS;
    columns[2].data = members;
    columns[2].lengths = member_counts;
    columns[2].data_size = sizeof members;
    amber_object *made[3] = {NULL, NULL, NULL};
    OK(amber_context_insert_columns(made, context, book_entity, columns, 3, 3));
    amber_object *le_guins[] = {made[0], made[2]}, *blues[] = {made[0]};
    CHECK(members_are(le_guin, books, le_guins, 2) && members_are(made[0], tags, members, 2));
    CHECK(members_are(blue, tag_books, blues, 1) && members_are(made[1], tags, NULL, 0));
    OK(amber_context_save(context));

    /* Refused before any object is made: a destination of the wrong entity, of another context, twice in a row. */
    int64_t before = 0, after = 0;
    amber_fetch_request all_books = AMBER_FETCH_REQUEST_INIT;
    all_books.entity = "Book";
    OK(amber_context_count(&before, context, &all_books));
    authors[1] = red;
    FAILS(amber_context_insert_columns(NULL, context, book_entity, columns, 3, 3), AMBER_E_INVALID_VALUE, "Book.author in row 1");
    amber_object *stranger = insert(other, author_entity, name_attribute, "Stranger");
    authors[1] = stranger;
    FAILS(amber_context_insert_columns(NULL, context, book_entity, columns, 3, 3), AMBER_E_INVALID_VALUE, "Book.author in row 1");
    authors[1] = banks;
    members[1] = blue;
    FAILS(amber_context_insert_columns(NULL, context, book_entity, columns, 3, 3), AMBER_E_INVALID_VALUE, "each object once");
    members[1] = NULL;
    FAILS(amber_context_insert_columns(NULL, context, book_entity, columns, 3, 3), AMBER_E_NULL_ARGUMENT, "columns[2] row 0 member 1");
    members[1] = red;
    columns[2].data_size = sizeof members - 1;
    FAILS(amber_context_insert_columns(NULL, context, book_entity, columns, 3, 3), AMBER_E_INVALID_VALUE, "data_size");
    columns[2].data_size = sizeof members;
    columns[1].attribute = title_attribute;
    FAILS(amber_context_insert_columns(NULL, context, book_entity, columns, 3, 3), AMBER_E_INVALID_VALUE, "both set");
    columns[1].attribute = NULL;
    columns[1].relationship = books;
    FAILS(amber_context_insert_columns(NULL, context, book_entity, columns, 3, 3), AMBER_E_NOT_FOUND, "Author.books");
    columns[1].relationship = writer;
    OK(amber_context_count(&after, context, &all_books));
    CHECK(after == before && members_are(le_guin, books, le_guins, 2));

    /* A caller built before `relationship` existed still inserts attribute columns. */
    amber_column old = AMBER_COLUMN_INIT;
    old.size = offsetof(amber_column, relationship);
    old.attribute = name_attribute;
    old.type = AMBER_VALUE_STRING;
    old.data = "Old";
    size_t old_length = 3;
    old.lengths = &old_length;
    old.data_size = 3;
    OK(amber_context_insert_columns(NULL, context, author_entity, &old, 1, 1));

    OK(amber_context_free(other));
    OK(amber_context_free(context));
    OK(amber_store_close(store));
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "relationships_test.amber";
    remove(path);
    build_model();
    test_introspection();
    test_graph(path);
    test_inheritance();
    test_sibling_properties();
    test_batch_insert();
    OK(amber_model_free(model));
    FAILS(amber_relationship_describe(&(amber_relationship_spec)AMBER_RELATIONSHIP_SPEC_INIT, books), AMBER_E_INVALID_HANDLE,
          "released (stale) handle");
    remove(path);
    return report();
}
