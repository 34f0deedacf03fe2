import Amber
import AmberBenchRaw
import Foundation

/// W1-W4 on a PostgreSQL server: Amber's PostgreSQL store against raw libpq
/// (COPY, one query, pipelined prepared updates) on the same server, in
/// lockstep as the SQLite rows run. Each repetition uses fresh schemas.
struct PostgreSQLWorkloads {
    static let names = ["PostgreSQL W1 insert + save", "PostgreSQL W2 fetch all + read", "PostgreSQL W3 CONTAINS[c] + sum",
                        "PostgreSQL W4 update every 10th + save"]
    let bench: Workloads
    /// The server, as libpq's URI (without `schema`).
    let url: String

    /// The server's version and the settings that move save times, for the report.
    func settings() -> String {
        var value = [CChar](repeating: 0, count: 256)
        let query = "SELECT 'PostgreSQL ' || current_setting('server_version') || ', fsync=' || current_setting('fsync') "
            + "|| ', synchronous_commit=' || current_setting('synchronous_commit') || ', shared_buffers=' || current_setting('shared_buffers')"
        guard bench_pg_execute(url, query, &value, value.count) == 1 else { return "settings unknown" }
        return String(decoding: value.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func run(repetitions: Int) throws -> [String: Result] {
        var amber = [[Double]](repeating: [], count: 4), raw = [[Double]](repeating: [], count: 4)
        let tag = "\(getpid())"
        defer {
            for repetition in 0..<repetitions {
                _ = bench_pg_execute(url, "DROP SCHEMA IF EXISTS bench_amber_\(tag)_\(repetition) CASCADE; "
                    + "DROP SCHEMA IF EXISTS bench_raw_\(tag)_\(repetition) CASCADE", nil, 0)
            }
        }
        for repetition in 0..<repetitions {
            guard let rawSide = bench_pg_create(url, "bench_raw_\(tag)_\(repetition)", bench.plugin) else {
                throw AmberError.server(store: url, state: "08001", message: "the raw side could not connect")
            }
            defer { bench_pg_close(rawSide) }
            let separator = url.contains("?") ? "&" : "?"
            let store = try Store(url: "\(url)\(separator)schema=bench_amber_\(tag)_\(repetition)", model: bench.model)
            let amberSide = AmberSide(bench, store: store)
            for step in 0..<4 {
                var checksum = 0.0
                let rawRun = { () -> Double in
                    switch step {
                    case 0: bench_pg_w1(rawSide, Int64(bench.n))
                    case 1: bench_pg_w2(rawSide, &checksum)
                    case 2: bench_pg_w3(rawSide, &checksum)
                    default: bench_pg_w4(rawSide, Int64(bench.n))
                    }
                }
                if repetition % 2 == 0 {
                    raw[step].append(rawRun())
                    amber[step].append(try amberSide.run(step))
                } else {
                    amber[step].append(try amberSide.run(step))
                    raw[step].append(rawRun())
                }
            }
        }
        return Dictionary(uniqueKeysWithValues: Self.names.enumerated().map { ($1, Result(amber: median(amber[$0]), raw: median(raw[$0]))) })
    }
}
