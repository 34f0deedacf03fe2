/* Misuse never crashes the host: every wrong call returns its own code and
 * leaves a last error naming the place. Runs under valgrind in the suite. */
#include <amber.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>

#include "check.h"

static const char model_json[] =
    "{\"entities\": [{\"name\": \"Book\", \"attributes\": ["
    "  {\"name\": \"title\", \"type\": \"string\", \"optional\": false},"
    "  {\"name\": \"pages\", \"type\": \"integer16\"}"
    "], \"uniquenessConstraints\": [[\"title\"]]}]}";

static amber_model *model;
static amber_store *store;
static amber_context *context;
static amber_entity *book;
static amber_attribute *title, *pages;

static void set_up(void) {
    OK(amber_model_from_json(&model, model_json, sizeof model_json - 1, NULL));
    OK(amber_store_open(&store, NULL, model));
    OK(amber_context_new(&context, store));
    OK(amber_model_entity(&book, model, "Book"));
    OK(amber_entity_attribute(&title, book, "title"));
    OK(amber_entity_attribute(&pages, book, "pages"));
}

static void test_null_arguments(void) {
    amber_object *object = NULL;
    FAILS(amber_context_insert(NULL, context, book), AMBER_E_NULL_ARGUMENT, "out is NULL");
    FAILS(amber_context_insert(&object, NULL, book), AMBER_E_NULL_ARGUMENT, "context is NULL");
    FAILS(amber_context_insert(&object, context, NULL), AMBER_E_NULL_ARGUMENT, "entity is NULL");
    CHECK(object == NULL); /* outputs untouched on failure */
    FAILS(amber_model_from_json(&model, NULL, 0, NULL), AMBER_E_NULL_ARGUMENT, "json is NULL");
    FAILS(amber_model_entity(&book, model, NULL), AMBER_E_NULL_ARGUMENT, "name is NULL");
    OK(amber_context_insert(&object, context, book));
    FAILS(amber_object_set(object, title, NULL), AMBER_E_NULL_ARGUMENT, "value is NULL");
    amber_value v = {AMBER_VALUE_STRING, {.integer = 0}};
    v.v.text.data = NULL;
    v.v.text.length = 3;
    FAILS(amber_object_set(object, title, &v), AMBER_E_INVALID_VALUE, "a NULL pointer with length 3");
    FAILS(amber_context_fetch(NULL, NULL, context, NULL), AMBER_E_NULL_ARGUMENT, "is NULL");
    FAILS(amber_registry_register_transformer(NULL, "X", "Binary", "Binary", NULL, NULL, NULL, NULL, NULL),
          AMBER_E_NULL_ARGUMENT, "forward is NULL");
    /* size_t values no real caller means (SIZE_MAX from a bug): errors, not traps. */
    FAILS(amber_model_from_json(&model, "{}", (size_t)-1, NULL), AMBER_E_INVALID_VALUE, "not a sensible count");
    amber_fetch_request huge = {.size = sizeof(amber_fetch_request), .entity = "Book", .argument_count = (size_t)-1};
    amber_object **none = NULL;
    size_t found = 0;
    FAILS(amber_context_fetch(&none, &found, context, &huge), AMBER_E_INVALID_VALUE, "request->argument_count");
    amber_value broken = {AMBER_VALUE_STRING, {.integer = 0}};
    broken.v.text.data = "x";
    broken.v.text.length = (size_t)-2;
    FAILS(amber_object_set(object, title, &broken), AMBER_E_INVALID_VALUE, "a length of 18446744073709551614 bytes");
    amber_attribute *both[2] = {title, pages};
    FAILS(amber_context_insert_many(NULL, context, book, both, 2, &broken, (size_t)1 << 62), AMBER_E_INVALID_VALUE, "row_count");
    amber_value_release(NULL);
    amber_free(NULL);
    OK(amber_context_rollback(context));
}

