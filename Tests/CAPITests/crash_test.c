/* Crash consistency: a child process saves in a loop (each save inserts a
 * batch of entries with payloads of varied sizes, deletes an old batch and
 * moves a counter) and is killed with SIGKILL at a random moment; after
 * every kill the store must pass amber_store_check, hold every save the
 * child was told succeeded, and hold each save whole or not at all (the one
 * in flight may have committed without the child hearing). Half the rounds
 * kill at a random time from the child's start (during opening and
 * recovery too), half shortly after its first save; odd rounds use
 * AMBER_DURABILITY_FULL.
 *
 * AMBER_CRASH_ROUNDS sets the number of rounds (default 30; CI runs the
 * default, a few hundred is a thorough run). AMBER_CRASH_SEED the seed. */
#define _POSIX_C_SOURCE 200809L
#include <amber.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

enum { PER_SAVE = 8, KEPT = 4, MAX_PAYLOAD = 6000 }; /* MAX_PAYLOAD: of the usual entries */

static amber_model *model;
static amber_entity *entry_entity, *counter_entity;
static amber_attribute *batch_attribute, *slot_attribute, *payload_attribute, *last_attribute;

static void build_model(void) {
    amber_model_builder *builder = NULL;
    OK(amber_model_builder_new(&builder));
    OK(amber_model_builder_add_entity(builder, "Entry"));
    add_attribute(builder, "Entry", "batch", AMBER_TYPE_INTEGER64);
    add_attribute(builder, "Entry", "slot", AMBER_TYPE_INTEGER64);
    add_attribute(builder, "Entry", "payload", AMBER_TYPE_BINARY);
    OK(amber_model_builder_add_entity(builder, "Counter"));
    add_attribute(builder, "Counter", "last", AMBER_TYPE_INTEGER64);
    OK(amber_model_builder_bind(&model, builder, NULL));
    OK(amber_model_builder_free(builder));
    OK(amber_model_entity(&entry_entity, model, "Entry"));
    OK(amber_model_entity(&counter_entity, model, "Counter"));
    OK(amber_entity_attribute(&batch_attribute, entry_entity, "batch"));
    OK(amber_entity_attribute(&slot_attribute, entry_entity, "slot"));
    OK(amber_entity_attribute(&payload_attribute, entry_entity, "payload"));
    OK(amber_entity_attribute(&last_attribute, counter_entity, "last"));
}

/* The payload of entry `slot` of batch `batch`: its size and bytes follow from both. Slot 0 of
 * every 7th batch is 200 KB (bound without a copy) and of every 50th 17 MB (the save that
 * leaves a log past 16 MiB, which the checkpoint after it truncates). */
static size_t payload_size(int64_t batch, int64_t slot) {
    if (slot == 0 && batch % 50 == 0) return 17u << 20;
    if (slot == 0 && batch % 7 == 0) return 200u << 10;
    return (size_t)((batch * 131 + slot * 977) % MAX_PAYLOAD);
}
static unsigned char payload_byte(int64_t batch, int64_t slot, size_t i) { return (unsigned char)(batch * 31 + slot * 7 + (int64_t)i); }

static amber_object **fetch(amber_context *context, const char *entity, const char *predicate, size_t *count) {
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = entity;
    request.predicate = predicate;
    amber_object **objects = NULL;
    *count = 0;
    return amber_context_fetch(&objects, count, context, &request) == AMBER_OK ? objects : NULL;
}

static int64_t integer_of(amber_object *object, amber_attribute *attribute) {
    amber_value value;
    if (amber_object_get(&value, object, attribute) != AMBER_OK || value.type != AMBER_VALUE_INT) return -1;
    return value.v.integer;
}

/* The child: saves batch after batch until killed, reporting each save that returned AMBER_OK on `report`. */
static int saver(const char *path, int durability, int report) {
    amber_store_options options = AMBER_STORE_OPTIONS_INIT;
    options.durability = durability;
    amber_store *store = NULL;
    amber_context *context = NULL;
    if (amber_store_open_with_options(&store, path, model, &options) != AMBER_OK || amber_context_new(&context, store) != AMBER_OK) {
        return 1;
    }
    size_t found = 0;
    amber_object **counters = fetch(context, "Counter", NULL, &found);
    amber_object *counter = NULL;
    if (found == 1) counter = counters[0];
    else if (found != 0 || amber_context_insert(&counter, context, counter_entity) != AMBER_OK) return 1;
    amber_free(counters);
    int64_t batch = found == 1 ? integer_of(counter, last_attribute) : 0;
    unsigned char *bytes = malloc(17u << 20);
    if (!bytes) return 1;
    for (;;) {
        batch++;
        for (int64_t slot = 0; slot < PER_SAVE; slot++) {
            size_t size = payload_size(batch, slot);
            for (size_t i = 0; i < size; i++) bytes[i] = payload_byte(batch, slot, i);
            amber_value batch_value = {.type = AMBER_VALUE_INT, .v.integer = batch};
            amber_value slot_value = {.type = AMBER_VALUE_INT, .v.integer = slot};
            amber_value payload = {.type = AMBER_VALUE_BINARY};
            payload.v.bytes.data = bytes; /* copied at set */
            payload.v.bytes.length = size;
            amber_object *entry = NULL;
            if (amber_context_insert(&entry, context, entry_entity) != AMBER_OK ||
                amber_object_set(entry, batch_attribute, &batch_value) != AMBER_OK ||
                amber_object_set(entry, slot_attribute, &slot_value) != AMBER_OK ||
                amber_object_set(entry, payload_attribute, &payload) != AMBER_OK) {
                return 1;
            }
        }
        char predicate[64];
        snprintf(predicate, sizeof predicate, "batch == %lld", (long long)(batch - KEPT));
        amber_object **old = fetch(context, "Entry", predicate, &found);
        for (size_t i = 0; i < found; i++) {
            if (amber_context_delete(context, old[i]) != AMBER_OK) return 1;
        }
        amber_free(old);
        amber_value last = {.type = AMBER_VALUE_INT, .v.integer = batch};
        if (amber_object_set(counter, last_attribute, &last) != AMBER_OK || amber_context_save(context) != AMBER_OK) return 1;
        if (write(report, &batch, sizeof batch) != (ssize_t)sizeof batch) return 1;
    }
}

