/* Fetches that see the context's own changes, through the C API: the
 * newcomer's program (insert, then fetch and count; change, then fetch by
 * the new value; delete, then count), the store's answer alone on request
 * (also for a caller compiled before that field existed), and
 * amber_context_filter on a list of objects, with its refusals; live queries
 * that show unsaved changes at amber_context_process_pending_changes, beside
 * one that follows what is saved. */
#include <amber.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

static amber_context *context;

/* The objects `predicate` (with one optional string argument) fetches, in
 * order, compared with the `want_count` handles in `want`. */
static int fetches(const char *predicate, const char *argument, const amber_sort *sort, int exclude_pending,
                   amber_object *const *want, size_t want_count) {
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    amber_value value = text(argument ? argument : "");
    request.entity = "Book";
    request.predicate = predicate;
    request.arguments = argument ? &value : NULL;
    request.argument_count = argument ? 1 : 0;
    request.sort = sort;
    request.sort_count = sort ? 1 : 0;
    request.exclude_pending_changes = exclude_pending;
    amber_object **objects = NULL;
    size_t count = 0;
    int64_t counted = -1;
    if (amber_context_fetch(&objects, &count, context, &request) != AMBER_OK) return 0;
    if (amber_context_count(&counted, context, &request) != AMBER_OK) return 0;
    int same = count == want_count && counted == (int64_t)want_count;
    for (size_t i = 0; same && i < count; i++) same = objects[i] == want[i];
    amber_free(objects);
    return same;
}

static amber_entity *entity;

/* What a live query's callback saw: calls, and rows inserted and deleted. */
typedef struct {
    int calls, inserted, deleted;
} seen;

static int32_t count_changes(amber_live_query *query, const amber_index_change *changes, size_t count, void *userdata) {
    (void)query;
    seen *s = userdata;
    s->calls++;
    for (size_t i = 0; i < count; i++) {
        s->inserted += changes[i].kind == AMBER_INDEX_INSERT;
        s->deleted += changes[i].kind == AMBER_INDEX_DELETE;
    }
    return 0;
}

/* Whether `query` holds exactly `want` (of `want_count`), in order. */
static int holds(amber_live_query *query, amber_object *const *want, size_t want_count) {
    size_t count = 0;
    if (amber_live_query_count(&count, NULL, query) != AMBER_OK || count != want_count) return 0;
    for (size_t i = 0; i < count; i++) {
        amber_object *object = NULL;
        if (amber_live_query_object(&object, query, -1, i) != AMBER_OK || object != want[i]) return 0;
    }
    return 1;
}