static void test_stale_forged_and_wrong_type_handles(void) {
    amber_context *other = NULL;
    OK(amber_context_new(&other, store));
    amber_object *object = NULL;
    OK(amber_context_insert(&object, other, book));
    OK(amber_context_free(other));
    /* Released handles are stale: every use is an error, never a read of freed memory. */
    amber_value v = {AMBER_VALUE_INT, {.integer = 1}};
    FAILS(amber_object_set(object, pages, &v), AMBER_E_INVALID_HANDLE, "released (stale) handle");
    FAILS(amber_context_save(other), AMBER_E_INVALID_HANDLE, "released (stale) handle");
    FAILS(amber_context_free(other), AMBER_E_INVALID_HANDLE, "released (stale) handle");
    CHECK(strcmp(amber_last_error_origin(), "context") == 0);

    /* A slot is retired before its generation wraps: after 70,000 reuses the old handle is still stale. */
    for (int i = 0; i < 70000; i++) {
        amber_context *cycled = NULL;
        if (amber_context_new(&cycled, store) != AMBER_OK || amber_context_free(cycled) != AMBER_OK) {
            CHECK(0);
            break;
        }
        if (cycled == other) {
            CHECK(cycled != other);
            break;
        }
    }
    FAILS(amber_context_save(other), AMBER_E_INVALID_HANDLE, "released (stale) handle");

    /* Forged pointers are not handles. */
    amber_context *forged = (amber_context *)(uintptr_t)0x1234;
    FAILS(amber_context_save(forged), AMBER_E_INVALID_HANDLE, "not an Amber handle");
    int on_stack = 0;
    FAILS(amber_context_save((amber_context *)&on_stack), AMBER_E_INVALID_HANDLE, "not an Amber handle");

    /* A live handle of the wrong type. */
    FAILS(amber_context_save((amber_context *)store), AMBER_E_WRONG_HANDLE_TYPE, "is an amber_store, expected an amber_context");
    FAILS(amber_object_set((amber_object *)context, pages, &v), AMBER_E_WRONG_HANDLE_TYPE, "expected an amber_object");
    FAILS(amber_entity_attribute(&pages, (amber_entity *)title, "pages"), AMBER_E_WRONG_HANDLE_TYPE, "expected an amber_entity");
}

struct thread_result {
    amber_status save, insert, context_new, batch_free;
    amber_batch *batch;
    char message[256];
};

static void *use_from_other_thread(void *argument) {
    struct thread_result *result = argument;
    amber_object *object = NULL;
    amber_context *mine = NULL;
    result->save = amber_context_save(context);
    snprintf(result->message, sizeof result->message, "%s", amber_last_error_message());
    result->insert = amber_context_insert(&object, context, book);
    /* Any thread may make its own context over a shared store. */
    result->context_new = amber_context_new(&mine, store);
    if (result->context_new == AMBER_OK) result->context_new = amber_context_free(mine);
    result->batch_free = amber_batch_free(result->batch);
    return NULL;
}

static void test_wrong_thread(void) {
    struct thread_result result;
    memset(&result, 0, sizeof result);
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Book";
    const amber_value *values = NULL;
    size_t rows = 0;
    OK(amber_context_fetch_batch(&result.batch, &values, NULL, &rows, context, &request, &title, 1));
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, use_from_other_thread, &result) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK(result.save == AMBER_E_WRONG_THREAD);
    CHECK(strstr(result.message, "belongs to another thread") != NULL);
    CHECK(result.insert == AMBER_E_WRONG_THREAD);
    CHECK(result.context_new == AMBER_OK);
    CHECK(result.batch_free == AMBER_E_WRONG_THREAD); /* its objects leave the context on the context's thread */
    OK(amber_batch_free(result.batch));
    /* Each thread has its own last error: this thread's is untouched by the other's failures. */
    amber_clear_error();
    CHECK(amber_last_error_code() == AMBER_OK);
    CHECK(strcmp(amber_last_error_message(), "") == 0);
}

/* A thread makes a context, a report, a live query and a batch, then ends
 * without freeing them: nothing can use them any more, so another thread
 * frees them (refused while the thread lives). */
struct orphans {
    amber_context *context;
    amber_changes *changes;
    amber_live_query *query;
    amber_batch *batch;
};

static void *make_and_exit(void *argument) {
    struct orphans *made = argument;
    amber_object *object = NULL;
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Book";
    const amber_value *values = NULL;
    size_t rows = 0;
    OK(amber_context_new(&made->context, store));
    OK(amber_context_insert(&object, made->context, book));
    OK(amber_context_pending_changes(&made->changes, made->context));
    OK(amber_live_query_new(&made->query, made->context, &request, NULL, NULL, NULL, NULL));
    OK(amber_context_fetch_batch(&made->batch, &values, NULL, &rows, made->context, &request, &title, 1));
    return NULL;
}

static void *free_while_alive(void *argument) {
    struct orphans *made = argument;
    return (void *)(intptr_t)amber_context_free(made->context);
}

static void test_contexts_of_ended_threads(void) {
    struct orphans made;
    memset(&made, 0, sizeof made);
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, make_and_exit, &made) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    /* Used (not freed) from another thread: still refused. */
    FAILS(amber_context_save(made.context), AMBER_E_WRONG_THREAD, "belongs to another thread");
    OK(amber_batch_free(made.batch));
    OK(amber_changes_free(made.changes));
    OK(amber_live_query_free(made.query));
    OK(amber_context_free(made.context));
    FAILS(amber_context_save(made.context), AMBER_E_INVALID_HANDLE, "released");
    /* A context of a thread that is still running is that thread's to free. */
    amber_context *mine = NULL;
    OK(amber_context_new(&mine, store));
    made.context = mine;
    void *status = NULL;
    CHECK(pthread_create(&thread, NULL, free_while_alive, &made) == 0);
    CHECK(pthread_join(thread, &status) == 0);
    CHECK((amber_status)(intptr_t)status == AMBER_E_WRONG_THREAD);
    OK(amber_context_free(mine));
}

