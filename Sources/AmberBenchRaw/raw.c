/* Raw SQLite workloads for the benchmark; see amber_bench_raw.h. */
#define _POSIX_C_SOURCE 200809L
#include "amber_bench_raw.h"
#include "plugin_calls.h"

#include <amber_plugin.h>
#include <dlfcn.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct bench_plugin {
    int32_t (*forward)(void *, const amber_plugin_value *, amber_plugin_value *);
    int32_t (*reverse)(void *, const amber_plugin_value *, amber_plugin_value *);
    /* The byte path (plugin ABI minor 2), which W5 calls on both sides. */
    int32_t (*forward_bytes)(void *, const void *, size_t, void *, size_t, size_t *);
    int32_t (*reverse_bytes)(void *, const void *, size_t, void *, size_t, size_t *);
};

struct bench_raw {
    sqlite3 *db;
    bench_plugin *plugin;
};

/* Seconds between 1970 and 2001 (Amber stores dates as seconds since 2001). */
static const double reference_offset = 978307200.0;

double bench_now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec * 1e3 + (double)now.tv_nsec / 1e6;
}

long bench_peak_rss_kib(void) {
    /* VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss across exec,
     * so a child started by a large parent would report the parent's peak. */
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    long peak = -1;
    while (status != NULL && fgets(line, sizeof line, status) != NULL) {
        if (sscanf(line, "VmHWM: %ld kB", &peak) == 1) break;
    }
    if (status != NULL) fclose(status);
    return peak;
}

bench_plugin *bench_plugin_open(const char *path) {
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        fprintf(stderr, "bench: %s\n", dlerror());
        return NULL;
    }
    amber_plugin_entry_fn entry = (amber_plugin_entry_fn)dlsym(library, "amber_plugin_entry");
    const amber_plugin_descriptor *descriptor = entry ? entry(NULL) : NULL;
    if (descriptor == NULL || descriptor->transformer_count < 1) {
        fprintf(stderr, "bench: %s is not the color plugin\n", path);
        return NULL;
    }
    bench_plugin *plugin = malloc(sizeof *plugin);
    if (plugin == NULL) return NULL;
    plugin->forward = descriptor->transformers[0].forward;
    plugin->reverse = descriptor->transformers[0].reverse;
    plugin->forward_bytes = descriptor->transformers[0].forward_bytes;
    plugin->reverse_bytes = descriptor->transformers[0].reverse_bytes;
    if (plugin->forward_bytes == NULL || plugin->reverse_bytes == NULL) {
        fprintf(stderr, "bench: %s has no byte path (plugin ABI minor 2)\n", path);
        free(plugin);
        return NULL;
    }
    return plugin;
}

int32_t bench_plugin_forward(bench_plugin *plugin, const amber_plugin_value *in, amber_plugin_value *out) {
    return plugin->forward(NULL, in, out);
}

int32_t bench_plugin_reverse(bench_plugin *plugin, const amber_plugin_value *in, amber_plugin_value *out) {
    return plugin->reverse(NULL, in, out);
}

bench_color bench_color_for(int64_t i) {
    bench_color color = {(float)(i % 256) / 255.0f, 0.5f, (float)(i % 7) / 7.0f, 1.0f};
    return color;
}

static void exec(sqlite3 *db, const char *sql) {
    char *error = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &error) != SQLITE_OK) {
        fprintf(stderr, "bench: %s: %s\n", sql, error);
        sqlite3_free(error);
        exit(1);
    }
}

