/* Derived attributes through the C API: declared with the builder
 * (spec.derived), refused with their position when malformed, described by
 * amber_attribute_derivation, refused at set, and kept by the store: an
 * author's book count and page total, after every one of 150 random saves,
 * equal counts kept beside them in plain arrays; a canonical title searched
 * with CONTAINS[cd] finds what the title itself does. */
#define _POSIX_C_SOURCE 200809L /* rand_r */
#include <amber.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { AUTHORS = 5, BOOKS = 400 };

static amber_model *model;
static amber_entity *author_entity, *book_entity;
static amber_attribute *name, *book_count, *page_total, *title, *canonical_title, *pages;
static amber_relationship *author_of;

/* Adds attribute `attribute` of `type`, derived by the expression `derived`. */
static void add_derived(amber_model_builder *builder, const char *entity, const char *attribute, int32_t type, const char *derived) {
    amber_attribute_spec spec = AMBER_ATTRIBUTE_SPEC_INIT;
    spec.name = attribute;
    spec.type = type;
    spec.derived = derived;
    OK(amber_model_builder_add_attribute(builder, entity, &spec));
}

/* The library model, with `count_expression` as Author.bookCount's derivation. */
static amber_status build(amber_model **out, const char *count_expression) {
    amber_model_builder *builder = NULL;
    OK(amber_model_builder_new(&builder));
    OK(amber_model_builder_add_entity(builder, "Author"));
    OK(amber_model_builder_add_entity(builder, "Book"));
    add_attribute(builder, "Author", "name", AMBER_TYPE_STRING);
    add_derived(builder, "Author", "bookCount", AMBER_TYPE_INTEGER64, count_expression);
    add_derived(builder, "Author", "pageTotal", AMBER_TYPE_INTEGER64, "books.@sum.pages");
    add_attribute(builder, "Book", "title", AMBER_TYPE_STRING);
    add_derived(builder, "Book", "canonicalTitle", AMBER_TYPE_STRING, "canonical:(title)");
    add_attribute(builder, "Book", "pages", AMBER_TYPE_INTEGER64);
    amber_relationship_spec books = AMBER_RELATIONSHIP_SPEC_INIT;
    books.name = "books";
    books.destination = "Book";
    books.inverse = "author";
    books.flags = AMBER_RELATIONSHIP_TO_MANY;
    OK(amber_model_builder_add_relationship(builder, "Author", &books));
    amber_relationship_spec author = AMBER_RELATIONSHIP_SPEC_INIT;
    author.name = "author";
    author.destination = "Author";
    author.inverse = "books";
    OK(amber_model_builder_add_relationship(builder, "Book", &author));
    amber_status status = amber_model_builder_bind(out, builder, NULL);
    OK(amber_model_builder_free(builder));
    return status;
}

static void test_model(void) {
    amber_model *bad = NULL;
    FAILS(build(&bad, "books.@cuont"), AMBER_E_INVALID_MODEL, "Author.bookCount");
    CHECK(strstr(amber_last_error_message(), "at 7") != NULL && strstr(amber_last_error_message(), "@count") != NULL);
    FAILS(build(&bad, "canonical:(name)"), AMBER_E_INVALID_MODEL, "must be string");

    OK(build(&model, "books.@count"));
    OK(amber_model_entity(&author_entity, model, "Author"));
    OK(amber_model_entity(&book_entity, model, "Book"));
    OK(amber_entity_attribute(&name, author_entity, "name"));
    OK(amber_entity_attribute(&book_count, author_entity, "bookCount"));
    OK(amber_entity_attribute(&page_total, author_entity, "pageTotal"));
    OK(amber_entity_attribute(&title, book_entity, "title"));
    OK(amber_entity_attribute(&canonical_title, book_entity, "canonicalTitle"));
    OK(amber_entity_attribute(&pages, book_entity, "pages"));
    OK(amber_entity_relationship(&author_of, book_entity, "author"));
    const char *expression = "unset";
    OK(amber_attribute_derivation(&expression, canonical_title));
    CHECK(expression != NULL && strcmp(expression, "canonical:(title)") == 0);
    OK(amber_attribute_derivation(&expression, title));
    CHECK(expression == NULL);
}

static int64_t get_int(amber_object *object, amber_attribute *attribute) {
    amber_value value;
    OK(amber_object_get(&value, object, attribute));
    int64_t result = value.type == AMBER_VALUE_INT ? value.v.integer : -1;
    amber_value_release(&value);
    return result;
}

