/* Raw libpq workloads for the benchmark's PostgreSQL rows; see amber_bench_raw.h.
 * What a careful C programmer writes: COPY for the bulk insert, one query
 * for the reads, pipelined prepared statements for the updates. */
#define _POSIX_C_SOURCE 200809L
#include "amber_bench_raw.h"
#include "plugin_calls.h"

#include <amber_plugin.h>
#include <postgresql/libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bench_pg {
    PGconn *conn;
    bench_plugin *plugin;
};

/* Seconds between 1970 and 2001 (Amber stores dates as seconds since 2001). */
static const double reference_offset = 978307200.0;

static void pg_exec(PGconn *conn, const char *sql) {
    PGresult *result = PQexec(conn, sql);
    ExecStatusType status = PQresultStatus(result);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
        fprintf(stderr, "bench: %s: %s\n", sql, PQerrorMessage(conn));
        exit(1);
    }
    PQclear(result);
}

bench_pg *bench_pg_create(const char *conninfo, const char *schema, bench_plugin *plugin) {
    bench_pg *pg = malloc(sizeof *pg);
    if (pg == NULL) return NULL;
    pg->conn = PQconnectdb(conninfo);
    if (PQstatus(pg->conn) != CONNECTION_OK) {
        fprintf(stderr, "bench: %s\n", PQerrorMessage(pg->conn));
        PQfinish(pg->conn);
        free(pg);
        return NULL;
    }
    pg->plugin = plugin;
    char sql[512];
    snprintf(sql, sizeof sql, "SET client_min_messages = warning; DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s; "
             "SET search_path TO %s; SET extra_float_digits = 3; SET synchronous_commit = local",
             schema, schema, schema);
    pg_exec(pg->conn, sql);
    pg_exec(pg->conn, "CREATE TABLE \"Book\" (_pk bigint PRIMARY KEY, _entity bigint NOT NULL, _version bigint NOT NULL DEFAULT 1, "
                      "title text COLLATE \"C\", price double precision, published double precision, color bytea)");
    return pg;
}

void bench_pg_close(bench_pg *pg) {
    PQfinish(pg->conn);
    free(pg);
}

double bench_pg_w1(bench_pg *pg, int64_t n) {
    double start = bench_now_ms();
    pg_exec(pg->conn, "BEGIN");
    PGresult *copy = PQexec(pg->conn, "COPY \"Book\" (_pk, _entity, title, price, published, color) FROM STDIN");
    if (PQresultStatus(copy) != PGRES_COPY_IN) {
        fprintf(stderr, "bench: COPY: %s\n", PQerrorMessage(pg->conn));
        exit(1);
    }
    PQclear(copy);
    static const char hex[] = "0123456789abcdef";
    char line[512];
    for (int64_t i = 0; i < n; i++) {
        bench_color color = bench_color_for(i);
        amber_plugin_value in = {AMBER_PLUGIN_VALUE_CUSTOM, {.bytes = {&color, sizeof color}}, NULL, NULL}, out;
        memset(&out, 0, sizeof out);
        bench_plugin_forward(pg->plugin, &in, &out);
        int length = snprintf(line, sizeof line, "%lld\t1\tBook %lld\t%.17g\t%.17g\t\\\\x", (long long)(i + 1), (long long)i,
                              (double)i * 0.5, 1.7e9 - reference_offset + (double)i);
        const unsigned char *bytes = out.v.bytes.data;
        for (size_t b = 0; b < out.v.bytes.length && length < (int)sizeof line - 3; b++) {
            line[length++] = hex[bytes[b] >> 4];
            line[length++] = hex[bytes[b] & 15];
        }
        line[length++] = '\n';
        if (out.release) out.release(&out);
        if (PQputCopyData(pg->conn, line, length) != 1) exit(1);
    }
    if (PQputCopyEnd(pg->conn, NULL) != 1) exit(1);
    PGresult *result = PQgetResult(pg->conn);
    if (PQresultStatus(result) != PGRES_COMMAND_OK) {
        fprintf(stderr, "bench: COPY: %s\n", PQerrorMessage(pg->conn));
        exit(1);
    }
    PQclear(result);
    while ((result = PQgetResult(pg->conn)) != NULL) PQclear(result);
    pg_exec(pg->conn, "COMMIT");
    return bench_now_ms() - start;
}

/* A fetched row, as an object layer would keep it. */
typedef struct pg_row {
    int64_t pk, version;
    char *title;
    double price, published;
    bench_color color;
} pg_row;