bench_raw *bench_raw_create(const char *path, bench_plugin *plugin) {
    unlink(path);
    bench_raw *raw = malloc(sizeof *raw);
    if (raw == NULL || sqlite3_open(path, &raw->db) != SQLITE_OK) return NULL;
    raw->plugin = plugin;
    exec(raw->db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;");
    exec(raw->db, "CREATE TABLE Book (_pk INTEGER PRIMARY KEY, _entity INTEGER NOT NULL, _version INTEGER NOT NULL DEFAULT 1, "
                  "title TEXT, price REAL, published REAL, color BLOB)");
    return raw;
}

void bench_raw_close(bench_raw *raw) {
    sqlite3_close(raw->db);
    free(raw);
}

double bench_raw_w1(bench_raw *raw, int64_t n) {
    double start = bench_now_ms();
    sqlite3_stmt *insert;
    exec(raw->db, "BEGIN IMMEDIATE");
    sqlite3_prepare_v2(raw->db, "INSERT INTO Book (_entity, title, price, published, color) VALUES (1, ?, ?, ?, ?)", -1,
                       &insert, NULL);
    char title[32];
    for (int64_t i = 0; i < n; i++) {
        int length = snprintf(title, sizeof title, "Book %lld", (long long)i);
        bench_color color = bench_color_for(i);
        amber_plugin_value in = {AMBER_PLUGIN_VALUE_CUSTOM, {.bytes = {&color, sizeof color}}, NULL, NULL}, out;
        memset(&out, 0, sizeof out);
        raw->plugin->forward(NULL, &in, &out);
        sqlite3_bind_text(insert, 1, title, length, SQLITE_TRANSIENT);
        sqlite3_bind_double(insert, 2, (double)i * 0.5);
        sqlite3_bind_double(insert, 3, 1.7e9 - reference_offset + (double)i);
        sqlite3_bind_blob(insert, 4, out.v.bytes.data, (int)out.v.bytes.length, SQLITE_TRANSIENT);
        if (out.release) out.release(&out);
        if (sqlite3_step(insert) != SQLITE_DONE) exit(1);
        sqlite3_reset(insert);
    }
    sqlite3_finalize(insert);
    exec(raw->db, "COMMIT");
    return bench_now_ms() - start;
}

/* A fetched row, as an object layer would keep it. */
typedef struct row {
    int64_t pk, version;
    char *title;
    double price, published;
    bench_color color;
} row;

double bench_raw_w2(bench_raw *raw, double *checksum) {
    double start = bench_now_ms();
    sqlite3_stmt *select;
    sqlite3_prepare_v2(raw->db, "SELECT _pk, _version, title, price, published, color FROM Book", -1, &select, NULL);
    size_t capacity = 1024, count = 0;
    row *rows = malloc(capacity * sizeof *rows);
    while (sqlite3_step(select) == SQLITE_ROW) {
        if (count == capacity) rows = realloc(rows, (capacity *= 2) * sizeof *rows);
        row *r = &rows[count++];
        r->pk = sqlite3_column_int64(select, 0);
        r->version = sqlite3_column_int64(select, 1);
        r->title = strdup((const char *)sqlite3_column_text(select, 2));
        r->price = sqlite3_column_double(select, 3);
        r->published = sqlite3_column_double(select, 4);
        amber_plugin_value in = {AMBER_PLUGIN_VALUE_BINARY, {.bytes = {sqlite3_column_blob(select, 5), (size_t)sqlite3_column_bytes(select, 5)}}, NULL, NULL}, out;
        memset(&out, 0, sizeof out);
        raw->plugin->reverse(NULL, &in, &out);
        memcpy(&r->color, out.v.bytes.data, sizeof r->color);
        if (out.release) out.release(&out);
    }
    sqlite3_finalize(select);
    double elapsed = bench_now_ms() - start;
    double sum = 0;
    for (size_t i = 0; i < count; i++) {
        sum += rows[i].price + rows[i].color.r + (double)strlen(rows[i].title);
        free(rows[i].title);
    }
    free(rows);
    *checksum = sum;
    return elapsed;
}

double bench_raw_w3(bench_raw *raw, double *sum) {
    double start = bench_now_ms();
    sqlite3_stmt *select;
    sqlite3_prepare_v2(raw->db, "SELECT price FROM Book WHERE title LIKE '%42%'", -1, &select, NULL);
    double total = 0;
    while (sqlite3_step(select) == SQLITE_ROW) total += sqlite3_column_double(select, 0);
    sqlite3_finalize(select);
    *sum = total;
    return bench_now_ms() - start;
}

double bench_raw_w4(bench_raw *raw, int64_t n) {
    double start = bench_now_ms();
    sqlite3_stmt *update;
    exec(raw->db, "BEGIN IMMEDIATE");
    sqlite3_prepare_v2(raw->db, "UPDATE Book SET price = ?, _version = _version + 1 WHERE _pk = ? AND _version = ?", -1, &update, NULL);
    for (int64_t pk = 1; pk <= n; pk += 10) {
        sqlite3_bind_double(update, 1, (double)pk);
        sqlite3_bind_int64(update, 2, pk);
        sqlite3_bind_int64(update, 3, 1);
        if (sqlite3_step(update) != SQLITE_DONE) exit(1);
        sqlite3_reset(update);
    }
    sqlite3_finalize(update);
    exec(raw->db, "COMMIT");
    return bench_now_ms() - start;
}

bench_raw *bench_raw_graph_create(const char *path) {
    unlink(path);
    bench_raw *raw = malloc(sizeof *raw);
    if (raw == NULL || sqlite3_open(path, &raw->db) != SQLITE_OK) return NULL;
    raw->plugin = NULL;
    exec(raw->db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;");
    exec(raw->db, "CREATE TABLE Author (_pk INTEGER PRIMARY KEY, _entity INTEGER NOT NULL, _version INTEGER NOT NULL DEFAULT 1, "
                  "name TEXT)");
    exec(raw->db, "CREATE TABLE Book (_pk INTEGER PRIMARY KEY, _entity INTEGER NOT NULL, _version INTEGER NOT NULL DEFAULT 1, "
                  "title TEXT, price REAL, author INTEGER)");
    exec(raw->db, "CREATE INDEX Book_author_index ON Book (author)");
    return raw;
}

double bench_book_price(int64_t i) { return (double)(i % 500) * 0.11; }

double bench_raw_w6(bench_raw *raw, int64_t authors, int64_t books) {
    double start = bench_now_ms();
    sqlite3_stmt *author, *book;
    exec(raw->db, "BEGIN IMMEDIATE");
    sqlite3_prepare_v2(raw->db, "INSERT INTO Author (_pk, _entity, name) VALUES (?, 1, ?)", -1, &author, NULL);
    sqlite3_prepare_v2(raw->db, "INSERT INTO Book (_entity, title, price, author) VALUES (2, ?, ?, ?)", -1, &book, NULL);
    char text[32];
    for (int64_t i = 0; i < authors; i++) {
        int length = snprintf(text, sizeof text, "Author %lld", (long long)i);
        sqlite3_bind_int64(author, 1, i + 1);
        sqlite3_bind_text(author, 2, text, length, SQLITE_TRANSIENT);
        if (sqlite3_step(author) != SQLITE_DONE) exit(1);
        sqlite3_reset(author);
    }
    for (int64_t i = 0; i < books; i++) {
        int length = snprintf(text, sizeof text, "Book %lld", (long long)i);
        sqlite3_bind_text(book, 1, text, length, SQLITE_TRANSIENT);
        sqlite3_bind_double(book, 2, bench_book_price(i));
        sqlite3_bind_int64(book, 3, i % authors + 1);
        if (sqlite3_step(book) != SQLITE_DONE) exit(1);
        sqlite3_reset(book);
    }
    sqlite3_finalize(author);
    sqlite3_finalize(book);
    exec(raw->db, "COMMIT");
    return bench_now_ms() - start;
}

/* An author as an object layer would keep it, with what W7 adds up. */
typedef struct author_row {
    int64_t pk, version;
    char *name;
    double total;
} author_row;

/* Reads every row of `select` (pk, version, name) into a growing array. */
static author_row *read_authors(sqlite3_stmt *select, size_t *count) {
    size_t capacity = 1024;
    author_row *rows = malloc(capacity * sizeof *rows);
    *count = 0;
    while (sqlite3_step(select) == SQLITE_ROW) {
        if (*count == capacity) rows = realloc(rows, (capacity *= 2) * sizeof *rows);
        author_row *r = &rows[(*count)++];
        r->pk = sqlite3_column_int64(select, 0);
        r->version = sqlite3_column_int64(select, 1);
        r->name = strdup((const char *)sqlite3_column_text(select, 2));
        r->total = 0;
    }
    return rows;
}

double bench_raw_w7(bench_raw *raw, double *checksum) {
    double start = bench_now_ms();
    sqlite3_stmt *authors, *books;
    sqlite3_prepare_v2(raw->db, "SELECT _pk, _version, name FROM Author ORDER BY _pk", -1, &authors, NULL);
    size_t count;
    author_row *rows = read_authors(authors, &count);
    sqlite3_finalize(authors);
    /* Every book with its author (the join an object layer's prefetch does), added to its author's row. */
    sqlite3_prepare_v2(raw->db, "SELECT _pk, _version, title, price, author FROM Book WHERE author IN "
                       "(SELECT _pk FROM Author) ORDER BY author", -1, &books, NULL);
    size_t at = 0;
    double titles = 0;
    while (sqlite3_step(books) == SQLITE_ROW) {
        int64_t author = sqlite3_column_int64(books, 4);
        while (at < count && rows[at].pk < author) at++;
        titles += (double)sqlite3_column_bytes(books, 2);
        if (at < count && rows[at].pk == author) rows[at].total += sqlite3_column_double(books, 3);
    }
    sqlite3_finalize(books);
    double elapsed = bench_now_ms() - start;
    double sum = titles;
    for (size_t i = 0; i < count; i++) {
        sum += rows[i].total;
        free(rows[i].name);
    }
    free(rows);
    *checksum = sum;
    return elapsed;
}

double bench_raw_w8(bench_raw *raw, int64_t *found) {
    double start = bench_now_ms();
    sqlite3_stmt *select;
    sqlite3_prepare_v2(raw->db, "SELECT a._pk, a._version, a.name FROM Author a WHERE EXISTS "
                       "(SELECT 1 FROM Book b WHERE b.author = a._pk AND b.price > 50) ORDER BY a._pk", -1, &select, NULL);
    size_t count;
    author_row *rows = read_authors(select, &count);
    sqlite3_finalize(select);
    double elapsed = bench_now_ms() - start;
    for (size_t i = 0; i < count; i++) free(rows[i].name);
    free(rows);
    *found = (int64_t)count;
    return elapsed;
}

double bench_raw_w5(bench_plugin *plugin, int64_t count, double *checksum) {
    double start = bench_now_ms();
    double sum = 0;
    for (int64_t i = 0; i < count; i++) {
        bench_color color = {(float)(i & 255), 0.5f, 0.25f, 1.0f}, result;
        unsigned char stored[16];
        size_t written = 0;
        plugin->forward_bytes(NULL, &color, sizeof color, stored, sizeof stored, &written);
        plugin->reverse_bytes(NULL, stored, written, &result, sizeof result, &written);
        sum += result.r;
    }
    *checksum = sum;
    return bench_now_ms() - start;
}

double bench_raw_w14(const char *path, int64_t saves, int full) {
    unlink(path);
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK) exit(1);
    exec(db, full ? "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;" : "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;");
    exec(db, "CREATE TABLE Note (_pk INTEGER PRIMARY KEY, _entity INTEGER NOT NULL, _version INTEGER NOT NULL DEFAULT 1, "
             "body TEXT, number INTEGER)");
    double start = bench_now_ms();
    sqlite3_stmt *insert;
    sqlite3_prepare_v2(db, "INSERT INTO Note (_entity, body, number) VALUES (1, ?, ?)", -1, &insert, NULL);
    for (int64_t i = 0; i < saves; i++) {
        exec(db, "BEGIN IMMEDIATE");
        sqlite3_bind_text(insert, 1, "a note", -1, SQLITE_STATIC);
        sqlite3_bind_int64(insert, 2, i);
        if (sqlite3_step(insert) != SQLITE_DONE) exit(1);
        sqlite3_reset(insert);
        exec(db, "COMMIT");
    }
    sqlite3_finalize(insert);
    double elapsed = bench_now_ms() - start;
    sqlite3_close(db);
    return elapsed;
}

double bench_raw_w16(const char *path, int64_t n) {
    unlink(path);
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK) exit(1);
    exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;");
    exec(db, "CREATE TABLE Item (_pk INTEGER PRIMARY KEY, _entity INTEGER NOT NULL, _version INTEGER NOT NULL DEFAULT 1, "
             "name TEXT, number INTEGER)");
    exec(db, "BEGIN");
    sqlite3_stmt *insert;
    sqlite3_prepare_v2(db, "INSERT INTO Item (_entity, name, number) VALUES (1, ?, ?)", -1, &insert, NULL);
    for (int64_t i = 0; i < n; i++) {
        sqlite3_bind_text(insert, 1, "an item", -1, SQLITE_STATIC);
        sqlite3_bind_int64(insert, 2, i);
        if (sqlite3_step(insert) != SQLITE_DONE) exit(1);
        sqlite3_reset(insert);
    }
    sqlite3_finalize(insert);
    exec(db, "COMMIT");
    double start = bench_now_ms();
    exec(db, "BEGIN IMMEDIATE");
    exec(db, "UPDATE Item SET number = number + 1, _version = _version + 1 WHERE number >= 0");
    exec(db, "COMMIT");
    double elapsed = bench_now_ms() - start;
    sqlite3_close(db);
    return elapsed;
}

