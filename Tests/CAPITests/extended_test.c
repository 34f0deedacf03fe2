/* Extended attributes through the C API: an extensible entity's objects take
 * keys the model does not name. 200 books get random values of every kind
 * under random keys; each reads back exactly (type and value) before the
 * save and after the store is closed and opened again; the sorted key list
 * matches; counts of predicates on extended keys agree with the same test
 * done here in C; bad names, clashes and unstorable values are refused
 * naming Entity.key and change nothing; null removes a key; undo reverts a set. */
#define _POSIX_C_SOURCE 200809L /* rand_r */
#include <amber.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { BOOKS = 200, KEYS = 6 };
static const char *const keys[KEYS] = {"level", "tag", "score", "when", "code", "cost"};

typedef struct {
    int present[KEYS];
    int64_t level;
    char tag[8];
    double score;
    double when;
    uint8_t code[16];
    char cost[16];
} sample;

static sample samples[BOOKS];

static amber_value value_of(const sample *s, int key) {
    amber_value value = {.type = AMBER_VALUE_NULL};
    if (!s->present[key]) return value;
    switch (key) {
    case 0: return integer(s->level);
    case 1: return text(s->tag);
    case 2: value.type = AMBER_VALUE_DOUBLE; value.v.real = s->score; break;
    case 3: value.type = AMBER_VALUE_DATE; value.v.date = s->when; break;
    case 4: value.type = AMBER_VALUE_UUID; memcpy(value.v.uuid, s->code, 16); break;
    default: value = text(s->cost); value.type = AMBER_VALUE_DECIMAL; break;
    }
    return value;
}

/* Whether the library-filled `got` is exactly `want`. */
static int same(const amber_value *got, const amber_value *want) {
    if (got->type != want->type) return 0;
    switch (want->type) {
    case AMBER_VALUE_NULL: return 1;
    case AMBER_VALUE_INT: return got->v.integer == want->v.integer;
    case AMBER_VALUE_DOUBLE: return memcmp(&got->v.real, &want->v.real, sizeof(double)) == 0;
    case AMBER_VALUE_DATE: return got->v.date == want->v.date;
    case AMBER_VALUE_UUID: return memcmp(got->v.uuid, want->v.uuid, 16) == 0;
    default: return got->v.text.length == want->v.text.length && memcmp(got->v.text.data, want->v.text.data, want->v.text.length) == 0;
    }
}

static void check_book(amber_object *book, const sample *s) {
    for (int key = 0; key < KEYS; key++) {
        amber_value got, want = value_of(s, key);
        OK(amber_object_get_named(&got, book, keys[key]));
        CHECK(same(&got, &want));
        amber_value_release(&got);
    }
    char *names = NULL;
    size_t count = 0;
    OK(amber_object_extended_keys(&names, &count, book));
    /* Sorted: code, cost, level, score, tag, when. */
    static const int order[KEYS] = {4, 5, 0, 2, 1, 3};
    const char *name = names;
    size_t listed = 0;
    for (int i = 0; i < KEYS; i++) {
        if (!s->present[order[i]]) continue;
        CHECK(name != NULL && strcmp(name, keys[order[i]]) == 0);
        if (name) name += strlen(name) + 1;
        listed++;
    }
    CHECK(count == listed && (count > 0) == (names != NULL));
    amber_free(names);
}

static int64_t count_where(amber_context *context, const char *predicate, const amber_value *arguments, size_t argument_count) {
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Book";
    request.predicate = predicate;
    request.arguments = arguments;
    request.argument_count = argument_count;
    int64_t count = -1;
    OK(amber_context_count(&count, context, &request));
    return count;
}

