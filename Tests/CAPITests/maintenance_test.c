/* Store maintenance through the C API: amber_store_check (a sound store, a
 * damaged copy, a file that is not SQLite), amber_store_backup (a whole
 * store at a new path, never over an existing file, in-memory stores too),
 * amber_store_vacuum (the file shrinks, the objects stay), and
 * amber_store_checkpoint (the log is emptied); a store closed normally
 * leaves no -wal file, and one large save leaves no log of its size behind
 * a process that exits without closing. Also the durability option. */
#define _POSIX_C_SOURCE 200809L
#include <amber.h>

#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static amber_model *model;
static amber_entity *note_entity;
static amber_attribute *body_attribute, *number_attribute, *blob_attribute;

static void build_model(void) {
    amber_model_builder *builder = NULL;
    OK(amber_model_builder_new(&builder));
    OK(amber_model_builder_add_entity(builder, "Note"));
    add_attribute(builder, "Note", "body", AMBER_TYPE_STRING);
    add_attribute(builder, "Note", "number", AMBER_TYPE_INTEGER64);
    add_attribute(builder, "Note", "blob", AMBER_TYPE_BINARY);
    OK(amber_model_builder_bind(&model, builder, NULL));
    OK(amber_model_builder_free(builder));
    OK(amber_model_entity(&note_entity, model, "Note"));
    OK(amber_entity_attribute(&body_attribute, note_entity, "body"));
    OK(amber_entity_attribute(&number_attribute, note_entity, "number"));
    OK(amber_entity_attribute(&blob_attribute, note_entity, "blob"));
}

/* -1 when the file does not exist. */
static long long file_size(const char *path) {
    struct stat info;
    return stat(path, &info) == 0 ? (long long)info.st_size : -1;
}

/* `path` with `suffix`, in one of 8 buffers used in turn: for passing straight to a call. */
static const char *with_suffix(const char *path, const char *suffix) {
    static char buffers[8][4096];
    static int next;
    char *buffer = buffers[next++ % 8];
    snprintf(buffer, sizeof buffers[0], "%s%s", path, suffix);
    return buffer;
}

static void remove_store(const char *path) {
    unlink(path);
    unlink(with_suffix(path, "-wal"));
    unlink(with_suffix(path, "-shm"));
    unlink(with_suffix(path, "-journal"));
}

/* Inserts `count` notes numbered from `first`, each with a 1 KB body, and saves. */
static void insert_notes(amber_context *context, int64_t first, int count) {
    static char body[1024];
    memset(body, 'x', sizeof body - 1);
    amber_attribute *attributes[] = {body_attribute, number_attribute};
    amber_value *values = calloc((size_t)count * 2, sizeof *values);
    for (int i = 0; i < count; i++) {
        values[2 * i] = text(body);
        values[2 * i + 1] = integer(first + i);
    }
    OK(amber_context_insert_many(NULL, context, note_entity, attributes, 2, values, (size_t)count));
    free(values);
    OK(amber_context_save(context));
}

static int64_t count_notes(amber_context *context, const char *predicate) {
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Note";
    request.predicate = predicate;
    int64_t count = -1;
    OK(amber_context_count(&count, context, &request));
    return count;
}

/* The problems amber_store_check (store) or amber_store_check_file (path) finds; *text is the caller's. */
static size_t problems(char **text, amber_store *store, const char *path) {
    size_t count = 99;
    *text = NULL;
    if (store) OK(amber_store_check(text, &count, store));
    else OK(amber_store_check_file(text, &count, path));
    return count;
}

static void check_finds_nothing_in_a_sound_store(amber_store *store, const char *path) {
    char *report = NULL;
    CHECK(problems(&report, store, NULL) == 0);
    CHECK(report != NULL && report[0] == '\0');
    amber_free(report);
    CHECK(problems(&report, NULL, path) == 0);
    amber_free(report);
}