typedef struct page_row {
    int64_t pk, version, number, bookmarked, book;
    void *content;
    size_t content_length;
} page_row;

double bench_raw_coredata_pages(const char *path, double *checksum) {
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return -1;
    }
    double start = bench_now_ms();
    sqlite3_stmt *select = NULL;
    if (sqlite3_prepare_v2(db, "SELECT Z_PK, Z_OPT, ZNUMBER, ZISBOOKMARKED, ZBOOK, ZCONTENT FROM ZPAGE", -1, &select, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return -1;
    }
    size_t capacity = 1024, count = 0;
    page_row *rows = malloc(capacity * sizeof *rows);
    while (sqlite3_step(select) == SQLITE_ROW) {
        if (count == capacity) rows = realloc(rows, (capacity *= 2) * sizeof *rows);
        page_row *r = &rows[count++];
        r->pk = sqlite3_column_int64(select, 0);
        r->version = sqlite3_column_int64(select, 1);
        r->number = sqlite3_column_int64(select, 2);
        r->bookmarked = sqlite3_column_int64(select, 3);
        r->book = sqlite3_column_int64(select, 4);
        r->content_length = (size_t)sqlite3_column_bytes(select, 5);
        r->content = malloc(r->content_length ? r->content_length : 1);
        memcpy(r->content, sqlite3_column_blob(select, 5), r->content_length);
    }
    sqlite3_finalize(select);
    double elapsed = bench_now_ms() - start;
    double sum = 0;
    for (size_t i = 0; i < count; i++) {
        sum += (double)rows[i].number + (double)rows[i].content_length;
        free(rows[i].content);
    }
    free(rows);
    sqlite3_close(db);
    *checksum = sum;
    return elapsed;
}