static amber_model *build(void) {
    amber_model_builder *builder = NULL;
    OK(amber_model_builder_new(&builder));
    OK(amber_model_builder_add_entity(builder, "Book"));
    OK(amber_model_builder_add_entity(builder, "Shelf"));
    amber_attribute_spec spec = AMBER_ATTRIBUTE_SPEC_INIT;
    spec.name = "title";
    spec.type = AMBER_TYPE_STRING;
    OK(amber_model_builder_add_attribute(builder, "Book", &spec));
    spec.name = "label";
    OK(amber_model_builder_add_attribute(builder, "Shelf", &spec));
    FAILS(amber_model_builder_set_extensible(builder, "Bok", 1), AMBER_E_NOT_FOUND, "Bok");
    OK(amber_model_builder_set_extensible(builder, "Book", 1));
    amber_model *model = NULL;
    OK(amber_model_builder_bind(&model, builder, NULL));
    OK(amber_model_builder_free(builder));
    return model;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "extended_test.amber";
    remove(path);
    amber_model *model = build();
    amber_entity *book_entity = NULL, *shelf_entity = NULL;
    OK(amber_model_entity(&book_entity, model, "Book"));
    OK(amber_model_entity(&shelf_entity, model, "Shelf"));
    int32_t extensible = -1;
    OK(amber_entity_is_extensible(&extensible, book_entity));
    CHECK(extensible == 1);
    OK(amber_entity_is_extensible(&extensible, shelf_entity));
    CHECK(extensible == 0);

    amber_store *store = NULL;
    amber_context *context = NULL;
    OK(amber_store_open(&store, path, model));
    OK(amber_context_new(&context, store));
    static const char *const tags[] = {"abc", "abd", "Bob", "zed"};
    unsigned seed = 12;
    for (int i = 0; i < BOOKS; i++) {
        sample *s = &samples[i];
        for (int key = 0; key < KEYS; key++) s->present[key] = rand_r(&seed) % 4 != 0;
        s->level = (int64_t)(rand_r(&seed) % 101) - 50;
        snprintf(s->tag, sizeof s->tag, "%s", tags[rand_r(&seed) % 4]);
        s->score = (double)rand_r(&seed) / RAND_MAX;
        s->when = (double)(rand_r(&seed) % 100000) + 0.125;
        for (int b = 0; b < 16; b++) s->code[b] = (uint8_t)rand_r(&seed);
        s->code[6] = (uint8_t)((s->code[6] & 0x0F) | 0x40); /* a version 4 UUID, as any UUID string parses */
        s->code[8] = (uint8_t)((s->code[8] & 0x3F) | 0x80);
        snprintf(s->cost, sizeof s->cost, "%d.%02d", rand_r(&seed) % 1000, rand_r(&seed) % 100);
        if (s->cost[strlen(s->cost) - 1] == '0') s->present[5] = 0; /* "1.50" reads back as "1.5" */

        amber_object *book = NULL;
        OK(amber_context_insert(&book, context, book_entity));
        char title[16];
        snprintf(title, sizeof title, "b%03d", i);
        amber_value value = text(title);
        OK(amber_object_set_named(book, "title", &value));
        for (int key = 0; key < KEYS; key++) {
            value = value_of(s, key);
            if (s->present[key]) OK(amber_object_set_named(book, keys[key], &value));
        }
        check_book(book, s);
        OK(amber_object_release(book));
    }
    OK(amber_context_save(context));
    OK(amber_context_free(context));
    OK(amber_store_close(store));

    OK(amber_store_open(&store, path, model));
    OK(amber_context_new(&context, store));
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    amber_sort by_title = {"title", 0, 0};
    request.entity = "Book";
    request.sort = &by_title;
    request.sort_count = 1;
    amber_object **books = NULL;
    size_t count = 0;
    OK(amber_context_fetch(&books, &count, context, &request));
    CHECK(count == BOOKS);
    for (size_t i = 0; i < count && i < BOOKS; i++) check_book(books[i], &samples[i]);

    /* Counts of predicates, against the same test done here. */
    int64_t above = 0, abc = 0, low = 0, no_level = 0;
    for (int i = 0; i < BOOKS; i++) {
        const sample *s = &samples[i];
        above += s->present[0] && s->level > 10;
        abc += s->present[1] && strcmp(s->tag, "abc") == 0;
        low += s->present[2] && s->score < 0.5;
        no_level += !s->present[0];
    }
    amber_value ten = integer(10), half = {.type = AMBER_VALUE_DOUBLE, .v.real = 0.5};
    CHECK(count_where(context, "level > %@", &ten, 1) == above);
    CHECK(count_where(context, "tag == 'abc'", NULL, 0) == abc);
    CHECK(count_where(context, "score < %@", &half, 1) == low);
    CHECK(count_where(context, "level == nil", NULL, 0) == no_level);
    CHECK(above > 0 && abc > 0 && low > 0 && no_level > 0);

    /* Refusals name the place and change nothing; null removes a key; undo reverts a set. */
    amber_object *book = books[0];
    amber_value value = integer(1);
    FAILS(amber_object_set_named(book, "Title", &value), AMBER_E_INVALID_VALUE, "Book.Title");
    CHECK(strstr(amber_last_error_message(), "clashes with the modelled title") != NULL);
    FAILS(amber_object_set_named(book, "2nd", &value), AMBER_E_INVALID_VALUE, "Book.2nd");
    amber_value id = {.type = AMBER_VALUE_OBJECT_ID};
    char *uri = NULL;
    size_t uri_length = 0;
    OK(amber_object_uri(&uri, &uri_length, book));
    id.v.text.data = uri;
    id.v.text.length = uri_length;
    FAILS(amber_object_set_named(book, "link", &id), AMBER_E_INVALID_VALUE, "Book.link");
    amber_free(uri);
    check_book(book, &samples[0]);
    OK(amber_context_enable_undo(context, 0));
    value = text("signed");
    OK(amber_object_set_named(book, "note", &value));
    int32_t done = 0;
    OK(amber_context_undo(&done, context));
    CHECK(done == 1);
    check_book(book, &samples[0]);
    amber_value null = {.type = AMBER_VALUE_NULL};
    OK(amber_object_set_named(book, "level", &null));
    samples[0].present[0] = 0;
    check_book(book, &samples[0]);
    amber_object *shelf = NULL;
    OK(amber_context_insert(&shelf, context, shelf_entity));
    FAILS(amber_object_set_named(shelf, "colour", &value), AMBER_E_NOT_FOUND, "Shelf.colour: no such attribute");
    char *none = (char *)"untouched";
    OK(amber_object_extended_keys(&none, &count, shelf));
    CHECK(none == NULL && count == 0);

    OK(amber_objects_release((amber_object *const *)books, BOOKS));
    amber_free(books);
    OK(amber_object_release(shelf));
    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));
    remove(path);
    return report();
}