static void backups(amber_store *store, amber_context *context, const char *path) {
    char copy[4096];
    snprintf(copy, sizeof copy, "%s.copy", path);
    remove_store(copy);
    /* A pending change is not a save: the backup has what was saved. */
    amber_object *pending = NULL;
    OK(amber_context_insert(&pending, context, note_entity));
    OK(amber_store_backup(store, copy));
    CHECK(file_size(copy) > 0);
    CHECK(file_size(with_suffix(copy, "-wal")) == -1);

    amber_store *restored = NULL;
    amber_model *restored_model = NULL;
    amber_context *reader = NULL;
    OK(amber_store_open_existing(&restored, &restored_model, copy, NULL));
    OK(amber_context_new(&reader, restored));
    CHECK(count_notes(reader, NULL) == 2000);
    CHECK(count_notes(reader, "number == 1999") == 1);
    char *report = NULL;
    CHECK(problems(&report, restored, NULL) == 0);
    amber_free(report);
    OK(amber_context_free(reader));
    OK(amber_store_close(restored));
    OK(amber_model_free(restored_model));

    /* Never over an existing file: refused, the file untouched. */
    long long before = file_size(copy);
    FAILS(amber_store_backup(store, copy), AMBER_E_EXISTS, "a file is already there");
    CHECK(strcmp(amber_last_error_origin(), copy) == 0);
    CHECK(file_size(copy) == before);
    FAILS(amber_store_backup(store, path), AMBER_E_EXISTS, path);
    FAILS(amber_store_backup(store, NULL), AMBER_E_NULL_ARGUMENT, "path");
    FAILS(amber_store_backup(NULL, copy), AMBER_E_NULL_ARGUMENT, "store");
    /* Into a folder that does not exist: an SQLite error. */
    FAILS(amber_store_backup(store, "/nonexistent-amber-folder/copy.amber"), AMBER_E_SQLITE, "unable to open");
    OK(amber_context_rollback(context));
    remove_store(copy);

    /* An in-memory store backs up to a file store. */
    amber_store *memory = NULL;
    amber_context *scratch = NULL;
    OK(amber_store_open(&memory, NULL, model));
    OK(amber_context_new(&scratch, memory));
    insert_notes(scratch, 0, 10);
    OK(amber_store_checkpoint(memory)); /* nothing to do */
    OK(amber_store_backup(memory, copy));
    OK(amber_context_free(scratch));
    OK(amber_store_close(memory));
    OK(amber_store_open(&restored, copy, model));
    OK(amber_context_new(&reader, restored));
    CHECK(count_notes(reader, NULL) == 10);
    OK(amber_context_free(reader));
    OK(amber_store_close(restored));
    remove_store(copy);
}

static void vacuum_and_checkpoint(amber_store *store, amber_context *context, const char *path) {
    OK(amber_store_checkpoint(store));
    long long full = file_size(path);
    amber_object **notes = NULL;
    size_t found = 0;
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Note";
    request.predicate = "number >= 100";
    OK(amber_context_fetch(&notes, &found, context, &request));
    CHECK(found == 1900);
    for (size_t i = 0; i < found; i++) OK(amber_context_delete(context, notes[i]));
    amber_free(notes);
    OK(amber_context_save(context));
    CHECK(file_size(with_suffix(path, "-wal")) > 0);
    OK(amber_store_checkpoint(store));
    CHECK(file_size(with_suffix(path, "-wal")) == 0);
    CHECK(file_size(path) == full); /* deleting frees pages inside the file, it does not shrink it */

    OK(amber_store_vacuum(store));
    CHECK(file_size(path) < full / 4);
    CHECK(file_size(with_suffix(path, "-wal")) == 0);
    CHECK(count_notes(context, NULL) == 100);
    CHECK(count_notes(context, "number == 99") == 1);
    insert_notes(context, 2000, 5); /* saving after a vacuum works as before */
    CHECK(count_notes(context, NULL) == 105);
    char *report = NULL;
    CHECK(problems(&report, store, NULL) == 0);
    amber_free(report);
    FAILS(amber_store_vacuum(NULL), AMBER_E_NULL_ARGUMENT, "store");
    FAILS(amber_store_checkpoint(NULL), AMBER_E_NULL_ARGUMENT, "store");
}

/* Copies `from` to `to`, then writes 4 KB of garbage at `offset` of the copy. */
static void damaged_copy(const char *from, const char *to, long offset) {
    remove_store(to);
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    CHECK(in && out);
    char buffer[8192];
    size_t n;
    while ((n = fread(buffer, 1, sizeof buffer, in)) > 0) CHECK(fwrite(buffer, 1, n, out) == n);
    fclose(in);
    CHECK(fseek(out, offset, SEEK_SET) == 0);
    for (size_t i = 0; i < sizeof buffer; i++) buffer[i] = (char)(i * 7919 % 251);
    CHECK(fwrite(buffer, 1, 4096, out) == 4096);
    fclose(out);
}

static void check_reports_damage(const char *path) {
    char damaged[4096];
    snprintf(damaged, sizeof damaged, "%s.damaged", path);
    /* Page 5 onwards holds notes (a sound file of 30+ pages; the file alone once the log is checkpointed). */
    CHECK(file_size(path) > 30 * 4096);
    damaged_copy(path, damaged, 5 * 4096);
    char *report = NULL;
    size_t count = problems(&report, NULL, damaged);
    CHECK(count > 0);
    CHECK(report != NULL && strlen(report) > 0);
    if (count == 0) fprintf(stderr, "no problem found in the damaged copy\n");
    amber_free(report);

    /* Damage over the first page: not a database at all, still a report, not an error. */
    damaged_copy(path, damaged, 0);
    count = problems(&report, NULL, damaged);
    CHECK(count == 1 && strstr(report, "not a database") != NULL);
    amber_free(report);
    remove_store(damaged);

    size_t lines = 0;
    FAILS(amber_store_check_file(&report, &lines, with_suffix(path, ".missing")), AMBER_E_NOT_A_STORE, "no such file");
    FAILS(amber_store_check_file(NULL, &lines, path), AMBER_E_NULL_ARGUMENT, "out");
    FAILS(amber_store_check(&report, NULL, NULL), AMBER_E_NULL_ARGUMENT, "out_count");
}

