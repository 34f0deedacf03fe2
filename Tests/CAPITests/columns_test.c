/* amber_context_insert_columns: every column kind inserted and read back
 * value by value with amber_object_get (in the context, then after a save),
 * null masks, and misuse: NULL pointers, a wrong size field, an attribute of
 * another entity, lengths that do not add up, values out of range, a struct
 * of another size; each refused with an error naming the column or the
 * attribute and the row, and nothing inserted. */
#include <amber.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

struct Point {
    int8_t tag;
    double x;
};

static const char model_json[] =
    "{\"valueClasses\": [{\"name\": \"Point\", \"kind\": \"struct\", \"fields\": ["
    "    {\"name\": \"tag\", \"type\": \"int8\"}, {\"name\": \"x\", \"type\": \"double\"}]},"
    "  {\"name\": \"Blob\", \"kind\": \"opaque\"}],"
    " \"entities\": [{\"name\": \"All\", \"attributes\": ["
    "  {\"name\": \"flag\", \"type\": \"boolean\"},"
    "  {\"name\": \"small\", \"type\": \"integer16\"},"
    "  {\"name\": \"big\", \"type\": \"integer64\"},"
    "  {\"name\": \"ratio\", \"type\": \"double\"},"
    "  {\"name\": \"weight\", \"type\": \"float\"},"
    "  {\"name\": \"when\", \"type\": \"date\"},"
    "  {\"name\": \"key\", \"type\": \"uuid\"},"
    "  {\"name\": \"name\", \"type\": \"string\"},"
    "  {\"name\": \"price\", \"type\": \"decimal\"},"
    "  {\"name\": \"link\", \"type\": \"uri\"},"
    "  {\"name\": \"blob\", \"type\": \"binary\"},"
    "  {\"name\": \"tags\", \"type\": \"transformable\"},"
    "  {\"name\": \"mixed\", \"type\": \"integer32\"},"
    "  {\"name\": \"spot\", \"type\": \"undefined\", \"transient\": true, \"valueClass\": \"Point\"},"
    "  {\"name\": \"raw\", \"type\": \"undefined\", \"transient\": true, \"valueClass\": \"Blob\"}"
    "]}, {\"name\": \"Other\", \"attributes\": [{\"name\": \"n\", \"type\": \"integer16\"}]}]}";

enum { ROWS = 64, COLUMNS = 15 };

static amber_model *model;
static amber_store *store;
static amber_context *context;
static amber_entity *all, *other;
static amber_attribute *attributes[COLUMNS];
static const char *const names[COLUMNS] = {"flag", "small", "big", "ratio", "weight", "when", "key", "name",
                                           "price", "link", "blob", "tags", "mixed", "spot", "raw"};

/* The data, column by column. */
static uint8_t flags[ROWS], nulls[ROWS];
static int64_t smalls[ROWS], bigs[ROWS];
static double ratios[ROWS], whens[ROWS];
static float weights[ROWS];
static uint8_t keys[ROWS][16];
static char text_data[ROWS * 32], prices[ROWS * 16], links[ROWS * 40], blobs[ROWS * 8], raws[ROWS * 8];
static size_t text_lengths[ROWS], price_lengths[ROWS], link_lengths[ROWS], blob_lengths[ROWS], raw_lengths[ROWS];
static size_t text_size, price_size, link_size, blob_size, raw_size;
static const char *tag_json[2] = {"[1, \"two\", {\"three\": 3.5}]", "{\"a\": [true, null]}"};
static amber_value mixed[ROWS];
static struct Point points[ROWS];

static size_t append(char *buffer, size_t *size, const char *bytes, size_t length) {
    memcpy(buffer + *size, bytes, length);
    *size += length;
    return length;
}