double bench_pg_w2(bench_pg *pg, double *checksum) {
    double start = bench_now_ms();
    PGresult *result = PQexec(pg->conn, "SELECT _pk, _version, title, price, published, color FROM \"Book\"");
    if (PQresultStatus(result) != PGRES_TUPLES_OK) exit(1);
    int count = PQntuples(result);
    pg_row *rows = malloc((size_t)(count > 0 ? count : 1) * sizeof *rows);
    for (int i = 0; i < count; i++) {
        pg_row *r = &rows[i];
        r->pk = strtoll(PQgetvalue(result, i, 0), NULL, 10);
        r->version = strtoll(PQgetvalue(result, i, 1), NULL, 10);
        r->title = strdup(PQgetvalue(result, i, 2));
        r->price = strtod(PQgetvalue(result, i, 3), NULL);
        r->published = strtod(PQgetvalue(result, i, 4), NULL);
        size_t length = 0;
        unsigned char *bytes = PQunescapeBytea((const unsigned char *)PQgetvalue(result, i, 5), &length);
        amber_plugin_value in = {AMBER_PLUGIN_VALUE_BINARY, {.bytes = {bytes, length}}, NULL, NULL}, out;
        memset(&out, 0, sizeof out);
        bench_plugin_reverse(pg->plugin, &in, &out);
        memcpy(&r->color, out.v.bytes.data, sizeof r->color);
        if (out.release) out.release(&out);
        PQfreemem(bytes);
    }
    PQclear(result);
    double elapsed = bench_now_ms() - start;
    double sum = 0;
    for (int i = 0; i < count; i++) {
        sum += rows[i].price + rows[i].color.r + (double)strlen(rows[i].title);
        free(rows[i].title);
    }
    free(rows);
    *checksum = sum;
    return elapsed;
}

double bench_pg_w3(bench_pg *pg, double *sum) {
    double start = bench_now_ms();
    PGresult *result = PQexec(pg->conn, "SELECT price FROM \"Book\" WHERE strpos(lower(title), '42') > 0");
    if (PQresultStatus(result) != PGRES_TUPLES_OK) exit(1);
    double total = 0;
    for (int i = 0; i < PQntuples(result); i++) total += strtod(PQgetvalue(result, i, 0), NULL);
    PQclear(result);
    *sum = total;
    return bench_now_ms() - start;
}

/* Reads every result up to and including the pipeline's sync; exits on any failure. */
static void drain_pipeline(PGconn *conn) {
    for (;;) {
        PGresult *result = PQgetResult(conn);
        if (result == NULL) continue;  /* the end of one statement's results */
        ExecStatusType status = PQresultStatus(result);
        PQclear(result);
        if (status == PGRES_PIPELINE_SYNC) return;
        if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
            fprintf(stderr, "bench: pipeline: %s\n", PQerrorMessage(conn));
            exit(1);
        }
    }
}

double bench_pg_w4(bench_pg *pg, int64_t n) {
    double start = bench_now_ms();
    PGresult *prepared = PQprepare(pg->conn, "w4", "UPDATE \"Book\" SET price = $1, _version = _version + 1 WHERE _pk = $2 AND _version = $3",
                                   3, NULL);
    if (PQresultStatus(prepared) != PGRES_COMMAND_OK) exit(1);
    PQclear(prepared);
    pg_exec(pg->conn, "BEGIN");
    if (PQenterPipelineMode(pg->conn) != 1) exit(1);
    char price[32], key[32];
    const char *values[3] = {price, key, "1"};
    int sent = 0;
    for (int64_t pk = 1; pk <= n; pk += 10) {
        snprintf(price, sizeof price, "%.17g", (double)pk);
        snprintf(key, sizeof key, "%lld", (long long)pk);
        if (PQsendQueryPrepared(pg->conn, "w4", 3, values, NULL, NULL, 0) != 1) exit(1);
        /* A sync every so often, so neither side's buffers fill while the other waits. */
        if (++sent % 1000 == 0) {
            PQpipelineSync(pg->conn);
            drain_pipeline(pg->conn);
        }
    }
    PQpipelineSync(pg->conn);
    drain_pipeline(pg->conn);
    if (PQexitPipelineMode(pg->conn) != 1) exit(1);
    pg_exec(pg->conn, "COMMIT");
    pg_exec(pg->conn, "DEALLOCATE w4");
    return bench_now_ms() - start;
}

int bench_pg_execute(const char *conninfo, const char *sql, char *first_value, size_t size) {
    PGconn *conn = PQconnectdb(conninfo);
    int ok = PQstatus(conn) == CONNECTION_OK;
    if (ok) {
        PQclear(PQexec(conn, "SET client_min_messages = warning"));
        PGresult *result = PQexec(conn, sql);
        ExecStatusType status = PQresultStatus(result);
        ok = status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
        if (ok && first_value != NULL && size > 0) {
            snprintf(first_value, size, "%s", PQntuples(result) > 0 && PQnfields(result) > 0 ? PQgetvalue(result, 0, 0) : "");
        }
        PQclear(result);
    }
    if (!ok) fprintf(stderr, "bench: %s: %s\n", sql, PQerrorMessage(conn));
    PQfinish(conn);
    return ok;
}
