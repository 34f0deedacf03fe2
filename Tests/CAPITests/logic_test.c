/* Model logic in code through the C API: validators and lifecycle hooks as
 * callbacks with userdata, on the generated accessors of library.h (made by
 * the test command from Tests/AmberTypedTests/Library.amber.json). */
#include <amber.h>
#include <library.h>


#include "check.h"

/* What the callbacks share: the handles, and counts of each call. */
typedef struct hooks {
    library_handles h;
    amber_context *context; /* the context saving: did_save checks amber_object_context */
    int inserted, fetched, will_save, did_save, prepared, faulted, freed;
} hooks;

/* Whether the book's title is `expected`. */
static int titled(hooks *state, amber_object *book, const char *expected) {
    char *title = NULL;
    size_t length = 0;
    int same = book_title(&title, &length, &state->h, book) == AMBER_OK && title != NULL && strcmp(title, expected) == 0;
    amber_free(title);
    return same;
}

static void awake_from_insert(amber_object *book, void *userdata) {
    hooks *state = userdata;
    state->inserted++;
    book_set_pages(&state->h, book, 1);
}

static void awake_from_fetch(amber_object *book, void *userdata) {
    (void)book;
    ((hooks *)userdata)->fetched++;
}

static int32_t validate_value(amber_problems *problems, amber_object *book, const char *key, const amber_value *value,
                              void *userdata) {
    (void)book, (void)userdata;
    if (strcmp(key, "title") == 0 && value->type == AMBER_VALUE_STRING && value->v.text.length == 0) {
        return amber_problems_add(problems, NULL, "must not be empty");
    }
    return 0;
}

static int32_t validate(amber_problems *problems, amber_object *book, int32_t change, void *userdata) {
    hooks *state = userdata;
    int32_t pages = 0;
    int has_pages = 0;
    if (change == AMBER_CHANGE_INSERT && book_pages(&pages, &has_pages, &state->h, book) == AMBER_OK && pages > 5000) {
        if (amber_problems_add(problems, "pages", "more than 5000 pages") != AMBER_OK) return 1;
        if (amber_problems_add(problems, NULL, "a book that long needs an editor") != AMBER_OK) return 1;
    }
    return 0;
}

static int32_t will_save(amber_object *book, void *userdata) {
    hooks *state = userdata;
    state->will_save++;
    if (titled(state, book, "explode")) {
        amber_logic_error("this book explodes");
        return 7;
    }
    /* A change to another object, saved in the same transaction. */
    amber_object *author = NULL;
    if (book_author(&author, &state->h, book) == AMBER_OK && author != NULL) return author_set_born(&state->h, author, 86400.0);
    return 0;
}

static void did_save(amber_object *book, void *userdata) {
    hooks *state = userdata;
    amber_context *owner = NULL;
    if (amber_object_context(&owner, book) == AMBER_OK && owner == state->context) state->did_save++;
}

static int32_t prepare_for_deletion(amber_object *book, void *userdata) {
    hooks *state = userdata;
    state->prepared++;
    return titled(state, book, "keep") ? 1 : 0;
}

static void did_turn_into_fault(amber_object *book, void *userdata) {
    (void)book;
    ((hooks *)userdata)->faulted++;
}

static void free_hooks(void *userdata) { ((hooks *)userdata)->freed++; }

/* Whether the last error lists a problem at `place` with `rule` and `message`. */
static int lists(const char *place, const char *rule, const char *message) {
    for (size_t i = 0; i < amber_last_error_problem_count(); i++) {
        const amber_problem *problem = amber_last_error_problem(i);
        if (strcmp(problem->place, place) == 0 && strcmp(problem->rule, rule) == 0 && strcmp(problem->message, message) == 0) return 1;
    }
    return 0;
}