/* Checks the store after a kill: sound, `reported` not lost, every kept batch whole. Returns the last batch saved. */
static int64_t verify(const char *path, int64_t reported) {
    amber_store *store = NULL;
    amber_context *context = NULL;
    OK(amber_store_open(&store, path, model));
    OK(amber_context_new(&context, store));
    char *problems = NULL;
    size_t problem_count = 0;
    OK(amber_store_check(&problems, &problem_count, store));
    CHECK(problem_count == 0);
    if (problem_count) fprintf(stderr, "store problems after a kill:\n%s\n", problems);
    amber_free(problems);

    size_t found = 0;
    amber_object **counters = fetch(context, "Counter", NULL, &found);
    int64_t last = found == 1 ? integer_of(counters[0], last_attribute) : 0;
    CHECK(found <= 1);
    amber_free(counters);
    /* No save that returned is lost; at most the one in flight is there besides. */
    CHECK(last >= reported && last <= reported + 1);
    if (last < reported) fprintf(stderr, "lost saves: the child saved batch %lld, the store has %lld\n", (long long)reported, (long long)last);

    amber_object **entries = fetch(context, "Entry", NULL, &found);
    int64_t first_kept = last - KEPT + 1 < 1 ? 1 : last - KEPT + 1;
    CHECK(found == (size_t)(last - first_kept + 1) * PER_SAVE);
    int per_batch[KEPT] = {0};
    for (size_t i = 0; i < found; i++) {
        int64_t batch = integer_of(entries[i], batch_attribute), slot = integer_of(entries[i], slot_attribute);
        CHECK(batch >= first_kept && batch <= last && slot >= 0 && slot < PER_SAVE);
        if (batch < first_kept || batch > last) continue;
        per_batch[batch - first_kept]++;
        amber_value payload;
        OK(amber_object_get(&payload, entries[i], payload_attribute));
        size_t size = payload_size(batch, slot);
        int same = payload.type == AMBER_VALUE_BINARY && payload.v.bytes.length == size;
        for (size_t j = 0; same && j < size; j++) same = ((const unsigned char *)payload.v.bytes.data)[j] == payload_byte(batch, slot, j);
        CHECK(same);
        amber_value_release(&payload);
    }
    for (int64_t b = first_kept; b <= last; b++) CHECK(per_batch[b - first_kept] == PER_SAVE);
    amber_free(entries);
    OK(amber_context_free(context));
    OK(amber_store_close(store));
    return last;
}

/* Reads one reported batch number; 0 at end of file. */
static int64_t read_report(int fd) {
    int64_t batch = 0;
    size_t got = 0;
    while (got < sizeof batch) {
        ssize_t n = read(fd, (char *)&batch + got, sizeof batch - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return 0;
        got += (size_t)n;
    }
    return batch;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "/tmp/amber-crash-test.amber";
    const char *rounds_text = getenv("AMBER_CRASH_ROUNDS"), *seed_text = getenv("AMBER_CRASH_SEED");
    int rounds = rounds_text && atoi(rounds_text) > 0 ? atoi(rounds_text) : 30;
    unsigned seed = seed_text ? (unsigned)strtoul(seed_text, NULL, 10) : 20261124u;
    srand(seed);
    build_model();
    unlink(path);
    char side[4200];
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);

    int64_t last = 0, kills_after_saves = 0;
    for (int round = 0; round < rounds; round++) {
        int pipes[2];
        CHECK(pipe(pipes) == 0);
        pid_t child = fork();
        if (child == 0) {
            close(pipes[0]);
            _exit(saver(path, round % 2 ? AMBER_DURABILITY_FULL : AMBER_DURABILITY_NORMAL, pipes[1]));
        }
        close(pipes[1]);
        int64_t reported = last;
        if (round % 2) {
            int64_t first = read_report(pipes[0]);
            if (first) reported = first;
        }
        struct timespec pause = {0, (long)(rand() % 40) * 1000000L + rand() % 1000000};
        nanosleep(&pause, NULL);
        kill(child, SIGKILL);
        int status = 0;
        CHECK(waitpid(child, &status, 0) == child);
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        if (!WIFSIGNALED(status)) fprintf(stderr, "round %d: the saver exited with %d before the kill\n", round, WEXITSTATUS(status));
        for (int64_t batch; (batch = read_report(pipes[0])) != 0;) reported = batch;
        close(pipes[0]);
        if (reported > last) kills_after_saves++;
        last = verify(path, reported);
    }
    /* The rounds did kill savers between saves, not only before their first. */
    CHECK(kills_after_saves >= rounds / 2);
    printf("%d rounds (seed %u): %lld batches saved, %lld kills after a save\n", rounds, seed, (long long)last, (long long)kills_after_saves);
    OK(amber_model_free(model));
    return report();
}
