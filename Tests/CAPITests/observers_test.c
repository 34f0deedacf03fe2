/* Observers and live queries through the C API: reports counted exactly
 * with their keys, failing callbacks, userdata_free run exactly once,
 * misuse (freed contexts, borrowed reports), and a live query sectioned by
 * month whose index changes, applied to a copy of its old results, equal a
 * fresh fetch after every one of 120 random steps in two contexts. */
#define _POSIX_C_SOURCE 200809L /* gmtime_r */
#include <amber.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

static const char model_json[] =
    "{\"entities\": [{\"name\": \"Book\", \"attributes\": ["
    " {\"name\": \"title\", \"type\": \"string\"},"
    " {\"name\": \"pages\", \"type\": \"integer64\"},"
    " {\"name\": \"published\", \"type\": \"date\"}]}]}";

static amber_entity *book_entity;
static amber_attribute *title, *pages, *published;

static amber_value date(double seconds) {
    amber_value value = {.type = AMBER_VALUE_DATE};
    value.v.date = seconds;
    return value;
}

static amber_object *insert_book(amber_context *context, const char *name, int64_t n, double when) {
    amber_object *book = NULL;
    OK(amber_context_insert(&book, context, book_entity));
    amber_value value = text(name);
    OK(amber_object_set(book, title, &value));
    value = integer(n);
    OK(amber_object_set(book, pages, &value));
    value = date(when);
    OK(amber_object_set(book, published, &value));
    return book;
}

/* ---- Observers --------------------------------------------------------- */

typedef struct {
    int calls, frees, fail;
    int32_t event;
    size_t counts[5];
    char keys[128];
} watch;

static amber_changes *kept_changes;

static int32_t observe(amber_changes *changes, void *userdata) {
    watch *w = userdata;
    w->calls++;
    CHECK(amber_changes_event(&w->event, changes) == AMBER_OK);
    w->keys[0] = 0;
    for (int32_t list = AMBER_CHANGES_INSERTED; list <= AMBER_CHANGES_REFRESHED; list++) {
        CHECK(amber_changes_count(&w->counts[list], changes, list) == AMBER_OK);
    }
    for (size_t i = 0; i < w->counts[AMBER_CHANGES_UPDATED]; i++) {
        const char *const *keys = NULL;
        size_t count = 0;
        CHECK(amber_changes_keys(&keys, &count, changes, AMBER_CHANGES_UPDATED, i) == AMBER_OK);
        for (size_t k = 0; k < count; k++) {
            strncat(w->keys, keys[k], sizeof w->keys - strlen(w->keys) - 2);
            strcat(w->keys, " ");
        }
    }
    CHECK(amber_changes_free(changes) == AMBER_E_INVALID_VALUE);  /* the context's, not ours */
    kept_changes = changes;
    return w->fail ? -7 : 0;
}

static void count_free(void *userdata) { ((watch *)userdata)->frees++; }