int bench_raw_coredata_make(const char *path, int64_t n) {
    remove(path);
    sqlite3 *db = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK) return -1;
    char sql[2048];
    snprintf(sql, sizeof sql,
             "CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);"
             "CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);"
             "CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB);"
             "INSERT INTO Z_PRIMARYKEY VALUES (1, 'Item', 0, %lld);"
             "INSERT INTO Z_METADATA VALUES (1, '6F9619FF-8B86-D011-B42D-00C04FC964FF', NULL);"
             "CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZPRICE FLOAT, ZPUBLISHED TIMESTAMP, ZTITLE VARCHAR, ZCODE BLOB);"
             "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %lld) "
             "INSERT INTO ZITEM SELECT i, 1, 1, i * 0.25, 700000000.0 + i, 'item ' || i, randomblob(16) FROM n;",
             (long long)n, (long long)n);
    int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_close(db);
    return rc == SQLITE_OK ? 0 : -1;
}

double bench_raw_coredata_copy(const char *source, const char *destination) {
    remove(destination);
    sqlite3 *from = NULL, *to = NULL;
    if (sqlite3_open_v2(source, &from, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK || sqlite3_open(destination, &to) != SQLITE_OK) {
        sqlite3_close(from);
        sqlite3_close(to);
        return -1;
    }
    double start = bench_now_ms();
    sqlite3_exec(to, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
                     "CREATE TABLE \"Item\" (_pk INTEGER PRIMARY KEY, _entity INTEGER NOT NULL, _version INTEGER NOT NULL, "
                     "price REAL, published REAL, title TEXT, code BLOB); BEGIN", NULL, NULL, NULL);
    sqlite3_stmt *select = NULL, *insert = NULL;
    sqlite3_prepare_v2(from, "SELECT Z_PK, Z_ENT, Z_OPT, ZPRICE, ZPUBLISHED, ZTITLE, ZCODE FROM ZITEM", -1, &select, NULL);
    sqlite3_prepare_v2(to, "INSERT INTO \"Item\" VALUES (?, ?, ?, ?, ?, ?, ?)", -1, &insert, NULL);
    while (sqlite3_step(select) == SQLITE_ROW) {
        for (int i = 0; i < 7; i++) sqlite3_bind_value(insert, i + 1, sqlite3_column_value(select, i));
        sqlite3_step(insert);
        sqlite3_reset(insert);
    }
    sqlite3_finalize(select);
    sqlite3_finalize(insert);
    int rc = sqlite3_exec(to, "COMMIT", NULL, NULL, NULL);
    double elapsed = bench_now_ms() - start;
    sqlite3_close(from);
    sqlite3_close(to);
    return rc == SQLITE_OK ? elapsed : -1;
}