/* A child saves one 24 MB value and is killed without closing: the log it leaves
 * is not the value's size (the save checkpointed and truncated it). */
static void large_save_leaves_no_large_log(const char *path) {
    remove_store(path);
    int saved[2];
    CHECK(pipe(saved) == 0);
    pid_t child = fork();
    if (child == 0) {
        amber_store *store = NULL;
        amber_context *context = NULL;
        amber_object *note = NULL;
        size_t size = 24u << 20;
        unsigned char *bytes = malloc(size);
        for (size_t i = 0; i < size; i++) bytes[i] = (unsigned char)(i * 2654435761u >> 24);
        amber_value value = {.type = AMBER_VALUE_BINARY};
        value.v.bytes.data = bytes;
        value.v.bytes.length = size;
        int ok = amber_store_open(&store, path, model) == AMBER_OK && amber_context_new(&context, store) == AMBER_OK &&
                 amber_context_insert(&note, context, note_entity) == AMBER_OK &&
                 amber_object_set(note, blob_attribute, &value) == AMBER_OK && amber_context_save(context) == AMBER_OK;
        if (!ok) _exit(1);
        close(saved[0]);
        if (write(saved[1], "s", 1) != 1) _exit(1);
        pause(); /* the parent kills it: gone without closing */
    }
    close(saved[1]);
    char byte = 0;
    CHECK(read(saved[0], &byte, 1) == 1 && byte == 's');
    close(saved[0]);
    kill(child, SIGKILL);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    CHECK(file_size(path) > (24 << 20));
    long long log = file_size(with_suffix(path, "-wal"));
    CHECK(log >= 0 && log < (1 << 20));
    if (log >= (1 << 20)) fprintf(stderr, "the log is %lld bytes after a 24 MB save\n", log);
    /* Checking the file opens it read-only: the log the killed process left stays for recovery. */
    char *report = NULL;
    size_t problem_count = 99;
    OK(amber_store_check_file(&report, &problem_count, path));
    CHECK(problem_count == 0);
    amber_free(report);
    CHECK(file_size(with_suffix(path, "-wal")) == log);

    /* The value is there, whole, for the next process. */
    amber_store *store = NULL;
    amber_context *context = NULL;
    OK(amber_store_open(&store, path, model));
    OK(amber_context_new(&context, store));
    amber_object **notes = NULL;
    size_t found = 0;
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Note";
    OK(amber_context_fetch(&notes, &found, context, &request));
    CHECK(found == 1);
    amber_value value;
    OK(amber_object_get(&value, notes[0], blob_attribute));
    CHECK(value.type == AMBER_VALUE_BINARY && value.v.bytes.length == (24u << 20));
    const unsigned char *bytes = value.v.bytes.data;
    CHECK(bytes[12345] == (unsigned char)(12345u * 2654435761u >> 24));
    amber_value_release(&value);
    amber_free(notes);
    OK(amber_context_free(context));
    OK(amber_store_close(store));
    CHECK(file_size(with_suffix(path, "-wal")) == -1);
    remove_store(path);
}

static void durability_option(const char *path) {
    remove_store(path);
    amber_store_options options = AMBER_STORE_OPTIONS_INIT;
    CHECK(options.durability == AMBER_DURABILITY_NORMAL);
    options.durability = AMBER_DURABILITY_FULL;
    amber_store *store = NULL;
    amber_context *context = NULL;
    OK(amber_store_open_with_options(&store, path, model, &options));
    OK(amber_context_new(&context, store));
    insert_notes(context, 0, 3);
    CHECK(count_notes(context, NULL) == 3);
    OK(amber_context_free(context));
    OK(amber_store_close(store));
    options.durability = 7;
    store = NULL;
    FAILS(amber_store_open_with_options(&store, path, model, &options), AMBER_E_INVALID_VALUE, "options->durability is 7");
    CHECK(strcmp(amber_last_error_origin(), "options->durability") == 0);
    CHECK(store == NULL);
    /* A caller compiled before `durability` existed sends a smaller size: the default applies. */
    options.size = offsetof(amber_store_options, durability);
    OK(amber_store_open_with_options(&store, path, model, &options));
    OK(amber_store_close(store));
    remove_store(path);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "/tmp/amber-maintenance-test.amber";
    build_model();
    remove_store(path);

    amber_store *store = NULL;
    amber_context *context = NULL;
    OK(amber_store_open(&store, path, model));
    OK(amber_context_new(&context, store));
    insert_notes(context, 0, 2000);
    check_finds_nothing_in_a_sound_store(store, path);
    backups(store, context, path);
    OK(amber_store_checkpoint(store));
    check_reports_damage(path);
    vacuum_and_checkpoint(store, context, path);
    OK(amber_context_free(context));
    OK(amber_store_close(store));
    /* Closed normally: only the store file is left. */
    CHECK(file_size(with_suffix(path, "-wal")) == -1);
    CHECK(file_size(with_suffix(path, "-shm")) == -1);
    CHECK(file_size(path) > 0);

    large_save_leaves_no_large_log(path);
    durability_option(path);
    OK(amber_model_free(model));
    return report();
}