static void test_observers(amber_store *store) {
    amber_context *context = NULL, *other = NULL;
    OK(amber_context_new(&context, store));
    OK(amber_context_new(&other, store));
    watch first = {0}, second = {0}, refused = {0};
    uint64_t token = 0, token2 = 0;
    OK(amber_context_add_observer(&token, context, observe, &first, count_free));
    OK(amber_context_add_observer(&token2, context, observe, &second, count_free));

    amber_object *a = insert_book(context, "A", 1, 0), *b = insert_book(context, "B", 2, 0);
    CHECK(first.calls == 0);
    OK(amber_context_save(context));
    CHECK(first.calls == 1 && second.calls == 1 && first.event == AMBER_EVENT_SAVED);
    CHECK(first.counts[AMBER_CHANGES_INSERTED] == 2 && first.counts[AMBER_CHANGES_UPDATED] == 0);
    /* The report lent to the observer is gone once it returned. */
    int32_t event = 0;
    FAILS(amber_changes_event(&event, kept_changes), AMBER_E_INVALID_HANDLE, "changes");
    OK(amber_context_save(context));
    CHECK(first.calls == 1);

    amber_value value = integer(40);
    OK(amber_object_set(a, pages, &value));
    OK(amber_context_delete(context, b));
    amber_changes *pending = NULL;
    OK(amber_context_pending_changes(&pending, context));
    size_t count = 0;
    OK(amber_changes_count(&count, pending, AMBER_CHANGES_UPDATED));
    CHECK(count == 1);
    const char *const *keys = NULL;
    OK(amber_changes_keys(&keys, &count, pending, AMBER_CHANGES_UPDATED, 0));
    CHECK(count == 1 && strcmp(keys[0], "pages") == 0);
    OK(amber_changes_keys(&keys, &count, pending, AMBER_CHANGES_DELETED, 0));
    CHECK(count == 0 && keys == NULL);
    amber_object *deleted = NULL;
    OK(amber_changes_object(&deleted, pending, AMBER_CHANGES_DELETED, 0));
    CHECK(deleted == b);
    FAILS(amber_changes_object(&deleted, pending, AMBER_CHANGES_DELETED, 1), AMBER_E_INVALID_VALUE, "out of range");
    FAILS(amber_changes_count(&count, pending, 9), AMBER_E_INVALID_VALUE, "AMBER_CHANGES_");
    OK(amber_changes_event(&event, pending));
    CHECK(event == AMBER_EVENT_PENDING);
    OK(amber_changes_free(pending));
    OK(amber_context_save(context));
    CHECK(first.calls == 2 && strcmp(first.keys, "pages ") == 0 && first.counts[AMBER_CHANGES_DELETED] == 1);

    /* A merge: the other context changes an object this one holds. */
    amber_object **held = NULL;
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Book";
    OK(amber_context_fetch(&held, &count, other, &request));
    CHECK(count == 1);
    value = integer(41);
    OK(amber_object_set(held[0], pages, &value));
    amber_free(held);
    OK(amber_context_save(other));
    OK(amber_context_merge_saved_changes(context));
    CHECK(first.calls == 3 && first.event == AMBER_EVENT_MERGED && first.counts[AMBER_CHANGES_REFRESHED] == 1);

    /* A failing observer: the save is written, the others are still told, the call says so. */
    first.fail = 1;
    insert_book(context, "C", 3, 0);
    FAILS(amber_context_save(context), AMBER_E_OBSERVER, "the save is written, but 1 observer failed");
    CHECK(strstr(amber_last_error_message(), "returned -7") != NULL);
    CHECK(second.calls == 4);
    int64_t saved = 0;
    OK(amber_context_count(&saved, other, &request));
    CHECK(saved == 2);

    /* userdata_free: exactly once, on removal, on failure, and when the context goes. */
    OK(amber_context_remove_observer(context, token));
    CHECK(first.frees == 1);
    FAILS(amber_context_remove_observer(context, token), AMBER_E_NOT_FOUND, "no such observer");
    CHECK(first.frees == 1);
    FAILS(amber_context_add_observer(&token, context, NULL, &refused, count_free), AMBER_E_NULL_ARGUMENT, "fn");
    CHECK(refused.frees == 1);
    FAILS(amber_context_add_observer(NULL, context, observe, &refused, count_free), AMBER_E_NULL_ARGUMENT, "out_token");
    CHECK(refused.frees == 2);
    OK(amber_context_free(context));
    CHECK(second.frees == 1);
    FAILS(amber_context_add_observer(&token, context, observe, &refused, count_free), AMBER_E_INVALID_HANDLE, "context");
    CHECK(refused.frees == 3 && refused.calls == 0);
    OK(amber_context_free(other));
    CHECK(first.frees == 1 && second.frees == 1);
}

/* ---- Live queries -------------------------------------------------------- */

#define MAX_SECTIONS 64
#define MAX_ROWS 512

/* Results as a list view holds them. */
typedef struct {
    int sections;
    int rows[MAX_SECTIONS];
    amber_object *objects[MAX_SECTIONS][MAX_ROWS];
} mirror;

static int month_of(amber_object *object) {
    amber_value value;
    if (amber_object_get(&value, object, published) != AMBER_OK || value.type != AMBER_VALUE_DATE) return -1;
    time_t seconds = (time_t)value.v.date;
    struct tm parts;
    gmtime_r(&seconds, &parts);
    return parts.tm_year * 12 + parts.tm_mon;
}

/* A fresh fetch, sectioned by month as the live query is. */
static void fetch_mirror(mirror *m, amber_context *context, const amber_fetch_request *request) {
    amber_object **objects = NULL;
    size_t count = 0;
    OK(amber_context_fetch(&objects, &count, context, request));
    m->sections = 0;
    int last = -2;
    for (size_t i = 0; i < count; i++) {
        int month = month_of(objects[i]);
        if (month != last) {
            m->rows[m->sections++] = 0;
            last = month;
        }
        m->objects[m->sections - 1][m->rows[m->sections - 1]++] = objects[i];
    }
    amber_free(objects);
}

static int same(const mirror *a, const mirror *b) {
    if (a->sections != b->sections) return 0;
    for (int s = 0; s < a->sections; s++) {
        if (a->rows[s] != b->rows[s]) return 0;
        if (memcmp(a->objects[s], b->objects[s], sizeof(amber_object *) * (size_t)a->rows[s]) != 0) return 0;
    }
    return 1;
}

typedef struct {
    mirror copy;
    int calls, frees, fail, moves, section_changes;
} follower;