static void test_invalid_utf8_and_unknown_names(void) {
    amber_entity *entity = NULL;
    amber_attribute *attribute = NULL;
    FAILS(amber_model_entity(&entity, model, "B\xC3\x28k"), AMBER_E_INVALID_UTF8, "name is not valid UTF-8");
    FAILS(amber_model_entity(&entity, model, "Bok"), AMBER_E_NOT_FOUND, "Bok: no such entity; did you mean Book?");
    FAILS(amber_entity_attribute(&attribute, book, "titel"), AMBER_E_NOT_FOUND, "Book.titel: no such attribute; did you mean title?");
    CHECK(strcmp(amber_last_error_origin(), "Book.titel") == 0);
    CHECK(entity == NULL && attribute == NULL);

    amber_object *object = NULL;
    OK(amber_context_insert(&object, context, book));
    amber_value v;
    v.type = AMBER_VALUE_STRING;
    v.v.text.data = "bad \xFF byte";
    v.v.text.length = 10;
    FAILS(amber_object_set(object, title, &v), AMBER_E_INVALID_UTF8, "not valid UTF-8");
    FAILS(amber_object_set_named(object, "nope", &v), AMBER_E_NOT_FOUND, "Book.nope: no such attribute");
    v.type = 77;
    FAILS(amber_object_set(object, title, &v), AMBER_E_INVALID_VALUE, "unknown value type 77");
    v.type = AMBER_VALUE_INT;
    v.v.integer = 70000;
    FAILS(amber_object_set(object, pages, &v), AMBER_E_INVALID_VALUE, "Book.pages: expected Integer 16, given Integer 70000");
    CHECK(strcmp(amber_last_error_origin(), "Book.pages") == 0);
    FAILS(amber_object_set(object, title, &v), AMBER_E_INVALID_VALUE, "Book.title: expected String, given Integer 70000");
    amber_value got;
    OK(amber_object_get(&got, object, pages));
    CHECK(got.type == AMBER_VALUE_NULL); /* nothing changed */
    OK(amber_context_rollback(context));
}

static void test_bad_models_and_predicates(void) {
    amber_model *bad = NULL;
    static const char broken[] = "{\"entities\": [{\"name\": \"A\", \"attributes\": [{\"name\": \"x\", \"type\": \"strng\"}]}]}";
    FAILS(amber_model_from_json(&bad, broken, sizeof broken - 1, NULL), AMBER_E_INVALID_JSON, "did you mean string?");
    CHECK(strcmp(amber_last_error_origin(), "$.entities[0].attributes[0].type") == 0);
    static const char unbound[] = "{\"entities\": [{\"name\": \"A\", \"attributes\": ["
                                  "{\"name\": \"c\", \"type\": \"transformable\", \"valueClass\": \"Colour\"}]}]}";
    FAILS(amber_model_from_json(&bad, unbound, sizeof unbound - 1, NULL), AMBER_E_INVALID_MODEL, "A.c: Colour: no such value class");
    FAILS(amber_model_from_json(&bad, "{", 1, NULL), AMBER_E_INVALID_JSON, "not valid JSON");
    CHECK(bad == NULL);

    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Book";
    request.predicate = "title == ";
    amber_object **objects = NULL;
    size_t count = 0;
    FAILS(amber_context_fetch(&objects, &count, context, &request), AMBER_E_INVALID_PREDICATE, "position 10");
    request.predicate = "title == %@";
    FAILS(amber_context_fetch(&objects, &count, context, &request), AMBER_E_INVALID_PREDICATE, "%@ has no argument");
    /* An unknown name is not found (with the nearest name), not a syntax error; the origin is the position. */
    request.predicate = "title == 'x' AND titel == 'y'";
    FAILS(amber_context_fetch(&objects, &count, context, &request), AMBER_E_NOT_FOUND, "Book.titel: no such attribute; did you mean title?");
    CHECK(strcmp(amber_last_error_origin(), "position 18") == 0);
    request.predicate = NULL;
    request.entity = "Nope";
    FAILS(amber_context_fetch(&objects, &count, context, &request), AMBER_E_NOT_FOUND, "Nope: no such entity");
    FAILS(amber_store_open_existing(&store, NULL, "/nonexistent/file.amber", NULL), AMBER_E_NOT_A_STORE, "no such file");
}

static int frees;
static void count_free(void *userdata) { (void)userdata; frees++; }
static int32_t identity(amber_value *out, const amber_value *in, void *userdata) {
    (void)userdata;
    *out = *in;
    return AMBER_OK;
}
static int32_t failing(amber_value *out, const amber_value *in, void *userdata) {
    (void)out; (void)in; (void)userdata;
    return -42;
}
static int32_t lying(amber_value *out, const amber_value *in, void *userdata) {
    (void)in; (void)userdata;
    out->type = AMBER_VALUE_STRING; /* declares Binary */
    out->v.text.data = "liar";
    out->v.text.length = 4;
    return AMBER_OK;
}

