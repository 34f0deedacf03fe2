import AmberModel
import AmberSQL
import AmberStore
import AmberValues
import Foundation

/// PostgreSQL's part of a migration (``TableMigration``'s steps, shared
/// with SQLite): the old tables move to a schema of their own, with their
/// indexes, constraints and triggers, so the new ones take their names; the
/// new tables gain their foreign keys and derived-value triggers once they
/// hold their rows; transformed values are re-encoded after the copy,
/// pipelined. PostgreSQL's DDL is transactional, so the whole migration is
/// one transaction under the store's write lock: two hosts starting a new
/// version at once migrate once, and a failure leaves the store as it was.
struct PGMigrationDriver: MigrationDriver {
    let connection: PGConnection
    let schema: String
    var metadataTable: String { PostgreSQLStore.metadataTable }

    /// Where the old tables wait until they are dropped: a name no store's schema can have (it holds a `-`).
    private var oldSchema: String { "\"old-\(schema)\"" }

    @discardableResult
    func run(_ statement: SQLFragment) throws(AmberError) -> Int { try connection.run(statement) }
    func integers(_ statement: SQLFragment, width: Int) throws(AmberError) -> [[Int64]] { try connection.integers(statement, width: width) }
    func texts(_ statement: SQLFragment) throws(AmberError) -> [String] { try connection.texts(statement) }

    func moveAside(_ tables: [String]) throws(AmberError) {
        try connection.execute("DROP SCHEMA IF EXISTS \(oldSchema) CASCADE; CREATE SCHEMA \(oldSchema)")
        // The old derived-value functions go with the old tables' triggers; the new tables get their own.
        for function in try texts(SQLFragment(sql: "SELECT proname FROM pg_proc WHERE pronamespace = current_schema()::regnamespace "
            + "AND proname LIKE 'amber\\_derived\\_%'")) {
            try connection.execute("DROP FUNCTION \(quote(function))() CASCADE")
        }
        for table in tables { try connection.execute("ALTER TABLE \(quote(table)) SET SCHEMA \(oldSchema)") }
    }

    func oldTable(_ name: String) -> String { "\(oldSchema).\(quote(name))" }

    func createTables(_ model: Model) throws(AmberError) {
        for sql in try PostgreSQLStore.schemaSQL(model).tables { try connection.execute(sql) }
    }

    /// Foreign keys (checked as they are added: the links were checked first) and derived values' triggers.
    func finishTables(_ model: Model) throws(AmberError) {
        for sql in try PostgreSQLStore.schemaSQL(model).finish { try connection.execute(sql) }
    }

    /// Without CASCADE: a view or another program's foreign key on an old table fails the migration by name, never vanishes.
    func dropOld(_ tables: [String]) throws(AmberError) {
        try connection.execute("DROP TABLE \(tables.map(oldTable).joined(separator: ", ")); DROP SCHEMA \(oldSchema)")
    }

    /// None inside the copy: the server cannot call into this process, so values are re-encoded after it.
    func reencoding(_ expression: String, column: Int) -> String? { nil }

    func reencode(_ column: Int, rows: SQLFragment, into update: String, reencoder: Reencoder) throws(AmberError) -> String? {
        let found = try connection.query(rows.sql, rows.bindings)
        var updates: [PGConnection.Pipelined] = []
        for row in 0..<found.count {
            guard let moved = reencoder.move(try Self.storedValue(found, row: row, column: 1), key: found.int64(row, 0), column: column) else {
                return reencoder.takeFailure()
            }
            updates.append((update, [try PGParameter(moved, place: "re-encoding"), try PGParameter(.int(found.int64(row, 0)), place: "re-encoding")]))
        }
        _ = try connection.pipeline(updates)
        return nil
    }

    /// A stored value as a transformer chain's last step stored it: a
    /// chain ends in Binary, String, Integer or Double, stored as `bytea`,
    /// text, `bigint` or `double precision`, as SQLite's storage classes give them.
    private static func storedValue(_ rows: PGRows, row: Int, column: Int) throws(AmberError) -> Value {
        let text = rows.text(row, column)
        switch rows.type(column) {
        case PGType.bytea:
            guard let bytes = text.utf8.withContiguousStorageIfAvailable({ TableMapping.bytea($0) }) ?? nil else {
                throw .invalidValue(place: "re-encoding", expected: "bytea", given: text)
            }
            return .binary(Data(bytes))
        case PGType.int8: return Int64(text).map(Value.int) ?? .string(text)
        case PGType.float8: return Double(text).map(Value.double) ?? .string(text)
        default: return .string(text)
        }
    }

    func setMetadata(_ key: String, _ value: String) throws(AmberError) {
        try run(SQLFragment(sql: "INSERT INTO \(metadataTable) (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                            bindings: [.string(key), .string(value)]))
    }

    /// Class 23: integrity constraint violations.
    func isConstraintViolation(_ error: AmberError) -> Bool {
        if case .server(_, let state, _) = error { return state.hasPrefix("23") }
        return false
    }
}

extension PostgreSQLStore {
    /// Migrates the store in the connection's schema from `stored` (its
    /// metadata's model) to `model`, in one transaction under the write
    /// lock; nothing changes if it fails.
    ///
    /// - Throws: ``/AmberValues/AmberError/migrationFailed(store:problems:)`` naming
    ///   every change that cannot be inferred or that the objects break.
    /// (`rehearsal`: every step runs and is rolled back, so a dry run meets
    /// the problems the migration would; no consent is asked.)
    static func migrate(_ connection: PGConnection, address: PGAddress, store: UUID, stored: Model, storedHash: String, to model: Model,
                        options: Store.Options, rehearsal: Bool = false) throws(AmberError)
    {
        let mapping = ModelMapping(from: stored, to: model)
        guard mapping.problems.isEmpty else { throw .migrationFailed(store: address.place, problems: mapping.problems) }
        let migration = TableMigration(mapping: mapping, driver: PGMigrationDriver(connection: connection, schema: address.schema),
                                       dialect: PostgreSQLDialect(), storeIdentifier: store, storedHash: storedHash,
                                       allowsDataRemoval: options.allowsDataRemoval || rehearsal, progress: options.migrationProgress)
        try connection.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
        do throws(AmberError) {
            _ = try connection.query("SELECT pg_advisory_xact_lock(\(lockKey))")
            guard try migration.isNeeded() else {
                try connection.execute("ROLLBACK")
                return
            }
            let problems = try migration.run()
            guard problems.isEmpty else { throw AmberError.migrationFailed(store: address.place, problems: problems) }
            try connection.execute(rehearsal ? "ROLLBACK" : "COMMIT")
        } catch .migrationFailed(_, let problems) {
            try? connection.execute("ROLLBACK")
            throw .migrationFailed(store: address.place, problems: problems)
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }
}