static void remove_row(mirror *m, int64_t s, int64_t r) {
    memmove(&m->objects[s][r], &m->objects[s][r + 1], sizeof(amber_object *) * (size_t)(m->rows[s] - r - 1));
    m->rows[s]--;
}

static int by_position_desc(const void *x, const void *y) {
    const int64_t *a = x, *b = y;
    return a[0] != b[0] ? (a[0] < b[0] ? 1 : -1) : (a[1] < b[1] ? 1 : (a[1] > b[1] ? -1 : 0));
}

static int by_position_asc(const void *x, const void *y) { return -by_position_desc(x, y); }

/* Applies the changes as amber_index_change documents. */
static int32_t follow(amber_live_query *query, const amber_index_change *changes, size_t count, void *userdata) {
    follower *f = userdata;
    mirror *m = &f->copy;
    f->calls++;
    int64_t (*out)[2] = calloc(count, sizeof *out), (*in)[2] = calloc(count, sizeof *in);
    size_t outs = 0, ins = 0;
    for (size_t i = 0; i < count; i++) {
        const amber_index_change *c = &changes[i];
        if (c->kind == AMBER_INDEX_DELETE || c->kind == AMBER_INDEX_MOVE) {
            out[outs][0] = c->old_section;
            out[outs++][1] = c->old_row;
        }
        if (c->kind == AMBER_INDEX_INSERT || c->kind == AMBER_INDEX_MOVE) {
            in[ins][0] = c->new_section;
            in[ins++][1] = c->new_row;
        }
        if (c->kind == AMBER_INDEX_MOVE) f->moves++;
    }
    qsort(out, outs, sizeof *out, by_position_desc);
    for (size_t i = 0; i < outs; i++) remove_row(m, out[i][0], out[i][1]);
    for (size_t i = count; i-- > 0;) {
        if (changes[i].kind != AMBER_INDEX_SECTION_DELETE) continue;
        int64_t s = changes[i].old_section;
        CHECK(m->rows[s] == 0);
        memmove(&m->rows[s], &m->rows[s + 1], sizeof(int) * (size_t)(m->sections - s - 1));
        memmove(&m->objects[s], &m->objects[s + 1], sizeof m->objects[0] * (size_t)(m->sections - s - 1));
        m->sections--;
        f->section_changes++;
    }
    for (size_t i = 0; i < count; i++) {
        if (changes[i].kind != AMBER_INDEX_SECTION_INSERT) continue;
        int64_t s = changes[i].new_section;
        memmove(&m->rows[s + 1], &m->rows[s], sizeof(int) * (size_t)(m->sections - s));
        memmove(&m->objects[s + 1], &m->objects[s], sizeof m->objects[0] * (size_t)(m->sections - s));
        m->rows[s] = 0;
        m->sections++;
        f->section_changes++;
    }
    qsort(in, ins, sizeof *in, by_position_asc);
    for (size_t i = 0; i < ins; i++) {
        int64_t s = in[i][0], r = in[i][1];
        amber_object *object = NULL;
        CHECK(amber_live_query_object(&object, query, s, (size_t)r) == AMBER_OK);
        memmove(&m->objects[s][r + 1], &m->objects[s][r], sizeof(amber_object *) * (size_t)(m->rows[s] - r));
        m->objects[s][r] = object;
        m->rows[s]++;
    }
    free(out);
    free(in);
    return f->fail ? -3 : 0;
}

static void free_follower(void *userdata) { ((follower *)userdata)->frees++; }

