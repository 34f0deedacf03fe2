/* Exact or refused, through the C API: seeded random values of every scalar
 * type and plist JSON through amber_object_set, save, reopen and
 * amber_object_get. Each value reads back as it was set (type and bits), or
 * the set fails with AMBER_E_INVALID_VALUE naming Entity.attribute, as a
 * plain statement of the rules (must_refuse) says. */
#include <amber.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

static const char model_json[] =
    "{\"entities\": [{\"name\": \"Sample\", \"attributes\": ["
    "  {\"name\": \"seq\", \"type\": \"integer64\"},"
    "  {\"name\": \"i16\", \"type\": \"integer16\"},"
    "  {\"name\": \"ratio\", \"type\": \"double\"},"
    "  {\"name\": \"weight\", \"type\": \"float\"},"
    "  {\"name\": \"when\", \"type\": \"date\"},"
    "  {\"name\": \"flag\", \"type\": \"boolean\"},"
    "  {\"name\": \"tags\", \"type\": \"transformable\"}"
    "]}]}";

enum { N = 300, FIELDS = 6 };
static const char *names[FIELDS] = {"i16", "ratio", "weight", "when", "flag", "tags"};

static uint64_t state = 41;
static uint64_t next(void) { /* SplitMix64 */
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double any_double(void) {
    static const double edges[] = {0.0, -0.0, 1.0, 0.1, INFINITY, -INFINITY, NAN, 1e308, 5e-324};
    if (next() % 3 == 0) return edges[next() % (sizeof edges / sizeof *edges)];
    uint64_t bits = next();
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* JSON arrays: exact texts that must read back as they are, and texts that must be refused. */
static const char *exact_json[] = {
    "[1.0,1,-0.0,1e+300]", "{\"a\":[true,false,null],\"b\":{\"$float\":0.5}}", "[{\"$date\":\"1999-12-31T23:59:59.5Z\"}]",
    "[{\"$dictionary\":{\"$date\":\"not a date\"}}]", "[9223372036854775807,-9223372036854775808]", "[\"\\u0000\\n\\\"\"]",
    "[{\"$binary\":\"AAEC\"},{\"$uuid\":\"E621E1F8-C36C-495A-93FC-0C247A3E6E5F\"}]",
};
static const char *refused_json[] = {
    "[18446744073709551617]", "[1e400]", "{\"a\":1,\"a\":2}", "[NaN]", "[{\"$date\":\"10000-01-01T00:00:00Z\"}]",
    "[{\"$date\":\"3000-01-01T00:00:00.123457Z\"}]", "[{\"$float\":0.1}]", "[1,]",
};

typedef struct {
    amber_value value;
    int set; /* accepted */
} slot;

/* A date as Amber keeps it: seconds since 2001, read back as seconds since 1970. */
static double kept(double seconds) { return (seconds - 978307200.0) + 978307200.0; }

static int must_refuse(int field, const amber_value *v) {
    switch (field) {
    case 0: return v->v.integer < -32768 || v->v.integer > 32767;
    case 1: return isnan(v->v.real);
    case 2: return isnan(v->v.real32);
    case 3: /* outside the years 1 to 9999, or moved by half a microsecond when kept as seconds since 2001 */
        return isnan(v->v.date) || v->v.date < -62135596800.0 || v->v.date >= 253402300800.0 ||
               fabs(kept(v->v.date) - v->v.date) >= 0.5e-6;
    case 4: return v->v.boolean != 0 && v->v.boolean != 1;
    default: return v->v.text.data[0] == '!';
    }
}

static amber_value random_value(int field, int seq) {
    amber_value v = {0};
    switch (field) {
    case 0: v.type = AMBER_VALUE_INT; v.v.integer = (int64_t)(next() % 131072) - 65536; break;
    case 1: v.type = AMBER_VALUE_DOUBLE; v.v.real = any_double(); break;
    case 2: {
        v.type = AMBER_VALUE_FLOAT;
        uint32_t bits = (uint32_t)next();
        memcpy(&v.v.real32, &bits, sizeof bits);
        break;
    }
    case 3: /* whole seconds and quarters (exact from either origin) across and beyond the years 1 to 9999 */
        v.type = AMBER_VALUE_DATE;
        v.v.date = next() % 5 == 0 ? any_double() : (double)((int64_t)(next() % 700000000000ull) - 200000000000ll) + (double)(next() % 4) / 4;
        break;
    case 4: v.type = AMBER_VALUE_BOOL; v.v.boolean = (int32_t)(next() % 3); break;
    default: {
        /* a '!' marks a text that must be refused; skipped when handing it over */
        static char marked[16][128];
        int refuse = next() % 3 == 0;
        const char *source = refuse ? refused_json[next() % (sizeof refused_json / sizeof *refused_json)]
                                    : exact_json[next() % (sizeof exact_json / sizeof *exact_json)];
        char *buffer = marked[seq % 16];
        snprintf(buffer, sizeof marked[0], "%s%s", refuse ? "!" : "", source);
        v.type = AMBER_VALUE_PLIST;
        v.v.text.data = buffer;
        v.v.text.length = strlen(buffer);
    }
    }
    return v;
}

static int same(int field, const amber_value *set, const amber_value *got) {
    if (got->type != set->type) return 0;
    switch (field) {
    case 0: return got->v.integer == set->v.integer;
    case 1: return set->v.real == 0 ? got->v.real == 0 && !signbit(got->v.real) /* a REAL column holds one zero */
                                    : memcmp(&got->v.real, &set->v.real, sizeof(double)) == 0;
    case 2: return set->v.real32 == 0 ? got->v.real32 == 0 : memcmp(&got->v.real32, &set->v.real32, sizeof(float)) == 0;
    case 3: return got->v.date == kept(set->v.date);
    case 4: return got->v.boolean == set->v.boolean;
    default: return got->v.text.length == set->v.text.length && memcmp(got->v.text.data, set->v.text.data, set->v.text.length) == 0;
    }
}

/* Dates in columns get the check single values get: one that moving to
 * Amber's origin (2001) would change by half a microsecond or more is
 * refused, naming the attribute and row, and nothing is inserted. */
static void test_column_dates(amber_context *context, amber_entity *sample, amber_attribute *when) {
    /* Before 1970, where seconds since 2001 have half the precision: 3.8 µs would move. */
    const double dates[2] = {0.0, -33859738368.0 + 0x1p-18};
    amber_value single = {.type = AMBER_VALUE_DATE};
    single.v.date = dates[1];
    amber_object *object = NULL;
    OK(amber_context_insert(&object, context, sample));
    FAILS(amber_object_set(object, when, &single), AMBER_E_INVALID_VALUE, "cannot be held to the microsecond");
    OK(amber_context_delete(context, object));
    amber_column column = AMBER_COLUMN_INIT;
    column.attribute = when;
    column.type = AMBER_VALUE_DATE;
    column.data = dates;
    FAILS(amber_context_insert_columns(NULL, context, sample, &column, 1, 2), AMBER_E_INVALID_VALUE, "cannot be held to the microsecond");
    CHECK(strstr(amber_last_error_message(), "Sample.when") != NULL && strstr(amber_last_error_message(), "row 1") != NULL);
    size_t pending = 0;
    amber_object **inserted = NULL;
    OK(amber_context_pending_objects(&inserted, &pending, context, AMBER_PENDING_INSERTED));
    CHECK(pending == 0);
    amber_free(inserted);
}

/* A C transformer that says OK but hands back bytes at NULL. */
static int32_t null_bytes(amber_value *out, const amber_value *in, void *userdata) {
    (void)in;
    (void)userdata;
    out->type = AMBER_VALUE_BINARY;
    out->v.bytes.data = NULL;
    out->v.bytes.length = 4;
    return AMBER_OK;
}

/* Its save fails with a sentence naming transformer and attribute, and no Swift type's dump. */
static void test_transformer_with_null_data(void) {
    amber_registry *registry = NULL;
    OK(amber_registry_new(&registry));
    OK(amber_registry_register_transformer(registry, "NullBytes", "String", "Binary", null_bytes, null_bytes, NULL, NULL, NULL));
    static const char json[] = "{\"entities\": [{\"name\": \"Note\", \"attributes\": ["
                               "{\"name\": \"body\", \"type\": \"transformable\", \"valueClass\": \"String\", \"transformer\": \"NullBytes\"}]}]}";
    amber_model *model = NULL;
    amber_store *store = NULL;
    amber_context *context = NULL;
    amber_entity *note = NULL;
    amber_object *object = NULL;
    OK(amber_model_from_json(&model, json, sizeof json - 1, registry));
    OK(amber_store_open(&store, NULL, model));
    OK(amber_context_new(&context, store));
    OK(amber_model_entity(&note, model, "Note"));
    OK(amber_context_insert(&object, context, note));
    amber_value body = text("hello");
    OK(amber_object_set_named(object, "body", &body));
    FAILS(amber_context_save(context), AMBER_E_SAVE_FAILED, "Note.body: transformer \"NullBytes\" (C API)");
    CHECK(strstr(amber_last_error_message(), "NULL") != NULL);
    CHECK(strstr(amber_last_error_message(), "CAPIError") == NULL && strstr(amber_last_error_message(), "code:") == NULL);
    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));
    OK(amber_registry_free(registry));
}