static int32_t vanishing(amber_value *out, const amber_value *in, void *userdata) {
    (void)in; (void)userdata;
    out->type = AMBER_VALUE_NULL; /* a value turned into no value: it would be lost */
    return AMBER_OK;
}

static void test_transformers(void) {
    amber_registry *shared = NULL, *again = NULL;
    OK(amber_registry_shared(&shared));
    OK(amber_registry_free(shared)); /* allowed, and a no-op */
    OK(amber_registry_shared(&again));
    CHECK(again == shared);
    OK(amber_registry_declare_opaque(again, "MisuseTestOpaque", 0));
    amber_registry *registry = NULL;
    OK(amber_registry_new(&registry));
    /* userdata_free runs exactly once, also when registration fails. */
    frees = 0;
    FAILS(amber_registry_register_transformer(registry, "bad name!", "Binary", "Binary", identity, identity, NULL, NULL, count_free),
          AMBER_E_INVALID_DECLARATION, "a name must start with a letter");
    CHECK(frees == 1);
    OK(amber_registry_register_transformer(registry, "Same", "Binary", "Binary", identity, identity, NULL, NULL, count_free));
    FAILS(amber_registry_register_transformer(registry, "Same", "Binary", "Binary", identity, identity, NULL, NULL, count_free),
          AMBER_E_DUPLICATE, "transformer \"Same\" from C API refused: the name is already registered by C API");
    CHECK(frees == 2);
    /* Replacing, explicitly: the replaced one's userdata is freed once nothing uses it; built-ins stay. */
    OK(amber_registry_replace_transformer(registry, "Same", "Binary", "Binary", identity, identity, NULL, NULL, count_free));
    CHECK(frees == 3);
    FAILS(amber_registry_replace_transformer(registry, "JSON", "String", "String", identity, identity, NULL, NULL, count_free),
          AMBER_E_DUPLICATE, "transformer \"JSON\" from C API refused: the name is already registered by built-in");
    CHECK(frees == 4);
    /* A host names itself: what it registers from then on is its own in the messages; NULL restores "C API". */
    OK(amber_set_source_name("my host"));
    OK(amber_registry_register_transformer(registry, "Hosted", "Binary", "Binary", identity, identity, NULL, NULL, NULL));
    FAILS(amber_registry_register_transformer(registry, "Hosted", "Binary", "Binary", identity, identity, NULL, NULL, NULL),
          AMBER_E_DUPLICATE, "transformer \"Hosted\" from my host refused: the name is already registered by my host");
    FAILS(amber_set_source_name(""), AMBER_E_INVALID_VALUE, "name is empty");
    OK(amber_set_source_name(NULL));
    FAILS(amber_registry_register_transformer(registry, "Hosted", "Binary", "Binary", identity, identity, NULL, NULL, NULL),
          AMBER_E_DUPLICATE, "transformer \"Hosted\" from C API refused: the name is already registered by my host");
    FAILS(amber_registry_register_transformer(NULL, NULL, "Binary", "Binary", identity, NULL, NULL, NULL, count_free),
          AMBER_E_NULL_ARGUMENT, "name is NULL");
    CHECK(frees == 5);
    FAILS(amber_registry_register_transformer(registry, "X", "Binary", "Binary", NULL, NULL, NULL, NULL, count_free),
          AMBER_E_NULL_ARGUMENT, "forward is NULL");
    CHECK(frees == 6);

    /* A failing or lying transformer fails the save; pending changes are kept. */
    OK(amber_registry_register_transformer(registry, "Fails", "String", "Binary", failing, identity, NULL, NULL, NULL));
    OK(amber_registry_register_transformer(registry, "Lies", "String", "Binary", lying, identity, NULL, NULL, NULL));
    OK(amber_registry_register_transformer(registry, "Vanishes", "String", "Binary", vanishing, identity, NULL, NULL, NULL));
    static const char json[] = "{\"entities\": [{\"name\": \"Secret\", \"attributes\": ["
                               "{\"name\": \"a\", \"type\": \"transformable\", \"valueClass\": \"String\", \"transformer\": \"Fails\"},"
                               "{\"name\": \"b\", \"type\": \"transformable\", \"valueClass\": \"String\", \"transformer\": \"Lies\"},"
                               "{\"name\": \"c\", \"type\": \"transformable\", \"valueClass\": \"String\", \"transformer\": \"Vanishes\"}]}]}";
    amber_model *secret_model = NULL;
    OK(amber_model_from_json(&secret_model, json, sizeof json - 1, registry));
    amber_store *secret_store = NULL;
    amber_context *secret_context = NULL;
    OK(amber_store_open(&secret_store, NULL, secret_model));
    OK(amber_context_new(&secret_context, secret_store));
    amber_entity *secret = NULL;
    OK(amber_model_entity(&secret, secret_model, "Secret"));
    amber_object *object = NULL;
    OK(amber_context_insert(&object, secret_context, secret));
    amber_value v;
    v.type = AMBER_VALUE_STRING;
    v.v.text.data = "hush";
    v.v.text.length = 4;
    OK(amber_object_set_named(object, "a", &v));
    OK(amber_object_set_named(object, "b", &v));
    OK(amber_object_set_named(object, "c", &v));
    FAILS(amber_context_save(secret_context), AMBER_E_SAVE_FAILED, "Secret.a: transformer \"Fails\" (C API) forward failed: returned status -42");
    CHECK(strstr(amber_last_error_message(), "Secret.b: transformer \"Lies\" (C API) forward returned String \"liar\", but it declares Binary") != NULL);
    CHECK(strstr(amber_last_error_message(), "Secret.c: transformer \"Vanishes\" (C API) forward returned nil for a String value") != NULL);
    int32_t changes = 0;
    OK(amber_context_has_changes(&changes, secret_context));
    CHECK(changes == 1);
    amber_value got;
    OK(amber_object_get_named(&got, object, "a"));
    CHECK(got.type == AMBER_VALUE_STRING && got.v.text.length == 4 && memcmp(got.v.text.data, "hush", 4) == 0);
    amber_value_release(&got);
    CHECK(got.type == AMBER_VALUE_NULL);
    OK(amber_context_free(secret_context));
    OK(amber_store_close(secret_store));
    OK(amber_model_free(secret_model));
    OK(amber_registry_free(registry));
    CHECK(frees == 7); /* "Same" is freed with the registry */
}