static amber_object *book(amber_attribute *title, const char *name) {
    amber_object *object = NULL;
    OK(amber_context_insert(&object, context, entity));
    amber_value value = text(name);
    OK(amber_object_set(object, title, &value));
    return object;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "pending.amber";
    remove(path);
    amber_model_builder *builder = NULL;
    OK(amber_model_builder_new(&builder));
    OK(amber_model_builder_add_entity(builder, "Book"));
    add_attribute(builder, "Book", "title", AMBER_TYPE_STRING);
    amber_model *model = NULL;
    OK(amber_model_builder_bind(&model, builder, NULL));
    OK(amber_model_builder_free(builder));
    amber_store *store = NULL;
    OK(amber_store_open(&store, path, model));
    OK(amber_context_new(&context, store));
    amber_attribute *title = NULL;
    OK(amber_model_entity(&entity, model, "Book"));
    OK(amber_entity_attribute(&title, entity, "title"));

    /* Inserted, not saved: fetched and counted. */
    amber_object *a = book(title, "a"), *b = book(title, "b");
    amber_object *both[] = {a, b};
    CHECK(fetches(NULL, NULL, NULL, 0, both, 2));
    CHECK(fetches("title == %@", "a", NULL, 0, both, 1));
    CHECK(fetches(NULL, NULL, NULL, 1, NULL, 0));
    OK(amber_context_save(context));

    /* Changed: judged on the current value; the store alone still has the saved one. */
    amber_value zzz = text("zzz");
    OK(amber_object_set(a, title, &zzz));
    CHECK(fetches("title == %@", "a", NULL, 0, NULL, 0));
    CHECK(fetches("title == %@", "zzz", NULL, 0, both, 1));
    CHECK(fetches("title == %@", "a", NULL, 1, both, 1));

    /* Sorted by current values; deleted objects are left out. */
    amber_object *c = book(title, "c");
    OK(amber_context_delete(context, b));
    amber_sort by_title = {"title", 0, 0};
    amber_object *order[] = {c, a};
    CHECK(fetches(NULL, NULL, &by_title, 0, order, 2));
    amber_object *saved_only[] = {a};
    CHECK(fetches(NULL, NULL, &by_title, 1, saved_only, 1));

    /* A caller compiled before exclude_pending_changes existed gets the default. */
    amber_fetch_request old = AMBER_FETCH_REQUEST_INIT;
    old.size = offsetof(amber_fetch_request, exclude_pending_changes);
    old.entity = "Book";
    old.exclude_pending_changes = 1; /* beyond its size: not read */
    int64_t counted = 0;
    OK(amber_context_count(&counted, context, &old));
    CHECK(counted == 2);

    /* The largest limit and offset are no limit and an empty window, with pending changes as without. */
    amber_fetch_request huge = AMBER_FETCH_REQUEST_INIT;
    huge.entity = "Book";
    huge.limit = INT64_MAX;
    OK(amber_context_count(&counted, context, &huge));
    CHECK(counted == 2);
    huge.offset = INT64_MAX;
    OK(amber_context_count(&counted, context, &huge));
    CHECK(counted == 0);

    /* Filtering a list in memory: predicate, sort, offset and limit; no entity needed. */
    amber_object *list[] = {a, c, b};
    amber_fetch_request filter = AMBER_FETCH_REQUEST_INIT;
    filter.predicate = "title != 'q'";
    amber_sort descending = {"title", 1, 0};
    filter.sort = &descending;
    filter.sort_count = 1;
    amber_object **found = NULL;
    size_t found_count = 0;
    OK(amber_context_filter(&found, &found_count, context, list, 2, &filter));
    CHECK(found_count == 2 && found[0] == a && found[1] == c);
    amber_free(found);
    filter.offset = 1;
    filter.limit = 5;
    OK(amber_context_filter(&found, &found_count, context, list, 2, &filter));
    CHECK(found_count == 1 && found[0] == c);
    amber_free(found);
    filter.limit = INT64_MAX;
    OK(amber_context_filter(&found, &found_count, context, list, 2, &filter));
    CHECK(found_count == 1 && found[0] == c);
    amber_free(found);
    OK(amber_context_filter(&found, &found_count, context, NULL, 0, &filter));
    CHECK(found == NULL && found_count == 0);

    /* Refusals name the place: an unknown key with its position, a comparison that does not fit, a NULL handle. */
    filter.predicate = "nmae == 'a'";
    FAILS(amber_context_filter(&found, &found_count, context, list, 2, &filter), AMBER_E_NOT_FOUND, "nmae");
    CHECK(strcmp(amber_last_error_origin(), "position 1") == 0);
    filter.predicate = "title < 3";
    FAILS(amber_context_filter(&found, &found_count, context, list, 2, &filter), AMBER_E_INVALID_PREDICATE, "cannot compare");
    amber_object *holes[] = {a, NULL};
    filter.predicate = NULL;
    FAILS(amber_context_filter(&found, &found_count, context, holes, 2, &filter), AMBER_E_NULL_ARGUMENT, "objects[1]");
    FAILS(amber_context_filter(&found, &found_count, context, NULL, 1, &filter), AMBER_E_NULL_ARGUMENT, "objects");

    /* Live queries: one shows unsaved changes once processed, one follows what is saved. */
    amber_fetch_request live = AMBER_FETCH_REQUEST_INIT;
    live.entity = "Book";
    live.sort = &by_title;
    live.sort_count = 1;
    seen current_seen = {0, 0, 0}, saved_seen = {0, 0, 0};
    amber_live_query *current = NULL, *saved = NULL;
    OK(amber_live_query_new(&current, context, &live, NULL, count_changes, &current_seen, NULL));
    live.exclude_pending_changes = 1;
    OK(amber_live_query_new(&saved, context, &live, NULL, count_changes, &saved_seen, NULL));
    amber_object *saved_order[] = {a, b};
    CHECK(holds(current, order, 2) && holds(saved, saved_order, 2));
    amber_object *d = book(title, "d");
    CHECK(holds(current, order, 2)); /* not until processed */
    OK(amber_context_process_pending_changes(context));
    amber_object *with_d[] = {c, d, a};
    CHECK(holds(current, with_d, 3) && current_seen.calls == 1 && current_seen.inserted == 1);
    CHECK(holds(saved, saved_order, 2) && saved_seen.calls == 0);
    /* A rollback shows at the next processing: the saved state again. */
    OK(amber_context_rollback(context));
    OK(amber_context_process_pending_changes(context));
    CHECK(holds(current, saved_order, 2) && current_seen.calls == 2 && current_seen.deleted == 2 && current_seen.inserted == 2);
    CHECK(saved_seen.calls == 0);
    FAILS(amber_context_process_pending_changes(NULL), AMBER_E_NULL_ARGUMENT, "context");
    OK(amber_live_query_free(current));
    OK(amber_live_query_free(saved));

    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));
    remove(path);
    return report();
}