static void make_data(void) {
    uint64_t seed = 42;
    for (int i = 0; i < ROWS; i++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        flags[i] = (uint8_t)(seed >> 63);
        nulls[i] = (uint8_t)(i % 5 == 3);
        smalls[i] = (int64_t)(seed >> 48) - 32768;
        bigs[i] = (int64_t)seed;
        ratios[i] = (double)(int64_t)seed / 1e6;
        weights[i] = (float)i / 8.0f - 3.0f;
        whens[i] = 1.7e9 + i * 86400.0 + 0.5;
        for (int b = 0; b < 16; b++) keys[i][b] = (uint8_t)(seed >> (b % 8 * 8)) ^ (uint8_t)b;
        char item[64];
        int length = snprintf(item, sizeof item, i % 4 == 0 ? "crème %d 🍮" : "name %d", i);
        text_lengths[i] = append(text_data, &text_size, item, (size_t)length);
        length = snprintf(item, sizeof item, "%d.%02d", i - 20, i % 100);
        price_lengths[i] = append(prices, &price_size, item, (size_t)length);
        length = snprintf(item, sizeof item, "https://example.com/%d?q=%d#f", i, i * 3);
        link_lengths[i] = append(links, &link_size, item, (size_t)length);
        for (int b = 0; b < i % 8; b++) item[b] = (char)(i * 31 + b);
        blob_lengths[i] = append(blobs, &blob_size, item, (size_t)(i % 8));
        raw_lengths[i] = append(raws, &raw_size, item, (size_t)(i % 5 + 1));
        if (i % 3 == 0) {
            mixed[i].type = AMBER_VALUE_NULL;
        } else {
            mixed[i].type = AMBER_VALUE_INT;
            mixed[i].v.integer = i * 1000;
        }
        memset(&points[i], 0, sizeof points[i]);
        points[i].tag = (int8_t)(i - 32);
        points[i].x = i * 0.25;
    }
}

/* The columns of every kind, in `names` order. */
static void make_columns(amber_column *columns, char *tags, size_t *tag_lengths, size_t *tag_size) {
    for (int c = 0; c < COLUMNS; c++) {
        amber_column column = AMBER_COLUMN_INIT;
        column.attribute = attributes[c];
        columns[c] = column;
    }
    columns[0].type = AMBER_VALUE_BOOL; columns[0].data = flags; columns[0].nulls = nulls;
    columns[1].type = AMBER_VALUE_INT; columns[1].data = smalls; columns[1].data_size = sizeof smalls;
    columns[2].type = AMBER_VALUE_INT; columns[2].data = bigs; columns[2].nulls = nulls;
    columns[3].type = AMBER_VALUE_DOUBLE; columns[3].data = ratios;
    columns[4].type = AMBER_VALUE_FLOAT; columns[4].data = weights;
    columns[5].type = AMBER_VALUE_DATE; columns[5].data = whens; columns[5].nulls = nulls;
    columns[6].type = AMBER_VALUE_UUID; columns[6].data = keys;
    columns[7].type = AMBER_VALUE_STRING; columns[7].data = text_data; columns[7].lengths = text_lengths; columns[7].data_size = text_size;
    columns[8].type = AMBER_VALUE_DECIMAL; columns[8].data = prices; columns[8].lengths = price_lengths; columns[8].data_size = price_size;
    columns[9].type = AMBER_VALUE_URI; columns[9].data = links; columns[9].lengths = link_lengths; columns[9].data_size = link_size;
    columns[9].nulls = nulls;
    columns[10].type = AMBER_VALUE_BINARY; columns[10].data = blobs; columns[10].lengths = blob_lengths; columns[10].data_size = blob_size;
    *tag_size = 0;
    for (int i = 0; i < ROWS; i++) tag_lengths[i] = append(tags, tag_size, tag_json[i % 2], strlen(tag_json[i % 2]));
    columns[11].type = AMBER_VALUE_PLIST; columns[11].data = tags; columns[11].lengths = tag_lengths; columns[11].data_size = *tag_size;
    columns[12].type = AMBER_COLUMN_VALUES; columns[12].data = mixed;
    columns[13].type = AMBER_VALUE_CUSTOM; columns[13].data = points; columns[13].element_size = sizeof(struct Point);
    columns[13].nulls = nulls;
    columns[14].type = AMBER_VALUE_CUSTOM; columns[14].data = raws; columns[14].lengths = raw_lengths; columns[14].data_size = raw_size;
    columns[14].class_name = "Blob";
}