static void test_failed_save_keeps_changes(void) {
    amber_object *first = NULL, *second = NULL;
    amber_value v;
    v.type = AMBER_VALUE_STRING;
    v.v.text.data = "Dune";
    v.v.text.length = 4;
    OK(amber_context_insert(&first, context, book));
    OK(amber_object_set(first, title, &v));
    OK(amber_context_insert(&second, context, book));
    OK(amber_object_set(second, title, &v));
    FAILS(amber_context_save(context), AMBER_E_SAVE_FAILED, "uniqueness constraint violated: another Book already has title = \"Dune\"");
    CHECK(strcmp(amber_last_error_origin(), "Book(title)") == 0);
    amber_object **inserted = NULL;
    size_t count = 0;
    OK(amber_context_pending_objects(&inserted, &count, context, AMBER_PENDING_INSERTED));
    CHECK(count == 2);
    amber_free(inserted);
    v.v.text.data = "Emma";
    OK(amber_object_set(second, title, &v));
    OK(amber_context_save(context));
    uint32_t state = 0;
    OK(amber_object_state(&state, second));
    CHECK(state == 0);
    FAILS(amber_context_pending_objects(&inserted, &count, context, 9), AMBER_E_INVALID_VALUE, "kind");
    OK(amber_context_delete(context, second));
    OK(amber_context_save(context));
    FAILS(amber_object_set(second, title, &v), AMBER_E_UNAVAILABLE, "the object is deleted");
    /* Once the deletion is saved the object is gone: reading it and deleting it again say so. */
    amber_value gone;
    FAILS(amber_object_get(&gone, second, title), AMBER_E_UNAVAILABLE, "the object was deleted, and the deletion saved");
    FAILS(amber_context_delete(context, second), AMBER_E_UNAVAILABLE, "the object was deleted, and the deletion saved");
}

/* Structs that can grow: the size the caller's header set is read, nothing more. */
static void test_sized_structs(void) {
    amber_object **objects = NULL;
    size_t count = 0;
    amber_fetch_request unset = {0};
    unset.entity = "Book";
    FAILS(amber_context_fetch(&objects, &count, context, &unset), AMBER_E_INVALID_VALUE, "AMBER_FETCH_REQUEST_INIT");
    amber_fetch_request older = AMBER_FETCH_REQUEST_INIT;
    older.entity = "Book";
    older.size = offsetof(amber_fetch_request, limit); /* shorter than the first published struct */
    FAILS(amber_context_fetch(&objects, &count, context, &older), AMBER_E_INVALID_VALUE, "request->size is");
    /* A caller from a newer header: unknown trailing fields left zero are fine, a set one is refused. */
    struct { amber_fetch_request known; int64_t future; } newer = {AMBER_FETCH_REQUEST_INIT, 0};
    newer.known.size = sizeof newer;
    newer.known.entity = "Book";
    OK(amber_context_fetch(&objects, &count, context, &newer.known));
    amber_free(objects);
    newer.future = 7;
    FAILS(amber_context_fetch(&objects, &count, context, &newer.known), AMBER_E_INVALID_VALUE, "does not know");
    amber_model_builder *builder = NULL;
    OK(amber_model_builder_new(&builder));
    OK(amber_model_builder_add_entity(builder, "Note"));
    amber_attribute_spec spec = {0};
    spec.name = "text";
    spec.type = AMBER_TYPE_STRING;
    FAILS(amber_model_builder_add_attribute(builder, "Note", &spec), AMBER_E_INVALID_VALUE, "AMBER_ATTRIBUTE_SPEC_INIT");
    spec.size = sizeof spec;
    OK(amber_model_builder_add_attribute(builder, "Note", &spec));
    OK(amber_model_builder_free(builder));
}

