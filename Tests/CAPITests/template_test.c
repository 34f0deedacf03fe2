/* Fetch request templates through the C API: added with the builder,
 * refused at bind with their place, described by amber_model_template_at,
 * and fetched through amber_fetch_request.template_name with variables:
 * for every author and every page threshold, a template fetch returns
 * exactly the books a brute-force loop over plain arrays picks, in the
 * template's order or the one the request gives. Missing, extra, repeated
 * and misplaced variables fail naming the variable. A fetched property,
 * added with the builder, reads what a loop picks for every author. */
#define _POSIX_C_SOURCE 200809L /* rand_r */
#include <amber.h>

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { AUTHORS = 4, BOOKS = 200 };

static amber_model *model;
static amber_attribute *pages_attribute;

/* The library model with its templates and fetched property, and with `extra` (if not NULL) added
 * last: a template, or (with no entity) the fetched property's name and predicate instead. */
static amber_status build(amber_model **out, const amber_template_spec *extra) {
    amber_model_builder *builder = NULL;
    OK(amber_model_builder_new(&builder));
    OK(amber_model_builder_add_entity(builder, "Author"));
    OK(amber_model_builder_add_entity(builder, "Book"));
    add_attribute(builder, "Author", "name", AMBER_TYPE_STRING);
    add_attribute(builder, "Book", "title", AMBER_TYPE_STRING);
    add_attribute(builder, "Book", "pages", AMBER_TYPE_INTEGER32);
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

    amber_sort by_pages[] = {{"pages", 1, 0}, {"title", 0, 0}};
    amber_template_spec by_author = AMBER_TEMPLATE_SPEC_INIT;
    by_author.name = "booksByAuthor";
    by_author.entity = "Book";
    by_author.predicate = "author.name == $AUTHOR AND pages >= $MIN";
    by_author.sort = by_pages;
    by_author.sort_count = 2;
    OK(amber_model_builder_add_template(builder, &by_author));
    amber_template_spec longest = AMBER_TEMPLATE_SPEC_INIT;
    longest.name = "longest";
    longest.entity = "Book";
    longest.sort = by_pages;
    longest.sort_count = 1;
    longest.limit = 3;
    OK(amber_model_builder_add_template(builder, &longest));
    amber_template_spec negative = AMBER_TEMPLATE_SPEC_INIT;
    negative.name = "negative";
    negative.entity = "Book";
    negative.limit = -1;
    FAILS(amber_model_builder_add_template(builder, &negative), AMBER_E_INVALID_VALUE, "spec->limit");
    /* A fetched property: the same kind of named request, read on an author. */
    amber_sort longest_first = {"pages", 1, 0};
    amber_template_spec long_books = AMBER_TEMPLATE_SPEC_INIT;
    long_books.name = extra && extra->entity == NULL ? extra->name : "longBooks";
    long_books.entity = "Book";
    long_books.predicate = extra && extra->entity == NULL ? extra->predicate : "author == $FETCH_SOURCE AND pages >= 30";
    long_books.sort = &longest_first;
    long_books.sort_count = 1;
    OK(amber_model_builder_add_fetched_property(builder, "Author", &long_books));
    FAILS(amber_model_builder_add_fetched_property(builder, "Nobody", &long_books), AMBER_E_NOT_FOUND, "Nobody");
    /* One that reads its user info; a template has none. */
    const char *keys[] = {"prefix"}, *values[] = {"Book 00"};
    amber_template_spec titled = AMBER_TEMPLATE_SPEC_INIT;
    titled.name = "firstTen";
    titled.entity = "Book";
    titled.predicate = "author == $FETCH_SOURCE AND title BEGINSWITH $FETCHED_PROPERTY.userInfo.prefix";
    titled.user_info_keys = keys;
    titled.user_info_values = values;
    titled.user_info_count = 1;
    OK(amber_model_builder_add_fetched_property(builder, "Author", &titled));
    titled.entity = "Book";
    FAILS(amber_model_builder_add_template(builder, &titled), AMBER_E_INVALID_VALUE, "user_info_count");
    if (extra && extra->entity) OK(amber_model_builder_add_template(builder, extra));
    amber_status status = amber_model_builder_bind(out, builder, NULL);
    OK(amber_model_builder_free(builder));
    return status;
}