/* Whether `value` (from amber_object_get) is row `i` of column `c`. */
static int matches(const amber_value *value, int c, int i) {
    int null = nulls[i] && (c == 0 || c == 2 || c == 5 || c == 9 || c == 13);
    if (null) return value->type == AMBER_VALUE_NULL;
    size_t offset = 0;
    switch (c) {
    case 0: return value->type == AMBER_VALUE_BOOL && value->v.boolean == flags[i];
    case 1: return value->type == AMBER_VALUE_INT && value->v.integer == smalls[i];
    case 2: return value->type == AMBER_VALUE_INT && value->v.integer == bigs[i];
    case 3: return value->type == AMBER_VALUE_DOUBLE && value->v.real == ratios[i];
    case 4: return value->type == AMBER_VALUE_FLOAT && value->v.real32 == weights[i];
    case 5: return value->type == AMBER_VALUE_DATE && value->v.date == whens[i];
    case 6: return value->type == AMBER_VALUE_UUID && memcmp(value->v.uuid, keys[i], 16) == 0;
    case 7:
        for (int k = 0; k < i; k++) offset += text_lengths[k];
        return value->type == AMBER_VALUE_STRING && value->v.text.length == text_lengths[i] &&
               memcmp(value->v.text.data, text_data + offset, text_lengths[i]) == 0;
    case 8: {
        char expected[16];
        for (int k = 0; k < i; k++) offset += price_lengths[k];
        memcpy(expected, prices + offset, price_lengths[i]);
        expected[price_lengths[i]] = '\0';
        /* Decimals come back in canonical form ("-20.00" -> "-20"): compare as numbers. */
        return value->type == AMBER_VALUE_DECIMAL && strtod(value->v.text.data, NULL) == strtod(expected, NULL);
    }
    case 9:
        for (int k = 0; k < i; k++) offset += link_lengths[k];
        return value->type == AMBER_VALUE_URI && value->v.text.length == link_lengths[i] &&
               memcmp(value->v.text.data, links + offset, link_lengths[i]) == 0;
    case 10:
        for (int k = 0; k < i; k++) offset += blob_lengths[k];
        return value->type == AMBER_VALUE_BINARY && value->v.bytes.length == blob_lengths[i] &&
               (blob_lengths[i] == 0 || memcmp(value->v.bytes.data, blobs + offset, blob_lengths[i]) == 0);
    case 11: return value->type == AMBER_VALUE_PLIST && value->v.text.length > 0 &&
                    (i % 2 == 0 ? strstr(value->v.text.data, "three") : strstr(value->v.text.data, "\"a\"")) != NULL;
    case 12:
        if (mixed[i].type == AMBER_VALUE_NULL) return value->type == AMBER_VALUE_NULL;
        return value->type == AMBER_VALUE_INT && value->v.integer == mixed[i].v.integer;
    case 13:
        return value->type == AMBER_VALUE_CUSTOM && strcmp(value->v.custom.class_name, "Point") == 0 &&
               value->v.custom.length == sizeof(struct Point) &&
               memcmp(value->v.custom.data, &points[i], sizeof(struct Point)) == 0;
    case 14:
        for (int k = 0; k < i; k++) offset += raw_lengths[k];
        return value->type == AMBER_VALUE_CUSTOM && strcmp(value->v.custom.class_name, "Blob") == 0 &&
               value->v.custom.length == raw_lengths[i] && memcmp(value->v.custom.data, raws + offset, raw_lengths[i]) == 0;
    }
    return 0;
}

static int wrong_values(amber_object *const *objects, int transient_too) {
    int wrong = 0;
    for (int i = 0; i < ROWS; i++) {
        for (int c = 0; c < COLUMNS; c++) {
            if (!transient_too && c >= 13) continue;
            amber_value value;
            if (amber_object_get(&value, objects[i], attributes[c]) != AMBER_OK || !matches(&value, c, i)) {
                if (wrong++ < 5) fprintf(stderr, "row %d: %s differs (type %d)\n", i, names[c], value.type);
            }
            amber_value_release(&value);
        }
    }
    return wrong;
}

