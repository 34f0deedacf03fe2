/* A store Core Data wrote, through the C API: the model imported from its
 * Xcode bundle (an older version of it), the store opened by path, every
 * row compared with a plain SQLite reading of the same file, a predicate
 * against SQL's own filter, a save checked against Core Data's bookkeeping
 * with plain SQL, a later model version refused
 * naming its differences. The fixtures are in ../shared/coredata beside the
 * repository (AMBER_COREDATA_DIR overrides); each is copied first. */
#define _POSIX_C_SOURCE 200809L
#include <amber.h>
#include <sqlite3.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* Copies file `from` to `to`; returns 0 on success. */
static int copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    int failed_copy = !in || !out;
    char buffer[65536];
    size_t n;
    while (!failed_copy && (n = fread(buffer, 1, sizeof buffer, in)) > 0) failed_copy = fwrite(buffer, 1, n, out) != n;
    if (in) fclose(in);
    if (out && fclose(out) != 0) failed_copy = 1;
    return failed_copy;
}

/* A transformer handing over the stored bytes as they are (the app's own classes' archives), and its release. */
static int32_t pass_bytes(amber_value *output, const amber_value *input, void *userdata) {
    (void)userdata;
    if (input->type != AMBER_VALUE_BINARY) return -1;
    void *copy = malloc(input->v.bytes.length ? input->v.bytes.length : 1);
    if (!copy) return -1;
    memcpy(copy, input->v.bytes.data, input->v.bytes.length);
    output->type = AMBER_VALUE_BINARY;
    output->v.bytes.data = copy;
    output->v.bytes.length = input->v.bytes.length;
    return AMBER_OK;
}

static void release_bytes(amber_value *output, void *userdata) {
    (void)userdata;
    free((void *)output->v.bytes.data);
}

/* Copies the store `name` of the fixtures (with its -wal and -shm) to `to` and its siblings; returns 0 on success. */
static int copy_store(const char *base, const char *name, const char *to) {
    int failed_copy = 0;
    const char *suffixes[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char from[4200], target[4200];
        snprintf(from, sizeof from, "%s/%s%s", base, name, suffixes[i]);
        snprintf(target, sizeof target, "%s%s", to, suffixes[i]);
        remove(target);
        FILE *probe = fopen(from, "rb");
        if (!probe) continue;
        fclose(probe);
        failed_copy |= copy_file(from, target);
    }
    return failed_copy;
}

/* Whether `value` is the text `expected` (NULL: a null value). */
static int is_text(const amber_value *value, const unsigned char *expected) {
    if (!expected) return value->type == AMBER_VALUE_NULL;
    size_t length = strlen((const char *)expected);
    return value->type == AMBER_VALUE_STRING && value->v.text.length == length && memcmp(value->v.text.data, expected, length) == 0;
}