static void test_model(void) {
    amber_model *bad = NULL;
    amber_template_spec typo = AMBER_TEMPLATE_SPEC_INIT;
    typo.name = "typo";
    typo.entity = "Book";
    typo.predicate = "author.nmae == $A";
    FAILS(build(&bad, &typo), AMBER_E_INVALID_MODEL, "templates.typo: predicate, position 1: Author.nmae");
    CHECK(strstr(amber_last_error_message(), "did you mean name?") != NULL);
    typo.predicate = "title == $";
    FAILS(build(&bad, &typo), AMBER_E_INVALID_MODEL, "position 10: $ must start a variable name");
    amber_template_spec fetched = AMBER_TEMPLATE_SPEC_INIT;
    fetched.name = "badBooks";
    fetched.predicate = "pages >= $MIN";
    FAILS(build(&bad, &fetched), AMBER_E_INVALID_MODEL, "Author.badBooks: $MIN");

    OK(build(&model, NULL));
    size_t count = 0;
    OK(amber_model_template_count(&count, model));
    CHECK(count == 2);
    amber_template_spec spec = AMBER_TEMPLATE_SPEC_INIT;
    const char *const *variables = NULL;
    size_t variable_count = 0;
    OK(amber_model_template_at(&spec, &variables, &variable_count, model, 0));
    CHECK(strcmp(spec.name, "booksByAuthor") == 0 && strcmp(spec.entity, "Book") == 0);
    CHECK(strcmp(spec.predicate, "author.name == $AUTHOR AND pages >= $MIN") == 0);
    CHECK(spec.sort_count == 2 && strcmp(spec.sort[0].key, "pages") == 0 && spec.sort[0].descending == 1);
    CHECK(strcmp(spec.sort[1].key, "title") == 0 && spec.sort[1].descending == 0 && spec.limit == 0);
    CHECK(variable_count == 2 && strcmp(variables[0], "AUTHOR") == 0 && strcmp(variables[1], "MIN") == 0);
    OK(amber_model_template_at(&spec, NULL, NULL, model, 1));
    CHECK(strcmp(spec.name, "longest") == 0 && spec.predicate == NULL && spec.limit == 3);
    FAILS(amber_model_template_at(&spec, NULL, NULL, model, 2), AMBER_E_NOT_FOUND, "2 templates");
    /* A caller built before the spec had user info passes a smaller struct: read and written only as far as it goes. */
    amber_template_spec old = AMBER_TEMPLATE_SPEC_INIT;
    old.size = offsetof(amber_template_spec, user_info_keys);
    old.user_info_count = 99; /* past the old struct: never touched */
    OK(amber_model_template_at(&old, NULL, NULL, model, 1));
    CHECK(strcmp(old.name, "longest") == 0 && old.limit == 3 && old.size == offsetof(amber_template_spec, user_info_keys));
    CHECK(old.user_info_count == 99);
    amber_entity *book = NULL;
    OK(amber_model_entity(&book, model, "Book"));
    OK(amber_entity_attribute(&pages_attribute, book, "pages"));
}

static int64_t pages_of(amber_object *object) {
    amber_value value;
    OK(amber_object_get(&value, object, pages_attribute));
    int64_t result = value.type == AMBER_VALUE_INT ? value.v.integer : -1;
    amber_value_release(&value);
    return result;
}

/* A fetch of template `name` with `count` variables. */
static amber_status fetch(amber_object ***out, size_t *out_count, amber_context *context, const char *name,
                          const char *const *names, const amber_value *values, size_t count) {
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.template_name = name;
    request.variable_names = names;
    request.variable_values = values;
    request.variable_count = count;
    return amber_context_fetch(out, out_count, context, &request);
}