static size_t count_where(amber_context *context, const char *predicate, const char *argument) {
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Book";
    request.predicate = predicate;
    amber_value value = text(argument);
    request.arguments = &value;
    request.argument_count = 1;
    amber_object **objects = NULL;
    size_t count = 0;
    OK(amber_context_fetch(&objects, &count, context, &request));
    amber_free(objects);
    return count;
}

static void test_store(const char *path) {
    amber_store *store = NULL;
    amber_context *context = NULL;
    OK(amber_store_open(&store, path, model));
    OK(amber_context_new(&context, store));
    amber_object *authors[AUTHORS], *books[BOOKS];
    int owner[BOOKS];
    int64_t book_pages[BOOKS];
    size_t book_total = 0;
    for (int i = 0; i < AUTHORS; i++) {
        OK(amber_context_insert(&authors[i], context, author_entity));
        char label[16];
        snprintf(label, sizeof label, "Author %d", i);
        amber_value value = text(label);
        OK(amber_object_set(authors[i], name, &value));
    }
    amber_value three = integer(3);
    FAILS(amber_object_set(authors[0], book_count, &three), AMBER_E_INVALID_VALUE, "Author.bookCount");
    CHECK(strstr(amber_last_error_message(), "derived") != NULL);

    static const char *const titles[] = {"Crème Brûlée", "CREME brulee", "Ἡ Ὀδύσσεια", "Straße", "Łódź", "Zürich", "plain"};
    unsigned seed = 15;
    for (int step = 0; step < 150; step++) {
        int changes = 1 + (int)(rand_r(&seed) % 4);
        for (int c = 0; c < changes; c++) {
            int choice = (int)(rand_r(&seed) % 4);
            if ((choice == 0 || book_total == 0) && book_total < BOOKS) {
                size_t b = book_total++;
                OK(amber_context_insert(&books[b], context, book_entity));
                amber_value value = text(titles[rand_r(&seed) % (sizeof titles / sizeof *titles)]);
                OK(amber_object_set(books[b], title, &value));
                book_pages[b] = 1 + rand_r(&seed) % 500;
                value = integer(book_pages[b]);
                OK(amber_object_set(books[b], pages, &value));
                owner[b] = (int)(rand_r(&seed) % (AUTHORS + 1)) - 1;
                OK(amber_object_set_object(books[b], author_of, owner[b] < 0 ? NULL : authors[owner[b]]));
            } else if (choice == 1) {
                size_t b = rand_r(&seed) % book_total;
                owner[b] = (int)(rand_r(&seed) % (AUTHORS + 1)) - 1;
                OK(amber_object_set_object(books[b], author_of, owner[b] < 0 ? NULL : authors[owner[b]]));
            } else if (choice == 2) {
                size_t b = rand_r(&seed) % book_total;
                book_pages[b] = 1 + rand_r(&seed) % 500;
                amber_value value = integer(book_pages[b]);
                OK(amber_object_set(books[b], pages, &value));
            } else if (book_total > 0) {
                /* Deleting the last book keeps the arrays dense. */
                size_t b = --book_total;
                OK(amber_context_delete(context, books[b]));
            }
        }
        OK(amber_context_save(context));
        for (int a = 0; a < AUTHORS; a++) {
            int64_t count = 0, total = 0;
            for (size_t b = 0; b < book_total; b++) {
                if (owner[b] == a) {
                    count++;
                    total += book_pages[b];
                }
            }
            CHECK(get_int(authors[a], book_count) == count);
            CHECK(get_int(authors[a], page_total) == total);
        }
    }
    static const char *const queries[] = {"creme", "BRÛLÉE", "odyss", "ὀδύσ", "strasse", "lodz", "ZUR", "ain"};
    size_t found = 0;
    for (size_t q = 0; q < sizeof queries / sizeof *queries; q++) {
        size_t count = count_where(context, "canonicalTitle CONTAINS[cd] %@", queries[q]);
        CHECK(count == count_where(context, "title CONTAINS[cd] %@", queries[q]));
        found += count;
    }
    CHECK(found > 0);
    OK(amber_context_free(context));
    OK(amber_store_close(store));
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "derived_test.amber";
    remove(path);
    test_model();
    test_store(path);
    OK(amber_model_free(model));
    remove(path);
    return report();
}