/* amber_object_release drops a handle; the object's pending changes stay in the context. */
static void test_object_release(void) {
    amber_context *scratch = NULL;
    amber_object *object = NULL, *again = NULL;
    OK(amber_context_new(&scratch, store));
    OK(amber_context_insert(&object, scratch, book));
    amber_value v = {AMBER_VALUE_STRING, {.integer = 0}};
    v.v.text.data = "Released";
    v.v.text.length = 8;
    OK(amber_object_set(object, title, &v));
    OK(amber_object_release(object));
    FAILS(amber_object_release(object), AMBER_E_INVALID_HANDLE, "released (stale) handle");
    FAILS(amber_object_set(object, title, &v), AMBER_E_INVALID_HANDLE, "released (stale) handle");
    FAILS(amber_object_release(NULL), AMBER_E_NULL_ARGUMENT, "object is NULL");
    FAILS(amber_object_release((amber_object *)book), AMBER_E_WRONG_HANDLE_TYPE, "expected an amber_object");
    int32_t dirty = 0;
    OK(amber_context_has_changes(&dirty, scratch));
    CHECK(dirty == 1);
    amber_object **inserted = NULL;
    size_t count = 0;
    OK(amber_context_pending_objects(&inserted, &count, scratch, AMBER_PENDING_INSERTED));
    CHECK(count == 1);
    if (count == 1) {
        again = inserted[0];
        CHECK(again != object); /* a new handle for the same object */
        amber_value out;
        OK(amber_object_get(&out, again, title));
        CHECK(out.type == AMBER_VALUE_STRING && out.v.text.length == 8);
        amber_value_release(&out);
    }
    amber_free(inserted);
    int64_t key = 0;
    FAILS(amber_object_primary_key(&key, again), AMBER_E_UNAVAILABLE, "not saved yet");
    /* A batch release is all or nothing: a bad handle anywhere releases none. */
    amber_object *batch[3] = {again, NULL, (amber_object *)book};
    FAILS(amber_objects_release(batch, 3), AMBER_E_WRONG_HANDLE_TYPE, "objects[2]");
    OK(amber_object_state(&(uint32_t){0}, again));
    batch[2] = again; /* listed twice: released once */
    OK(amber_objects_release(batch, 3));
    FAILS(amber_object_state(&(uint32_t){0}, again), AMBER_E_INVALID_HANDLE, "released (stale) handle");
    FAILS(amber_objects_release(NULL, 2), AMBER_E_NULL_ARGUMENT, "objects is NULL");
    OK(amber_objects_release(NULL, 0));
    OK(amber_context_rollback(scratch));
    OK(amber_context_free(scratch));
}

/* The one field-type table, through the C API. */
/* Values the C side gives are taken exactly or refused, and a forged handle is refused. */
static void test_exact_or_refused(void) {
    amber_object *object = NULL;
    OK(amber_context_insert(&object, context, book));
    /* A handle with its kind bits changed is not an Amber handle, even though its slot is live. */
    amber_object *forged = (amber_object *)((uintptr_t)object ^ ((uintptr_t)1 << 48));
    FAILS(amber_object_state(&(uint32_t){0}, forged), AMBER_E_INVALID_HANDLE, "not an Amber handle");
    amber_object *pair[2] = {object, forged};
    FAILS(amber_objects_release(pair, 2), AMBER_E_INVALID_HANDLE, "objects[1]");
    OK(amber_object_state(&(uint32_t){0}, object)); /* all or nothing: still live */
    amber_value flag = {.type = AMBER_VALUE_BOOL, .v.boolean = 2};
    amber_value uri = {.type = AMBER_VALUE_URI};
    uri.v.text.data = "http://example.com/a b";
    uri.v.text.length = strlen(uri.v.text.data);
    amber_transformer *utf8 = NULL;
    OK(amber_registry_transformer(&utf8, NULL, "UTF8"));
    amber_value out;
    FAILS(amber_transformer_forward(&out, utf8, &flag), AMBER_E_INVALID_VALUE, "a Boolean of 2 (0 or 1 expected)");
    FAILS(amber_transformer_forward(&out, utf8, &uri), AMBER_E_INVALID_VALUE, "is not a URI");
    FAILS(amber_transformer_forward(&out, utf8, &(amber_value){.type = AMBER_VALUE_INT, .v.integer = 4}), AMBER_E_TRANSFORMER,
          "forward takes String, not");
    OK(amber_transformer_free(utf8));
    OK(amber_context_rollback(context));
}