static void test_logic(void) {
    amber_model *model = NULL;
    amber_store *store = NULL;
    amber_context *context = NULL, *other = NULL;
    amber_object *book = NULL, *author = NULL, *novel = NULL;
    const char *place = "unset";
    hooks state;
    memset(&state, 0, sizeof state);
    OK(amber_model_from_file(&model, "Tests/AmberTypedTests/Library.amber.json", NULL));
    OK(library_resolve(&state.h, &place, model));

    amber_object_logic logic = AMBER_OBJECT_LOGIC_INIT;
    logic.awake_from_insert = awake_from_insert;
    logic.awake_from_fetch = awake_from_fetch;
    logic.validate_value = validate_value;
    logic.validate = validate;
    logic.will_save = will_save;
    logic.did_save = did_save;
    logic.prepare_for_deletion = prepare_for_deletion;
    logic.did_turn_into_fault = did_turn_into_fault;
    amber_object_logic unknown = logic;
    unknown.version = 99;
    hooks rejected;
    memset(&rejected, 0, sizeof rejected);
    FAILS(amber_model_set_logic(model, state.h.book.entity, &unknown, &rejected, free_hooks), AMBER_E_INVALID_VALUE, "version 99");
    CHECK(rejected.freed == 1);  /* freed at once when the call fails */
    OK(amber_model_set_logic(model, state.h.book.entity, &logic, &state, free_hooks));

    OK(amber_store_open(&store, NULL, model));
    OK(amber_context_new(&context, store));
    state.context = context;
    OK(amber_context_insert(&book, context, state.h.book.entity));
    int32_t pages = 0;
    int has_pages = 0;
    OK(book_pages(&pages, &has_pages, &state.h, book));
    CHECK(state.inserted == 1 && has_pages && pages == 1);
    OK(book_set_title(&state.h, book, "", 0));
    OK(book_set_pages(&state.h, book, 9000));
    OK(amber_context_insert(&novel, context, state.h.novel.entity));  /* a Novel runs Book's logic */
    CHECK(state.inserted == 2);
    OK(book_set_title(&state.h, novel, "", 0));

    /* Every problem at once, each named, with the declared rules' problems. */
    FAILS(amber_context_save(context), AMBER_E_SAVE_FAILED, "");
    CHECK(lists("Book.title", "validation", "must not be empty"));
    CHECK(lists("Novel.title", "validation", "must not be empty"));
    CHECK(lists("Book.pages", "validation", "more than 5000 pages"));
    CHECK(lists("Book", "validation", "a book that long needs an editor"));
    CHECK(amber_last_error_problem_count() == 4);

    /* A hook that fails stops the save; every change stays. */
    OK(book_set_title(&state.h, book, "explode", 7));
    OK(book_set_title(&state.h, novel, "Emma", 4));
    FAILS(amber_context_save(context), AMBER_E_HOOK, "this book explodes");
    CHECK(strcmp(amber_last_error_origin(), "willSave") == 0);
    OK(amber_context_new(&other, store));
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Book";
    int64_t stored = 99;
    OK(amber_context_count(&stored, other, &request));
    CHECK(stored == 0);
    size_t count = 0;

    /* Fixed, it saves with the change will_save made to the author. */
    OK(book_set_title(&state.h, book, "Dune", 4));
    OK(book_set_pages(&state.h, book, 412));
    OK(amber_context_insert(&author, context, state.h.author.entity));
    OK(author_set_name(&state.h, author, "Frank", 5));
    OK(book_set_author(&state.h, book, author));
    state.did_save = 0;
    OK(amber_context_save(context));
    CHECK(state.did_save == 2);
    double born = 0;
    int has_born = 0;
    amber_object **authors = NULL;
    request.entity = "Author";
    OK(amber_context_fetch(&authors, &count, other, &request));
    CHECK(count == 1);
    if (count == 1) {
        OK(author_born(&born, &has_born, &state.h, authors[0]));
        CHECK(has_born && born == 86400.0);
    }
    amber_free(authors);
    amber_object **books = NULL;
    request.entity = "Book";
    OK(amber_context_fetch(&books, &count, other, &request));
    CHECK(count == 2 && state.fetched == 2);
    amber_free(books);

    /* prepare_for_deletion refuses: nothing is deleted. */
    OK(book_set_title(&state.h, novel, "keep", 4));
    OK(amber_context_save(context));
    state.prepared = 0;
    FAILS(amber_context_delete(context, novel), AMBER_E_HOOK, "returned status 1");
    CHECK(state.prepared == 1 && strcmp(amber_last_error_origin(), "prepareForDeletion") == 0);
    amber_object **deleted = NULL;
    OK(amber_context_pending_objects(&deleted, &count, context, AMBER_PENDING_DELETED));
    CHECK(count == 0);
    amber_free(deleted);
    state.faulted = 0;
    OK(amber_context_delete(context, book));
    OK(amber_context_save(context));
    CHECK(state.faulted == 1);
    OK(amber_context_refresh(context, novel, 0));
    CHECK(state.faulted == 2);

    /* Removed, the logic's userdata is freed once no one runs it. */
    CHECK(state.freed == 0);
    OK(amber_model_set_logic(model, state.h.book.entity, NULL, NULL, NULL));
    CHECK(state.freed == 1);
    OK(amber_context_insert(&book, context, state.h.book.entity));
    CHECK(state.inserted == 2);
    FAILS(amber_problems_add(NULL, NULL, "late"), AMBER_E_NULL_ARGUMENT, "problems");

    OK(amber_context_free(other));
    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));
}

int main(void) {
    test_logic();
    return report();
}
