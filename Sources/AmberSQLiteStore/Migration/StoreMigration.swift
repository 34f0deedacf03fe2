import AmberModel
import AmberSQL
import AmberStore
import AmberTransformers
import AmberValues
import CSQLite
import Foundation

/// Carries out a ``ModelMapping`` on an SQLite store's connection in one
/// transaction (``TableMigration``'s steps, shared with PostgreSQL), after
/// an online backup taken under the write lock. SQLite does not enforce
/// foreign keys on a store's connection (saves check their links
/// themselves), so tables can be rebuilt; the links are checked as a whole
/// before the commit. Any failure rolls everything back.
struct StoreMigration {
    let mapping: ModelMapping
    let connection: Connection
    let storeIdentifier: UUID
    let progress: (@Sendable (MigrationProgress) throws -> Void)?
    /// The version hash the store's metadata records for the source model.
    let storedHash: String
    /// The store's file, and where to copy it once this connection holds the write lock (nil: no copy).
    let storePath: String
    let backupPath: String?
    /// Whether the caller consented to removing stored data.
    let allowsDataRemoval: Bool
    /// A dry run: every step runs and is rolled back, so the problems are
    /// the ones the migration itself would meet (no backup, no consent asked).
    var rehearsal = false

    /// Runs the migration; returns the problems that stopped it (nothing changed then).
    func run(metadataTable: String) throws(AmberError) -> [String] {
        let driver = SQLiteMigrationDriver(connection: connection, metadataTable: metadataTable)
        let migration = TableMigration(mapping: mapping, driver: driver, dialect: SQLiteDialect(), storeIdentifier: storeIdentifier,
                                       storedHash: storedHash, allowsDataRemoval: allowsDataRemoval, progress: progress)
        try connection.execute("PRAGMA legacy_alter_table = ON")
        defer { try? connection.execute("PRAGMA legacy_alter_table = OFF") }
        try connection.registerReencoding(migration.reencoder)
        // Removal failing only keeps the function (and its reencoder) until the connection closes.
        defer { try? connection.registerReencoding(nil) }
        try connection.execute("BEGIN IMMEDIATE")
        // A backup this run wrote goes if the migration does not happen: it is a copy of a store that did not change.
        var wroteBackup = false
        do throws(AmberError) {
            guard try migration.isNeeded() else {
                try connection.execute("ROLLBACK")
                return []
            }
            // Refused before anything is copied: no backup of a store that will not change.
            let refused = rehearsal ? [] : try migration.consentProblems()
            guard refused.isEmpty else { throw AmberError.migrationFailed(store: "", problems: refused) }
            // Copied under the write lock: a store another connection migrated meanwhile is never copied as the old one.
            if let backupPath {
                do throws(AmberError) {
                    wroteBackup = !FileManager.default.fileExists(atPath: backupPath)
                    try Connection.backup(of: storePath, to: backupPath, busyTimeout: connection.busyTimeout)
                } catch {
                    throw AmberError.migrationFailed(store: "", problems: ["the backup \(backupPath) cannot be written: \(error)"])
                }
            }
            let problems = try migration.run(consentChecked: true)
            guard problems.isEmpty else { throw AmberError.migrationFailed(store: "", problems: problems) }
            try connection.execute(rehearsal ? "ROLLBACK" : "COMMIT")
            return []
        } catch .migrationFailed(_, let found) {
            try? connection.execute("ROLLBACK")
            if wroteBackup, let backupPath { try? FileManager.default.removeItem(atPath: backupPath) }
            return found
        } catch {
            try? connection.execute("ROLLBACK")
            if wroteBackup, let backupPath { try? FileManager.default.removeItem(atPath: backupPath) }
            throw error
        }
    }
}

/// SQLite's part of a migration: old tables renamed aside (legacy renaming
/// leaves the links other tables declare pointing at the name, which the
/// new table takes), re-encoding inside the copy through `amber_reencode`.
struct SQLiteMigrationDriver: MigrationDriver {
    let connection: Connection
    let metadataTable: String
    private static let oldPrefix = "_amber_old_"

    @discardableResult
    func run(_ statement: SQLFragment) throws(AmberError) -> Int { try connection.run(statement) }
    func integers(_ statement: SQLFragment, width: Int) throws(AmberError) -> [[Int64]] { try connection.integers(statement, width: width) }
    func texts(_ statement: SQLFragment) throws(AmberError) -> [String] { try connection.texts(statement) }

    /// Drops the old indexes (their names are the new tables' to take) and renames every old table aside.
    func moveAside(_ tables: [String]) throws(AmberError) {
        for table in tables {
            let indexes = try texts(SQLFragment(sql: "SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL AND tbl_name = ?",
                                                bindings: [.string(table)]))
            for index in indexes { try connection.execute("DROP INDEX \(quote(index))") }
            try connection.execute("ALTER TABLE \(quote(table)) RENAME TO \(quote(Self.oldPrefix + table))")
        }
    }

    func oldTable(_ name: String) -> String { quote(Self.oldPrefix + name) }

    func createTables(_ model: Model) throws(AmberError) {
        for mapping in model.entities.map({ TableMapping(entity: $0, model: model, dialect: SQLiteDialect()) }) {
            for sql in mapping.createSQL { try connection.execute(sql) }
        }
        for sql in TableMapping.joinTableSQL(model: model, dialect: SQLiteDialect()) { try connection.execute(sql) }
    }

    /// Nothing: foreign keys are part of the tables, and derived values' triggers are made by each connection.
    func finishTables(_ model: Model) throws(AmberError) {}

    func dropOld(_ tables: [String]) throws(AmberError) {
        for table in tables { try connection.execute("DROP TABLE \(oldTable(table))") }
    }

    func reencoding(_ expression: String, column: Int) -> String? { "amber_reencode(\(expression), _pk, \(column))" }

    func reencode(_ column: Int, rows: SQLFragment, into update: String, reencoder: Reencoder) throws(AmberError) -> String? { nil }

    func setMetadata(_ key: String, _ value: String) throws(AmberError) {
        try run(SQLFragment(sql: "INSERT OR REPLACE INTO \(metadataTable) (key, value) VALUES (?, ?)", bindings: [.string(key), .string(value)]))
    }

    func isConstraintViolation(_ error: AmberError) -> Bool {
        if case .sqlite(let code, _) = error { return code & 0xff == SQLITE_CONSTRAINT }
        return false
    }
}