static void test_field_types(void) {
    const char *type_name = NULL;
    size_t size = 0, alignment = 0;
    OK(amber_field_type_info(&type_name, &size, &alignment, AMBER_FIELD_INT16));
    CHECK(strcmp(type_name, "int16") == 0 && size == sizeof(int16_t) && alignment == _Alignof(int16_t));
    OK(amber_field_type_info(&type_name, &size, &alignment, AMBER_FIELD_DOUBLE));
    CHECK(strcmp(type_name, "double") == 0 && size == sizeof(double) && alignment == _Alignof(double));
    OK(amber_field_type_info(&type_name, NULL, NULL, AMBER_FIELD_BOOL));
    CHECK(strcmp(type_name, "bool") == 0);
    OK(amber_field_type_info(&type_name, &size, NULL, AMBER_FIELD_STRUCT));
    CHECK(strcmp(type_name, "struct") == 0 && size == 0);
    FAILS(amber_field_type_info(&type_name, NULL, NULL, 99), AMBER_E_NOT_FOUND, "no field type has code 99");
}

/* Get and set on the owning thread resolve handles without the table's lock;
 * every handle the lock-free path cannot prove right falls back to the
 * locked path and gets its usual error. */
struct hammer {
    _Atomic(amber_object *) *objects;
    int count;
    atomic_int done;
    atomic_int calls; /* counted, so the releasing side can wait for the caller to have run at all */
    int ok, refused;
};

static void *get_while_released(void *argument) {
    struct hammer *h = argument;
    amber_value v;
    while (!atomic_load(&h->done)) {
        for (int i = 0; i < h->count; i++) {
            amber_status status = amber_object_get(&v, atomic_load(&h->objects[i]), title);
            atomic_fetch_add(&h->calls, 1);
            if (status == AMBER_OK) {
                h->ok++;
                amber_value_release(&v);
            } else if (status == AMBER_E_WRONG_THREAD || status == AMBER_E_INVALID_HANDLE) {
                h->refused++;
            }
        }
    }
    return NULL;
}

static void test_lock_free_lookups(void) {
    amber_object *object = NULL;
    OK(amber_context_insert(&object, context, book));
    amber_value v = {AMBER_VALUE_INT, {.integer = 7}};
    OK(amber_object_set(object, pages, &v));
    OK(amber_object_get(&v, object, pages));
    CHECK(v.type == AMBER_VALUE_INT && v.v.integer == 7);

    /* Live handles of the wrong kind, on the owning thread. */
    FAILS(amber_context_save((amber_context *)object), AMBER_E_WRONG_HANDLE_TYPE, "is an amber_object, expected an amber_context");
    FAILS(amber_object_get(&v, (amber_object *)title, pages), AMBER_E_WRONG_HANDLE_TYPE, "expected an amber_object");
    FAILS(amber_object_get(&v, object, (amber_attribute *)object), AMBER_E_WRONG_HANDLE_TYPE, "expected an amber_attribute");
    FAILS(amber_object_set(object, (amber_attribute *)context, &v), AMBER_E_WRONG_HANDLE_TYPE, "expected an amber_attribute");

    /* An attribute at the same position of another model's entity is not this object's. */
    amber_model *twin = NULL;
    amber_entity *twin_book = NULL;
    amber_attribute *twin_pages = NULL;
    OK(amber_model_from_json(&twin, model_json, sizeof model_json - 1, NULL));
    OK(amber_model_entity(&twin_book, twin, "Book"));
    OK(amber_entity_attribute(&twin_pages, twin_book, "pages"));
    FAILS(amber_object_get(&v, object, twin_pages), AMBER_E_NOT_FOUND, "Book.pages (of another model) is not an attribute of");
    OK(amber_model_free(twin));

    /* A released object handle is stale at once, and stays so when its slot is reused. */
    OK(amber_object_release(object));
    FAILS(amber_object_get(&v, object, pages), AMBER_E_INVALID_HANDLE, "released (stale) handle");
    amber_object *reused = NULL;
    OK(amber_context_insert(&reused, context, book));
    FAILS(amber_object_get(&v, object, pages), AMBER_E_INVALID_HANDLE, "released (stale) handle");
    OK(amber_object_get(&v, reused, pages));

    /* Another thread using this thread's handles while they are released and
     * remade is refused every time, never served and never a crash. */
    enum { count = 64 };
    _Atomic(amber_object *) objects[count];
    for (int i = 0; i < count; i++) {
        amber_object *made = NULL;
        OK(amber_context_insert(&made, context, book));
        atomic_init(&objects[i], made);
    }
    struct hammer h = {objects, count, 0, 0, 0, 0};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, get_while_released, &h) == 0);
    for (int round = 0; round < 200; round++) {
        for (int i = 0; i < count; i++) {
            amber_object *fresh = NULL;
            if (amber_object_release(atomic_load(&objects[i])) != AMBER_OK || amber_context_insert(&fresh, context, book) != AMBER_OK) CHECK(0);
            atomic_store(&objects[i], fresh);
        }
    }
    /* Under valgrind, threads run one at a time: the caller may not have run yet. */
    while (atomic_load(&h.calls) == 0) sched_yield();
    atomic_store(&h.done, 1);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK(h.ok == 0);
    CHECK(h.refused > 0);
    OK(amber_context_rollback(context));
}