/* Decimals keep the scale they were written with through save and reopen;
 * `==` compares their numbers; text that is not exactly a decimal is refused
 * naming the attribute. */
static void test_decimal_scale(const char *path) {
    static const char json[] = "{\"entities\": [{\"name\": \"Price\", \"attributes\": ["
                               "{\"name\": \"amount\", \"type\": \"decimal\"}]}]}";
    static const char *written[] = {"12.30", "-0.00", "1.2E+3", "+007.50", "1E-7", "12.3"};
    static const char *canonical[] = {"12.30", "-0.00", "1.2E+3", "7.50", "0.0000001", "12.3"};
    enum { COUNT = sizeof written / sizeof *written };
    amber_model *model = NULL;
    amber_store *store = NULL;
    amber_context *context = NULL;
    amber_entity *price = NULL;
    amber_attribute *amount = NULL;
    remove(path);
    OK(amber_model_from_json(&model, json, sizeof json - 1, NULL));
    OK(amber_model_entity(&price, model, "Price"));
    OK(amber_entity_attribute(&amount, price, "amount"));
    OK(amber_store_open(&store, path, model));
    OK(amber_context_new(&context, store));
    for (size_t i = 0; i < COUNT; i++) {
        amber_object *object = NULL;
        amber_value value = text(written[i]);
        value.type = AMBER_VALUE_DECIMAL;
        OK(amber_context_insert(&object, context, price));
        OK(amber_object_set(object, amount, &value));
        if (i == 0) {
            amber_value spaced = text(" 12.5");
            spaced.type = AMBER_VALUE_DECIMAL;
            FAILS(amber_object_set(object, amount, &spaced), AMBER_E_INVALID_VALUE, "Price.amount");
        }
    }
    OK(amber_context_save(context));
    OK(amber_context_free(context));
    OK(amber_store_close(store));

    OK(amber_store_open(&store, path, model));
    OK(amber_context_new(&context, store));
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Price";
    amber_object **objects = NULL;
    size_t count = 0;
    OK(amber_context_fetch(&objects, &count, context, &request));
    CHECK(count == COUNT);
    int found[COUNT] = {0};
    for (size_t i = 0; i < count; i++) {
        amber_value got;
        OK(amber_object_get(&got, objects[i], amount));
        CHECK(got.type == AMBER_VALUE_DECIMAL);
        for (size_t k = 0; k < COUNT; k++)
            if (got.v.text.length == strlen(canonical[k]) && memcmp(got.v.text.data, canonical[k], got.v.text.length) == 0) found[k]++;
        amber_value_release(&got);
    }
    for (size_t k = 0; k < COUNT; k++) {
        if (found[k] != 1) fprintf(stderr, "decimal %s read back %d times\n", canonical[k], found[k]);
        CHECK(found[k] == 1);
    }
    amber_free(objects);
    int64_t matches = 0;
    request.predicate = "amount == 12.3";
    OK(amber_context_count(&matches, context, &request));
    CHECK(matches == 2);
    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));
    remove(path);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "exact.amber";
    remove(path);
    amber_model *model = NULL;
    OK(amber_model_from_json(&model, model_json, sizeof model_json - 1, NULL));
    amber_entity *sample = NULL;
    amber_attribute *seq_attribute = NULL, *attributes[FIELDS];
    OK(amber_model_entity(&sample, model, "Sample"));
    OK(amber_entity_attribute(&seq_attribute, sample, "seq"));
    for (int f = 0; f < FIELDS; f++) OK(amber_entity_attribute(&attributes[f], sample, names[f]));

    static slot rows[N][FIELDS];
    static char texts[N][128]; /* the accepted JSON texts, kept for the comparison */
    int refusals = 0, wrong = 0;
    amber_store *store = NULL;
    amber_context *context = NULL;
    OK(amber_store_open(&store, path, model));
    OK(amber_context_new(&context, store));
    for (int i = 0; i < N; i++) {
        amber_object *object = NULL;
        OK(amber_context_insert(&object, context, sample));
        amber_value seq = integer(i);
        OK(amber_object_set(object, seq_attribute, &seq));
        for (int f = 0; f < FIELDS; f++) {
            amber_value v = random_value(f, i);
            int refuse = must_refuse(f, &v);
            if (f == FIELDS - 1 && refuse) { v.v.text.data++; v.v.text.length--; }
            amber_status status = amber_object_set(object, attributes[f], &v);
            if (refuse) {
                char place[32];
                snprintf(place, sizeof place, "Sample.%s", names[f]);
                if (status != AMBER_E_INVALID_VALUE || strstr(amber_last_error_message(), place) == NULL) {
                    fprintf(stderr, "not refused as expected: %s (status %d: %s)\n", place, status, amber_last_error_message());
                    wrong++;
                }
                refusals++;
            } else if (status != AMBER_OK) {
                fprintf(stderr, "refused: Sample.%s: %s\n", names[f], amber_last_error_message());
                wrong++;
            } else {
                if (f == FIELDS - 1) {
                    snprintf(texts[i], sizeof texts[i], "%.*s", (int)v.v.text.length, v.v.text.data);
                    v.v.text.data = texts[i];
                }
                rows[i][f] = (slot){v, 1};
            }
        }
    }
    CHECK(wrong == 0);
    CHECK(refusals > 100);
    OK(amber_context_save(context));
    OK(amber_context_free(context));
    OK(amber_store_close(store));

    OK(amber_store_open(&store, path, model));
    OK(amber_context_new(&context, store));
    amber_sort sort = {"seq", 0, 0};
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "Sample";
    request.sort = &sort;
    request.sort_count = 1;
    amber_object **objects = NULL;
    size_t count = 0;
    OK(amber_context_fetch(&objects, &count, context, &request));
    CHECK(count == N);
    int mismatches = 0;
    for (size_t i = 0; i < count && i < N; i++) {
        for (int f = 0; f < FIELDS; f++) {
            if (!rows[i][f].set) continue;
            amber_value got;
            if (amber_object_get(&got, objects[i], attributes[f]) != AMBER_OK || !same(f, &rows[i][f].value, &got)) {
                fprintf(stderr, "row %zu Sample.%s differs\n", i, names[f]);
                mismatches++;
            }
            amber_value_release(&got);
        }
    }
    CHECK(mismatches == 0);
    amber_free(objects);
    test_column_dates(context, sample, attributes[3]);
    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));
    test_transformer_with_null_data();
    char decimals[4096];
    snprintf(decimals, sizeof decimals, "%s-decimals", path);
    test_decimal_scale(decimals);
    return report();
}