static void test_every_kind_round_trips(void) {
    amber_column columns[COLUMNS];
    char tags[ROWS * 40];
    size_t tag_lengths[ROWS], tag_size = 0;
    make_columns(columns, tags, tag_lengths, &tag_size);
    amber_object *objects[ROWS];
    OK(amber_context_insert_columns(objects, context, all, columns, COLUMNS, ROWS));
    CHECK(wrong_values(objects, 1) == 0);
    OK(amber_context_save(context));

    amber_context *fresh = NULL;
    OK(amber_context_new(&fresh, store));
    amber_fetch_request request = AMBER_FETCH_REQUEST_INIT;
    request.entity = "All";
    amber_sort by_weight = {"weight", 0, 0}; /* weights grow with the row */
    request.sort = &by_weight;
    request.sort_count = 1;
    amber_object **fetched = NULL;
    size_t count = 0;
    OK(amber_context_fetch(&fetched, &count, fresh, &request));
    CHECK(count == ROWS);
    if (count == ROWS) CHECK(wrong_values(fetched, 0) == 0);
    amber_free(fetched);
    OK(amber_context_free(fresh));

    /* No handles asked for: the fastest path inserts the same. */
    OK(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS));
    amber_object **inserted = NULL;
    OK(amber_context_pending_objects(&inserted, &count, context, AMBER_PENDING_INSERTED));
    CHECK(count == ROWS);
    if (count == ROWS) CHECK(wrong_values(inserted, 1) == 0);
    amber_free(inserted);
    OK(amber_context_rollback(context));
    /* Zero rows insert nothing and succeed. */
    OK(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, 0));
}

/* A call that must fail with `code` and `words`, leaving nothing inserted. */
#define REFUSED(call, code, words)                                                    \
    do {                                                                              \
        FAILS(call, code, words);                                                     \
        int32_t changes_ = 1;                                                         \
        OK(amber_context_has_changes(&changes_, context));                            \
        CHECK(changes_ == 0);                                                         \
    } while (0)