int main(int argc, char **argv) {
    const char *base = getenv("AMBER_COREDATA_DIR") ? getenv("AMBER_COREDATA_DIR") : "../shared/coredata";
    char source[4096], bundle[4096], path[4096];
    snprintf(source, sizeof source, "%s/wibosco/CoreDataMigration_Example_1.sqlite", base);
    snprintf(bundle, sizeof bundle, "%s/wibosco/CoreDataMigration_Example.xcdatamodeld", base);
    snprintf(path, sizeof path, "%s-posts.sqlite", argc > 1 ? argv[1] : "coredata_test");
    CHECK(copy_file(source, path) == 0);

    amber_model *model = NULL;
    char *notes = NULL;
    OK(amber_model_from_xcode(&model, &notes, bundle, "CoreDataMigration_Example", NULL));
    CHECK(notes != NULL);
    amber_free(notes);
    amber_store *store = NULL;
    OK(amber_store_open_url(&store, path, model, NULL));
    amber_context *context = NULL;
    OK(amber_context_new(&context, store));

    /* Every post, by date, against the same rows read with plain SQLite. */
    amber_sort by_date = {"date", 0, 0};
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Post";
    request.sort = &by_date;
    request.sort_count = 1;
    amber_object **objects = NULL;
    size_t count = 0;
    OK(amber_context_fetch(&objects, &count, context, &request));
    sqlite3 *db = NULL;
    CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    sqlite3_stmt *rows = NULL;
    CHECK(sqlite3_prepare_v2(db, "SELECT ZPOSTID, ZCOLOR, ZCONTENT, ZDATE FROM ZPOST ORDER BY ZDATE", -1, &rows, NULL) == SQLITE_OK);
    size_t seen = 0;
    while (sqlite3_step(rows) == SQLITE_ROW && seen < count) {
        amber_value value;
        const char *names[] = {"postID", "color", "content"};
        for (int i = 0; i < 3; i++) {
            OK(amber_object_get_named(&value, objects[seen], names[i]));
            CHECK(is_text(&value, sqlite3_column_text(rows, i)));
            amber_value_release(&value);
        }
        /* Core Data keeps seconds since 2001; C values count them from 1970. */
        OK(amber_object_get_named(&value, objects[seen], "date"));
        CHECK(value.type == AMBER_VALUE_DATE && value.v.date == sqlite3_column_double(rows, 3) + 978307200.0);
        amber_value_release(&value);
        seen++;
    }
    CHECK(seen == count && count == 10);
    sqlite3_finalize(rows);

    /* A predicate selects what SQL's own filter selects. */
    request.predicate = "color BEGINSWITH 'C' OR content CONTAINS 'evil'";
    int64_t matched = -1;
    OK(amber_context_count(&matched, context, &request));
    CHECK(sqlite3_prepare_v2(db, "SELECT count(*) FROM ZPOST WHERE ZCOLOR GLOB 'C*' OR instr(ZCONTENT, 'evil') > 0", -1, &rows, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(rows) == SQLITE_ROW && sqlite3_column_int64(rows, 0) == matched && matched > 0);
    sqlite3_finalize(rows);
    sqlite3_close(db);

    /* Saves are written as Core Data writes them (this store is in rollback-journal mode): the
     * changed row's Z_OPT rises, a new row takes the key after Z_MAX (which rises with it), a
     * deleted row goes. Checked with plain SQLite. */
    amber_value changed = text("000000");
    OK(amber_object_set_named(objects[0], "color", &changed));
    int64_t changed_key = 0, deleted_key = 0, new_key = 0;
    OK(amber_object_primary_key(&changed_key, objects[0]));
    OK(amber_object_primary_key(&deleted_key, objects[1]));
    OK(amber_context_delete(context, objects[1]));
    amber_entity *post_entity = NULL;
    OK(amber_model_entity(&post_entity, model, "Post"));
    amber_object *post = NULL;
    OK(amber_context_insert(&post, context, post_entity));
    amber_value fields[] = {text("new post"), text("FFFFFF"), text("written from C")};
    const char *field_names[] = {"postID", "color", "content"};
    for (int i = 0; i < 3; i++) OK(amber_object_set_named(post, field_names[i], &fields[i]));
    amber_value when = {.type = AMBER_VALUE_DATE, .v.date = 978307200.0 + 86400.5};
    OK(amber_object_set_named(post, "date", &when));
    OK(amber_context_save(context));
    OK(amber_object_primary_key(&new_key, post));
    CHECK(new_key == 11);
    CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT (SELECT Z_OPT || ' ' || ZCOLOR FROM ZPOST WHERE Z_PK = %lld), (SELECT count(*) FROM ZPOST WHERE Z_PK = %lld), "
             "(SELECT Z_ENT || ' ' || Z_OPT || ' ' || ZPOSTID || ' ' || ZCOLOR || ' ' || ZDATE FROM ZPOST WHERE Z_PK = %lld), "
             "(SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Post'), (SELECT journal_mode FROM pragma_journal_mode)",
             (long long)changed_key, (long long)deleted_key, (long long)new_key);
    CHECK(sqlite3_prepare_v2(db, sql, -1, &rows, NULL) == SQLITE_OK && sqlite3_step(rows) == SQLITE_ROW);
    CHECK(strcmp((const char *)sqlite3_column_text(rows, 0), "2 000000") == 0);
    CHECK(sqlite3_column_int64(rows, 1) == 0);
    CHECK(strcmp((const char *)sqlite3_column_text(rows, 2), "1 1 new post FFFFFF 86400.5") == 0);
    CHECK(sqlite3_column_int64(rows, 3) == 11);
    CHECK(strcmp((const char *)sqlite3_column_text(rows, 4), "delete") == 0);
    sqlite3_finalize(rows);
    sqlite3_close(db);
    int32_t pending = 1;
    OK(amber_context_has_changes(&pending, context));
    CHECK(pending == 0);
    amber_free(objects);
    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));

    /* The bundle's current version split and renamed what this store holds. */
    OK(amber_model_from_xcode(&model, NULL, bundle, NULL, NULL));
    FAILS(amber_store_open_url(&store, path, model, NULL), AMBER_E_MODEL_MISMATCH, "is not in the model");
    OK(amber_model_free(model));
    FAILS(amber_model_from_xcode(&model, NULL, bundle, "No Such Version", NULL), AMBER_E_INVALID_MODEL, "No Such Version");
    FAILS(amber_model_from_xcode(&model, NULL, NULL, NULL, NULL), AMBER_E_NULL_ARGUMENT, "path");
    remove(path);

    /* A store alone opens with the model it keeps of itself (Z_MODELCACHE). */
    snprintf(source, sizeof source, "%s/CoreDataPlus/SampleModel3_V1.sqlite", base);
    snprintf(path, sizeof path, "%s-users.sqlite", argc > 1 ? argv[1] : "coredata_test");
    char source_wal[4200], path_wal[4200];
    snprintf(source_wal, sizeof source_wal, "%s-wal", source);
    snprintf(path_wal, sizeof path_wal, "%s-wal", path);
    CHECK(copy_file(source, path) == 0 && copy_file(source_wal, path_wal) == 0);
    OK(amber_store_open_existing(&store, &model, path, NULL));
    amber_entity *user = NULL;
    OK(amber_model_entity(&user, model, "User"));
    OK(amber_context_new(&context, store));
    amber_fetch_request users = AMBER_FETCH_REQUEST_INIT;
    users.entity = "User";
    users.predicate = "petName ENDSWITH '_0'";
    OK(amber_context_count(&matched, context, &users));
    CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    CHECK(sqlite3_prepare_v2(db, "SELECT count(*) FROM ZUSER WHERE ZPETNAME LIKE '%\\_0' ESCAPE '\\'", -1, &rows, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(rows) == SQLITE_ROW && sqlite3_column_int64(rows, 0) == matched && matched == 3);
    sqlite3_finalize(rows);
    sqlite3_close(db);
    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));

    /* Copied into an Amber store: every user, which then opens with the model it carries. */
    char copy[4200], copy_wal[4300], copy_shm[4300];
    snprintf(copy, sizeof copy, "%s-users.amber", argc > 1 ? argv[1] : "coredata_test");
    snprintf(copy_wal, sizeof copy_wal, "%s-wal", copy);
    snprintf(copy_shm, sizeof copy_shm, "%s-shm", copy);
    remove(copy);
    remove(copy_wal);
    remove(copy_shm);
    int64_t copied = 0;
    OK(amber_store_import_coredata(&copied, path, copy, NULL, NULL));
    CHECK(copied == 12);
    FAILS(amber_store_import_coredata(&copied, path, copy, NULL, NULL), AMBER_E_EXISTS, copy);
    OK(amber_store_open_existing(&store, &model, copy, NULL));
    OK(amber_context_new(&context, store));
    int64_t again = -1;
    OK(amber_context_count(&again, context, &users));
    CHECK(again == matched);
    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));
    FAILS(amber_store_import_coredata(NULL, copy, "never.amber", NULL, NULL), AMBER_E_NOT_A_STORE, "Core Data");
    remove(copy);
    remove(copy_wal);
    remove(copy_shm);
    remove(path);
    remove(path_wal);

    /* A store whose model exists only in it, with the app's two transformers stood in for from C. */
    snprintf(path, sizeof path, "%s-pages.sqlite", argc > 1 ? argv[1] : "coredata_test");
    CHECK(copy_store(base, "CoreDataPlus/SampleModel2_V1.sqlite", path) == 0);
    amber_registry *registry = NULL;
    OK(amber_registry_new(&registry));
    OK(amber_registry_register_transformer(registry, "CoverTransformer", "PropertyList", "Binary", pass_bytes, pass_bytes, release_bytes, NULL, NULL));
    OK(amber_registry_register_transformer(registry, "ContentTransformer", "PropertyList", "Binary", pass_bytes, pass_bytes, release_bytes, NULL, NULL));
    OK(amber_store_open_existing(&store, &model, path, registry));
    OK(amber_context_new(&context, store));
    amber_sort by_number = {"number", 0, 0};
    amber_fetch_request pages = AMBER_FETCH_REQUEST_INIT;
    pages.entity = "Page";
    pages.predicate = "book.title == 'title 7 - author 2'";
    pages.sort = &by_number;
    pages.sort_count = 1;
    OK(amber_context_fetch(&objects, &count, context, &pages));
    CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    CHECK(sqlite3_prepare_v2(db, "SELECT p.ZNUMBER, p.ZCONTENT FROM ZPAGE p JOIN ZBOOK b ON p.ZBOOK = b.Z_PK "
                                 "WHERE b.ZTITLE = 'title 7 - author 2' ORDER BY p.ZNUMBER", -1, &rows, NULL) == SQLITE_OK);
    seen = 0;
    while (sqlite3_step(rows) == SQLITE_ROW && seen < count) {
        amber_value value;
        OK(amber_object_get_named(&value, objects[seen], "number"));
        CHECK(value.type == AMBER_VALUE_INT && value.v.integer == sqlite3_column_int64(rows, 0));
        amber_value_release(&value);
        OK(amber_object_get_named(&value, objects[seen], "content"));
        CHECK(value.type == AMBER_VALUE_BINARY && value.v.bytes.length == (size_t)sqlite3_column_bytes(rows, 1)
              && memcmp(value.v.bytes.data, sqlite3_column_blob(rows, 1), value.v.bytes.length) == 0);
        amber_value_release(&value);
        seen++;
    }
    CHECK(seen == count && count > 0);
    sqlite3_finalize(rows);
    sqlite3_close(db);
    amber_free(objects);
    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));
    OK(amber_registry_free(registry));
    for (int i = 0; i < 3; i++) {
        const char *suffixes[] = {"", "-wal", "-shm"};
        char file[4300];
        snprintf(file, sizeof file, "%s%s", path, suffixes[i]);
        remove(file);
    }
    return report();
}