static void test_fetch(const char *path) {
    amber_store *store = NULL;
    amber_context *context = NULL;
    OK(amber_store_open(&store, path, model));
    OK(amber_context_new(&context, store));
    amber_entity *author_entity = NULL, *book_entity = NULL;
    amber_attribute *name = NULL, *title = NULL;
    amber_relationship *author_of = NULL;
    OK(amber_model_entity(&author_entity, model, "Author"));
    OK(amber_model_entity(&book_entity, model, "Book"));
    OK(amber_entity_attribute(&name, author_entity, "name"));
    OK(amber_entity_attribute(&title, book_entity, "title"));
    OK(amber_entity_relationship(&author_of, book_entity, "author"));
    static const char *const names[AUTHORS] = {"Ada", "Bo", "Chidi", "Dana"};
    amber_object *authors[AUTHORS];
    for (int a = 0; a < AUTHORS; a++) {
        OK(amber_context_insert(&authors[a], context, author_entity));
        amber_value value = text(names[a]);
        OK(amber_object_set(authors[a], name, &value));
    }
    int owner[BOOKS];
    int64_t pages[BOOKS];
    unsigned seed = 15;
    for (int b = 0; b < BOOKS; b++) {
        amber_object *made = NULL;
        OK(amber_context_insert(&made, context, book_entity));
        char label[16];
        snprintf(label, sizeof label, "Book %03d", b);
        amber_value value = text(label);
        OK(amber_object_set(made, title, &value));
        pages[b] = 1 + rand_r(&seed) % 60;
        value = integer(pages[b]);
        OK(amber_object_set(made, pages_attribute, &value));
        owner[b] = (int)(rand_r(&seed) % AUTHORS);
        OK(amber_object_set_object(made, author_of, authors[owner[b]]));
    }
    OK(amber_context_save(context));

    const char *variable_names[] = {"AUTHOR", "MIN"};
    for (int a = 0; a < AUTHORS; a++) {
        for (int64_t min = 0; min <= 60; min += 7) {
            amber_value values[] = {text(names[a]), integer(min)};
            amber_object **objects = NULL;
            size_t count = 0;
            OK(fetch(&objects, &count, context, "booksByAuthor", variable_names, values, 2));
            size_t expected = 0;
            for (int b = 0; b < BOOKS; b++) expected += owner[b] == a && pages[b] >= min;
            CHECK(count == expected);
            for (size_t i = 0; i < count; i++) {
                CHECK(pages_of(objects[i]) >= min);
                if (i > 0) CHECK(pages_of(objects[i - 1]) >= pages_of(objects[i])); /* the template's order */
            }
            amber_free(objects);
            /* The same through amber_context_count. */
            amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
            request.template_name = "booksByAuthor";
            request.variable_names = variable_names;
            request.variable_values = values;
            request.variable_count = 2;
            int64_t counted = -1;
            OK(amber_context_count(&counted, context, &request));
            CHECK(counted == (int64_t)expected);
        }
    }
    /* Each author's fetched property: the books a loop picks, longest first. */
    for (int a = 0; a < AUTHORS; a++) {
        amber_object **found = NULL;
        size_t found_count = 0;
        OK(amber_object_fetched_objects(&found, &found_count, authors[a], "longBooks"));
        size_t expected = 0;
        for (int b = 0; b < BOOKS; b++) expected += owner[b] == a && pages[b] >= 30;
        CHECK(found_count == expected && expected > 0);
        for (size_t i = 0; i < found_count; i++) {
            CHECK(pages_of(found[i]) >= 30);
            if (i > 0) CHECK(pages_of(found[i - 1]) >= pages_of(found[i]));
        }
        amber_free(found);
    }
    /* The user info's prefix: Book 000 to Book 009, whoever wrote them. */
    size_t first_ten = 0;
    for (int a = 0; a < AUTHORS; a++) {
        amber_object **found = NULL;
        size_t found_count = 0;
        OK(amber_object_fetched_objects(&found, &found_count, authors[a], "firstTen"));
        size_t expected = 0;
        for (int b = 0; b < 10; b++) expected += owner[b] == a;
        CHECK(found_count == expected);
        first_ten += found_count;
        amber_free(found);
    }
    CHECK(first_ten == 10);
    amber_object **none = NULL;
    size_t none_count = 0;
    FAILS(amber_object_fetched_objects(&none, &none_count, authors[0], "longBook"), AMBER_E_NOT_FOUND, "Author.longBook");
    CHECK(strstr(amber_last_error_message(), "longBooks") != NULL);
    FAILS(amber_object_fetched_objects(&none, &none_count, authors[0], NULL), AMBER_E_NULL_ARGUMENT, "name");

    /* The template's limit, then an order and limit the request gives instead. */
    int64_t longest = 0, shortest = 100;
    for (int b = 0; b < BOOKS; b++) {
        if (pages[b] > longest) longest = pages[b];
        if (pages[b] < shortest) shortest = pages[b];
    }
    amber_object **objects = NULL;
    size_t count = 0;
    OK(fetch(&objects, &count, context, "longest", NULL, NULL, 0));
    CHECK(count == 3 && pages_of(objects[0]) == longest);
    amber_free(objects);
    amber_sort ascending = {"pages", 0, 0};
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.template_name = "longest";
    request.entity = "Book";
    request.sort = &ascending;
    request.sort_count = 1;
    request.limit = 1;
    OK(amber_context_fetch(&objects, &count, context, &request));
    CHECK(count == 1 && pages_of(objects[0]) == shortest);
    amber_free(objects);

    /* Mistakes, each naming what is wrong. */
    amber_value values[] = {text("Ada"), integer(3), integer(4)};
    const char *misspelt[] = {"AUTHOR", "MIN", "MNI"};
    FAILS(fetch(&objects, &count, context, "booksByAuthor", variable_names, values, 1), AMBER_E_INVALID_PREDICATE, "$MIN");
    CHECK(strcmp(amber_last_error_origin(), "$MIN") == 0);
    FAILS(fetch(&objects, &count, context, "booksByAuthor", misspelt, values, 3), AMBER_E_INVALID_PREDICATE, "did you mean $MIN?");
    CHECK(strcmp(amber_last_error_origin(), "$MNI") == 0);
    const char *twice[] = {"MIN", "MIN"};
    FAILS(fetch(&objects, &count, context, "booksByAuthor", twice, values + 1, 2), AMBER_E_INVALID_VALUE, "$MIN is given twice");
    FAILS(fetch(&objects, &count, context, "booksByAuthr", NULL, NULL, 0), AMBER_E_NOT_FOUND, "did you mean booksByAuthor?");
    FAILS(fetch(&objects, &count, context, "longest", variable_names, values, 1), AMBER_E_INVALID_PREDICATE, "the template has no predicate");
    request = (amber_fetch_request)AMBER_FETCH_REQUEST_INIT;
    request.template_name = "longest";
    request.entity = "Author";
    FAILS(amber_context_fetch(&objects, &count, context, &request), AMBER_E_INVALID_VALUE, "template longest fetches Book");
    request.entity = NULL;
    request.predicate = "pages > 3";
    FAILS(amber_context_fetch(&objects, &count, context, &request), AMBER_E_INVALID_VALUE, "brings its own predicate");

    /* Variables in a plain request's predicate. */
    request = (amber_fetch_request)AMBER_FETCH_REQUEST_INIT;
    request.entity = "Book";
    request.predicate = "pages == $P";
    FAILS(amber_context_fetch(&objects, &count, context, &request), AMBER_E_INVALID_PREDICATE, "$P");
    const char *p[] = {"P"};
    amber_value value = integer(pages[0]);
    request.variable_names = p;
    request.variable_values = &value;
    request.variable_count = 1;
    OK(amber_context_fetch(&objects, &count, context, &request));
    size_t expected = 0;
    for (int b = 0; b < BOOKS; b++) expected += pages[b] == pages[0];
    CHECK(count == expected);
    amber_free(objects);
    OK(amber_context_free(context));
    OK(amber_store_close(store));
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "template_test.amber";
    remove(path);
    test_model();
    test_fetch(path);
    OK(amber_model_free(model));
    remove(path);
    return report();
}