static void test_misuse(void) {
    amber_column columns[COLUMNS];
    char tags[ROWS * 40];
    size_t tag_lengths[ROWS], tag_size = 0;
    make_columns(columns, tags, tag_lengths, &tag_size);

    REFUSED(amber_context_insert_columns(NULL, context, all, NULL, 2, ROWS), AMBER_E_NULL_ARGUMENT, "columns is NULL");
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, 0, ROWS), AMBER_E_INVALID_VALUE, "column_count is 0");
    REFUSED(amber_context_insert_columns(NULL, NULL, all, columns, COLUMNS, ROWS), AMBER_E_NULL_ARGUMENT, "context");
    REFUSED(amber_context_insert_columns(NULL, context, (amber_entity *)context, columns, COLUMNS, ROWS),
            AMBER_E_WRONG_HANDLE_TYPE, "entity");
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, (size_t)-1), AMBER_E_INVALID_VALUE, "row_count");

    /* The size field: never set, or the second column from another header. */
    amber_column saved = columns[0];
    columns[0].size = 0;
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS), AMBER_E_INVALID_VALUE,
            "columns[0]->size is 0; start from AMBER_COLUMN_INIT");
    columns[0] = saved;
    columns[1].size = sizeof(amber_column) - 8;
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS), AMBER_E_INVALID_VALUE, "columns[1]->size");
    columns[1].size = sizeof(amber_column);

    /* NULL pointers inside a column. */
    const void *data = columns[3].data;
    columns[3].data = NULL;
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS), AMBER_E_NULL_ARGUMENT, "columns[3].data is NULL");
    columns[3].data = data;
    columns[7].lengths = NULL;
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS), AMBER_E_NULL_ARGUMENT, "columns[7].lengths is NULL");
    columns[7].lengths = text_lengths;
    amber_attribute *attribute = columns[4].attribute;
    columns[4].attribute = NULL;
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS), AMBER_E_NULL_ARGUMENT, "columns[4].attribute");

    /* An attribute of another entity. */
    amber_attribute *n = NULL;
    OK(amber_entity_attribute(&n, other, "n"));
    columns[4].attribute = n;
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS), AMBER_E_NOT_FOUND,
            "columns[4].attribute is Other.n, not an attribute of All");
    columns[4].attribute = attribute;

    /* Lengths that do not add up to data_size, a size for fixed elements that is not theirs. */
    columns[7].data_size = text_size - 1;
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS), AMBER_E_INVALID_VALUE,
            "columns[7] (All.name): lengths[63] (");
    columns[7].data_size = 0;
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS), AMBER_E_INVALID_VALUE,
            "columns[7] (All.name): lengths[0] (");
    columns[7].data_size = text_size;
    text_lengths[3] = (size_t)-5;
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS), AMBER_E_INVALID_VALUE,
            "lengths[3] (18446744073709551611) goes past data_size");
    text_lengths[3] = strlen("name 3");
    columns[1].data_size = 8;
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS), AMBER_E_INVALID_VALUE,
            "columns[1] (All.small): data_size is 8, but 64 rows of 8 bytes are 512");
    columns[1].data_size = sizeof smalls;

    /* Unknown types, and a forgotten one. */
    columns[3].type = 99;
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS), AMBER_E_INVALID_VALUE,
            "columns[3] (All.ratio): type 99 is not a column type");
    columns[3].type = AMBER_VALUE_NULL;
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS), AMBER_E_INVALID_VALUE, "type 0");
    columns[3].type = AMBER_VALUE_DOUBLE;

    /* Values: out of range, of a type the attribute refuses, not UTF-8, a Boolean of 2, a malformed decimal. */
    smalls[9] = 40000;
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS), AMBER_E_INVALID_VALUE,
            "All.small in row 9: expected Integer 16, given Integer 40000");
    smalls[9] = 9;
    columns[3].type = AMBER_VALUE_INT; /* ratios read as integers: fine for Double, */
    columns[1].type = AMBER_VALUE_DOUBLE; /* but doubles are refused for Integer 16 */
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS), AMBER_E_INVALID_VALUE,
            "All.small in row 0: expected Integer 16, given Double");
    columns[3].type = AMBER_VALUE_DOUBLE;
    columns[1].type = AMBER_VALUE_INT;
    char saved_byte = text_data[0];
    text_data[0] = (char)0xff;
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS), AMBER_E_INVALID_UTF8,
            "columns[7] (All.name): row 0: the string is not valid UTF-8");
    text_data[0] = saved_byte;
    int flagged = nulls[3] ? 4 : 3;
    flags[flagged] = 2;
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS), AMBER_E_INVALID_VALUE,
            "row 4: a Boolean of 2 (0 or 1 expected)");
    flags[flagged] = 1;
    flags[3] = 7; /* a null row's element is ignored */
    prices[0] = 'x';
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS), AMBER_E_INVALID_VALUE,
            "columns[8] (All.price): row 0:");
    prices[0] = '-';

    /* A struct of another size, and element_size together with lengths. */
    columns[13].element_size = sizeof(struct Point) / 2;
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS), AMBER_E_INVALID_VALUE,
            "All.spot in row 0: expected Point");
    columns[13].element_size = sizeof(struct Point);
    columns[13].lengths = raw_lengths;
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS), AMBER_E_INVALID_VALUE,
            "element_size (16) and lengths are both set");
    columns[13].lengths = NULL;
    /* A custom value of another class than the attribute's. */
    columns[13].class_name = "Blob";
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS), AMBER_E_INVALID_VALUE, "All.spot in row 0");
    columns[13].class_name = NULL;

    /* A malformed amber_value in a value column names its row. */
    mixed[5].type = AMBER_VALUE_STRING;
    mixed[5].v.text.data = NULL;
    mixed[5].v.text.length = 3;
    REFUSED(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS), AMBER_E_INVALID_VALUE,
            "columns[12] (All.mixed) row 5");
    mixed[5].type = AMBER_VALUE_INT;
    mixed[5].v.integer = 5000;

    /* Everything mended: the same columns insert. */
    OK(amber_context_insert_columns(NULL, context, all, columns, COLUMNS, ROWS));
    OK(amber_context_rollback(context));
}

int main(void) {
    make_data();
    OK(amber_model_from_json(&model, model_json, sizeof model_json - 1, NULL));
    OK(amber_model_entity(&all, model, "All"));
    OK(amber_model_entity(&other, model, "Other"));
    for (int c = 0; c < COLUMNS; c++) OK(amber_entity_attribute(&attributes[c], all, names[c]));
    OK(amber_store_open(&store, NULL, model));
    OK(amber_context_new(&context, store));
    size_t size = 0, alignment = 0, field_count = 0;
    amber_field_info fields[2];
    OK(amber_model_struct_layout(&size, &alignment, fields, &field_count, 2, model, "Point"));
    CHECK(size == sizeof(struct Point) && fields[1].offset == offsetof(struct Point, x)); /* the columns' stride */
    test_every_kind_round_trips();
    test_misuse();
    OK(amber_context_free(context));
    OK(amber_store_close(store));
    OK(amber_model_free(model));
    return report();
}