static void test_live_query(amber_store *store) {
    amber_context *here = NULL, *there = NULL;
    OK(amber_context_new(&here, store));
    OK(amber_context_new(&there, store));
    srand(1414);
    const double base = 1700000000.0;
    char name[32];
    int serial = 0;
    for (int i = 0; i < 30; i++) {
        snprintf(name, sizeof name, "b%d", ++serial);
        insert_book(here, name, rand() % 30, base + (rand() % 120) * 86400.0 * 4);
    }
    OK(amber_context_save(here));

    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    amber_sort sort[2] = {{"published", 1, 0}, {"title", 0, 0}};
    request.entity = "Book";
    request.predicate = "pages > 10";
    request.sort = sort;
    request.sort_count = 2;
    amber_live_query_options options = AMBER_LIVE_QUERY_OPTIONS_INIT;
    options.section_key = "published";
    options.section_unit = AMBER_UNIT_MONTH;
    follower f = {0};
    amber_live_query *query = NULL;
    OK(amber_live_query_new(&query, here, &request, &options, follow, &f, free_follower));
    /* The copy starts as the live query's own results, read through its API. */
    size_t results = 0, sections = 0;
    OK(amber_live_query_count(&results, &sections, query));
    f.copy.sections = (int)sections;
    for (size_t s = 0; s < sections; s++) {
        size_t start = 0, rows = 0;
        amber_value month = {0};
        OK(amber_live_query_section(&start, &rows, &month, query, s));
        CHECK(month.type == AMBER_VALUE_DATE);
        f.copy.rows[s] = (int)rows;
        for (size_t r = 0; r < rows; r++) OK(amber_live_query_object(&f.copy.objects[s][r], query, -1, start + r));
    }
    mirror fresh;
    fetch_mirror(&fresh, here, &request);
    CHECK(same(&f.copy, &fresh));

    int mismatches = 0;
    for (int step = 0; step < 120; step++) {
        amber_context *context = rand() % 2 ? here : there;
        amber_object **books = NULL;
        size_t count = 0;
        amber_fetch_request all = AMBER_FETCH_REQUEST_INIT;
        all.entity = "Book";
        OK(amber_context_fetch(&books, &count, context, &all));
        amber_object *pick = count ? books[rand() % count] : NULL;
        amber_value value;
        switch (pick ? rand() % 4 : 0) {
        case 0:
            snprintf(name, sizeof name, "b%d", ++serial);
            insert_book(context, name, rand() % 30, base + (rand() % 120) * 86400.0 * 4);
            break;
        case 1: OK(amber_context_delete(context, pick)); break;
        case 2:
            value = integer(rand() % 30);
            OK(amber_object_set(pick, pages, &value));
            break;
        default:
            value = date(base + (rand() % 120) * 86400.0 * 4);
            OK(amber_object_set(pick, published, &value));
        }
        amber_free(books);
        OK(amber_context_save(context));
        if (context == there) OK(amber_context_merge_saved_changes(here));
        fetch_mirror(&fresh, here, &request);
        if (!same(&f.copy, &fresh)) mismatches++;
    }
    CHECK(mismatches == 0);
    CHECK(f.calls > 40 && f.moves > 5 && f.section_changes > 0);

    /* A failing callback: the save is written and says so; the results are up to date. */
    f.fail = 1;
    insert_book(here, "zz", 25, base);
    FAILS(amber_context_save(here), AMBER_E_OBSERVER, "live query of Book: the callback returned -3");
    fetch_mirror(&fresh, here, &request);
    CHECK(same(&f.copy, &fresh));

    /* Misuse. */
    options.section_key = "title";
    amber_live_query *bad = NULL;
    follower unused = {0};
    FAILS(amber_live_query_new(&bad, here, &request, &options, follow, &unused, free_follower), AMBER_E_INVALID_VALUE,
          "first sort key");
    CHECK(unused.frees == 1);
    options.section_key = "published";
    options.section_unit = 9;
    FAILS(amber_live_query_new(&bad, here, &request, &options, NULL, &unused, free_follower), AMBER_E_INVALID_VALUE,
          "AMBER_UNIT_");
    CHECK(unused.frees == 2);
    FAILS(amber_live_query_section(NULL, NULL, NULL, query, 999), AMBER_E_INVALID_VALUE, "out of range");
    amber_object *none = NULL;
    FAILS(amber_live_query_object(&none, query, 0, 99999), AMBER_E_INVALID_VALUE, "no such result");

    OK(amber_live_query_free(query));
    CHECK(f.frees == 1);
    FAILS(amber_live_query_free(query), AMBER_E_INVALID_HANDLE, "query");
    CHECK(f.frees == 1);

    /* A live query whose context is freed first: it answers, and reports no more. */
    follower orphan = {0};
    OK(amber_live_query_new(&query, here, &request, NULL, follow, &orphan, free_follower));
    OK(amber_context_free(here));
    OK(amber_live_query_count(&results, NULL, query));
    FAILS(amber_live_query_object(&none, query, -1, 0), AMBER_E_UNAVAILABLE, "its context was freed");
    FAILS(amber_live_query_refetch(query), AMBER_E_INVALID_VALUE, "its context was released");
    OK(amber_live_query_free(query));
    CHECK(orphan.frees == 1 && orphan.calls == 0);
    OK(amber_context_free(there));
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "/tmp/amber-observers-test.amber";
    remove(path);
    amber_model *model = NULL;
    amber_store *store = NULL;
    OK(amber_model_from_json(&model, model_json, sizeof model_json - 1, NULL));
    OK(amber_model_entity(&book_entity, model, "Book"));
    OK(amber_entity_attribute(&title, book_entity, "title"));
    OK(amber_entity_attribute(&pages, book_entity, "pages"));
    OK(amber_entity_attribute(&published, book_entity, "published"));
    OK(amber_store_open(&store, path, model));
    test_observers(store);
    test_live_query(store);
    OK(amber_store_close(store));
    OK(amber_model_free(model));
    remove(path);
    return report();
}