/* Transformer handles are shared by every thread and resolved without the
 * table's lock: a handle released while other threads are inside a call
 * through it stays alive until the last of them leaves, later calls are
 * refused as stale, and the transformer is dropped exactly once. */
static atomic_int shared_frees;
static void count_shared_free(void *userdata) { (void)userdata; atomic_fetch_add(&shared_frees, 1); }

struct caller {
    _Atomic(amber_transformer *) *current;
    atomic_int *done;
    atomic_int *started; /* callers with a first good call: the releases start after both have one */
    int ok, stale, wrong;
};

static void *call_while_released(void *argument) {
    struct caller *c = argument;
    unsigned char in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
    while (!atomic_load(c->done)) {
        size_t written = 0;
        memset(out, 0, sizeof out);
        amber_status status = amber_transformer_forward_bytes(&written, atomic_load(c->current), in, sizeof in, out, sizeof out);
        if (status == AMBER_OK && written == sizeof in && memcmp(in, out, sizeof in) == 0) {
            if (c->ok++ == 0) atomic_fetch_add(c->started, 1);
        }
        else if (status == AMBER_E_INVALID_HANDLE) c->stale++;
        else c->wrong++;
    }
    return NULL;
}

static void test_transformer_released_during_calls(void) {
    amber_registry *registry = NULL;
    OK(amber_registry_new(&registry));
    OK(amber_registry_register_transformer(registry, "Shared", "Binary", "Binary", identity, identity, NULL, NULL, count_shared_free));
    amber_transformer *first = NULL;
    OK(amber_registry_transformer(&first, registry, "Shared"));
    _Atomic(amber_transformer *) current;
    atomic_init(&current, first);
    atomic_int done, started;
    atomic_init(&done, 0);
    atomic_init(&started, 0);
    struct caller callers[2] = {{&current, &done, &started, 0, 0, 0}, {&current, &done, &started, 0, 0, 0}};
    pthread_t threads[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&threads[i], NULL, call_while_released, &callers[i]) == 0);
    /* Both callers inside before any release (valgrind runs one thread at a time). */
    while (atomic_load(&started) < 2) sched_yield();
    /* Handles made and released under the callers, slots reused. */
    for (int round = 0; round < 100; round++) {
        amber_transformer *fresh = NULL;
        if (amber_registry_transformer(&fresh, registry, "Shared") != AMBER_OK) CHECK(0);
        if (amber_transformer_free(atomic_exchange(&current, fresh)) != AMBER_OK) CHECK(0);
    }
    /* The last handle goes while calls run, with no registry left to hold the transformer. */
    OK(amber_registry_free(registry));
    CHECK(atomic_load(&shared_frees) == 0);
    OK(amber_transformer_free(atomic_load(&current)));
    atomic_store(&done, 1);
    for (int i = 0; i < 2; i++) CHECK(pthread_join(threads[i], NULL) == 0);
    CHECK(callers[0].ok + callers[1].ok > 0);
    CHECK(callers[0].wrong + callers[1].wrong == 0);
    CHECK(atomic_load(&shared_frees) == 1);
    size_t written = 0;
    unsigned char byte = 0;
    FAILS(amber_transformer_forward_bytes(&written, first, &byte, 1, &byte, 1), AMBER_E_INVALID_HANDLE, "released (stale) handle");
}

int main(void) {
    set_up();
    test_sized_structs();
    test_object_release();
    test_field_types();
    test_exact_or_refused();
    test_null_arguments();
    test_stale_forged_and_wrong_type_handles();
    test_wrong_thread();
    test_contexts_of_ended_threads();
    test_lock_free_lookups();
    test_transformer_released_during_calls();
    test_invalid_utf8_and_unknown_names();
    test_bad_models_and_predicates();
    test_transformers();
    test_failed_save_keeps_changes();
    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));
    FAILS(amber_model_free(model), AMBER_E_INVALID_HANDLE, "released (stale) handle");
    FAILS(amber_entity_attribute(&title, book, "title"), AMBER_E_INVALID_HANDLE, "released (stale) handle");
    return report();
}
