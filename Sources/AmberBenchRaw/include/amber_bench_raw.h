/* The raw-SQLite side of Amber's benchmark: the same workloads written
 * directly against sqlite3 with prepared statements, calling the color
 * plugin's functions through dlsym pointers. Shared by the Swift benchmark
 * and the C API benchmark, so both compare against the same code. */
#ifndef AMBER_BENCH_RAW_H
#define AMBER_BENCH_RAW_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A color struct as the color plugin declares it. */
typedef struct bench_color {
    float r, g, b, a;
} bench_color;

/** What the workloads need of the color plugin: its forward and reverse. */
typedef struct bench_plugin bench_plugin;

/** Opens the color plugin at `path`; NULL on failure (message on stderr). */
bench_plugin *bench_plugin_open(const char *path);

/** The color of row i, the same in every implementation. */
bench_color bench_color_for(int64_t i);

/** A raw database: the same table layout Amber uses. */
typedef struct bench_raw bench_raw;

/** Creates a fresh database file at `path` (removing an old one). */
bench_raw *bench_raw_create(const char *path, bench_plugin *plugin);
void bench_raw_close(bench_raw *raw);

/** W1: insert n rows (title, price, published, color through forward) in one transaction. Returns ms. */
double bench_raw_w1(bench_raw *raw, int64_t n);
/** W2: read every row into structs (title copied, color through reverse). Returns ms; *checksum for sanity. */
double bench_raw_w2(bench_raw *raw, double *checksum);
/** W3: rows whose title contains "42" ignoring case; sums price. Returns ms. */
double bench_raw_w3(bench_raw *raw, double *sum);
/** W4: change the price of every 10th row (as read in W2) and commit. Returns ms. */
double bench_raw_w4(bench_raw *raw, int64_t n);
/** W5: `count` color round trips (forward then reverse) through the plugin's pointers. Returns ms. */
double bench_raw_w5(bench_plugin *plugin, int64_t count, double *checksum);

/** W18: every row of ZPAGE in the Core Data store at `path` (opened
 *  read-only) read into structs: key, version, number, bookmark flag, book
 *  key, and the content bytes copied. Returns ms; *checksum sums numbers and
 *  content lengths; -1 if the store cannot be read. */
double bench_raw_coredata_pages(const char *path, double *checksum);

/** W19's source: a store in Core Data's layout at `path` (made fresh) with
 *  n rows of ZITEM (title, price, published, 16-byte code). Returns 0 on success. */
int bench_raw_coredata_make(const char *path, int64_t n);
/** W19's raw side: copies ZITEM of the store at `source` into a new file at
 *  `destination` (WAL, synchronous NORMAL) with Amber's table layout, row by
 *  row in one transaction. Returns ms; -1 on failure. */
double bench_raw_coredata_copy(const char *source, const char *destination);

/** The graph workloads' database: Author (name) and Book (title, price,
 *  author: the author's _pk, indexed), the layout Amber gives them. */
bench_raw *bench_raw_graph_create(const char *path);
/** W6: `authors` authors and `books` books, book i written by author i % authors, in one transaction. Returns ms. */
double bench_raw_w6(bench_raw *raw, int64_t authors, int64_t books);
/** W7: every author into a struct with the sum of its books' prices (all books read in one pass). Returns ms. */
double bench_raw_w7(bench_raw *raw, double *checksum);
/** W8: the authors with any book priced over 50, read into structs. Returns ms; *count is how many. */
double bench_raw_w8(bench_raw *raw, int64_t *count);

/** W14: `saves` transactions of one row each into a new WAL database at
 * `path`, synchronous FULL if `full`, else NORMAL. Returns milliseconds. */
double bench_raw_w14(const char *path, int64_t saves, int full);
/** W16: a new WAL database at `path` with `n` rows of Item (name, number = i),
 *  then, timed, one UPDATE raising every row's number by one (and its
 *  version) where number >= 0. Returns milliseconds. */
double bench_raw_w16(const char *path, int64_t n);
/** A raw PostgreSQL database (libpq): table "Book" in `schema` (made fresh), laid out as Amber's PostgreSQL store lays it out. */
typedef struct bench_pg bench_pg;

/** Connects with libpq's `conninfo` and makes `schema` afresh; NULL on failure (message on stderr). */
bench_pg *bench_pg_create(const char *conninfo, const char *schema, bench_plugin *plugin);
void bench_pg_close(bench_pg *pg);
/** W1 on the server: COPY of n rows in one transaction. Returns ms. */
double bench_pg_w1(bench_pg *pg, int64_t n);
/** W2 on the server: one query, every row into structs. Returns ms. */
double bench_pg_w2(bench_pg *pg, double *checksum);
/** W3 on the server: titles containing "42" ignoring case; sums price. Returns ms. */
double bench_pg_w3(bench_pg *pg, double *sum);
/** W4 on the server: every 10th row's price, pipelined prepared updates in one transaction. Returns ms. */
double bench_pg_w4(bench_pg *pg, int64_t n);
/** Runs `sql` on a connection of its own; copies the first value of its result (if any) into first_value. Returns 1 on success. */
int bench_pg_execute(const char *conninfo, const char *sql, char *first_value, size_t size);

/** The price of book i in the graph workloads. */
double bench_book_price(int64_t i);

/** Milliseconds on a monotonic clock. */
double bench_now_ms(void);

/** Peak resident set size of this process (VmHWM), in KiB. */
long bench_peak_rss_kib(void);

#ifdef __cplusplus
}
#endif

#endif
