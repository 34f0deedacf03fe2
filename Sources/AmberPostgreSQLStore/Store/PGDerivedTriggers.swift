import AmberModel
import AmberSQL
import AmberStore
import AmberValues

/// Derived attributes on PostgreSQL: the ``DerivedTriggerPlan`` as row
/// triggers in the store's schema, made with its tables. They belong to
/// the schema, so the server keeps derived values inside every
/// transaction that writes the store, whoever writes it (`psql` too).
/// Each Amber session makes its own temporary log; a session without one
/// (another program) keeps the values without logging them.
enum PGDerivedTriggers {
    static let logName = "pg_temp.\(DerivedTriggerPlan.logTable)"

    /// What each session of a store with derived attributes runs first: its log, empty.
    static let sessionSetup = "CREATE TEMP TABLE IF NOT EXISTS \(DerivedTriggerPlan.logTable) "
        + "(tbl integer NOT NULL, pk bigint NOT NULL, PRIMARY KEY (tbl, pk))"

    /// The functions and triggers of `plan`, in the connection's schema.
    static func sql(_ plan: DerivedTriggerPlan) -> [String] {
        var all: [String] = []
        func trigger(_ name: String, _ event: String, on table: String, body: String) {
            // The store's schema whatever the writing session's search path (another program's, in plain SQL).
            all.append("CREATE FUNCTION \(name)() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT "
                + "AS $amber$ BEGIN \(body); RETURN NULL; END $amber$")
            all.append("CREATE TRIGGER \(name) AFTER \(event) ON \(table) FOR EACH ROW EXECUTE FUNCTION \(name)()")
        }
        for logged in plan.logged {
            trigger("amber_derived_log_\(logged.tableIndex)", "UPDATE OF \(logged.columns.joined(separator: ", "))", on: logged.table,
                    body: "IF to_regclass('\(logName)') IS NOT NULL THEN INSERT INTO \(logName) VALUES (\(logged.tableIndex), NEW._pk) "
                        + "ON CONFLICT DO NOTHING; END IF")
        }
        for planned in plan.triggers { trigger(planned.name, planned.event.sql, on: planned.table, body: planned.body) }
        return all
    }
}

extension PostgreSQLStore {
    /// The rows whose derived values this transaction's triggers changed,
    /// with their new versions and entities; the log is emptied for the next write.
    func takeDerivedLog() throws(AmberError) -> (rows: [SavedChanges.Row], entities: [Int]) {
        let logged = try connection.query("DELETE FROM \(PGDerivedTriggers.logName) RETURNING tbl, pk")
        var keys: [Int: [Int64]] = [:]
        for row in 0..<logged.count { keys[Int(logged.int64(row, 0)), default: []].append(logged.int64(row, 1)) }
        var rows: [SavedChanges.Row] = [], entities: [Int] = []
        for (table, keys) in keys.sorted(by: { $0.key < $1.key }) where mappings.indices.contains(table) {
            // A row deleted later in the same write has no version to report.
            let versions = try connection.query("SELECT _pk, _version, _entity FROM \(mappings[table].table) WHERE _pk = ANY(?::bigint[])",
                                                [dialect.keyList(keys)])
            for row in 0..<versions.count {
                rows.append(SavedChanges.Row(table: table, key: versions.int64(row, 0), version: versions.int64(row, 1)))
                entities.append(mappings[table].entityIndex(code: versions.int64(row, 2)))
            }
        }
        return (rows, entities)
    }
}
