import AmberModel
import AmberSQL
import AmberStore
import AmberTransformers
import AmberValues
import CSQLite
import Foundation

/// The SQLite store: an SQLite file (in WAL mode) or an in-memory database,
/// holding one table per entity hierarchy (``TableMapping``), a metadata
/// table with the store's UUID, its model's version hash and the model
/// itself, and the history (``HistoryTable``).
///
/// It owns every SQL statement and transaction of the store; contexts reach
/// it through ``StoreEngine`` behind a ``Store`` and never see SQL.
/// Thread-safe: it runs one caller's statements at a time (a save holds it
/// for its transaction).
package final class SQLiteStore: StoreEngine, @unchecked Sendable {
    /// The file, or nil for an in-memory store.
    let path: String?
    package let model: Model
    package let identifier: UUID
    package var place: String { path ?? "memory:" }
    package var capabilities: StoreCapabilities {
        // A Core Data store's objects are read and written here; its history and upkeep are Core Data's.
        if coreData != nil { return [.sharedAcrossProcesses] }
        // An in-memory database is this connection's alone; its checkpoint does nothing, as there is no log.
        return path == nil ? [.history, .backups, .vacuum, .integrityChecks, .checkpoints, .batchChanges]
            : [.history, .backups, .vacuum, .integrityChecks, .checkpoints, .batchChanges, .sharedAcrossProcesses]
    }
    /// The options the store was opened with.
    let options: Store.Options
    /// The history's table.
    let history = HistoryTable()

    /// Used only inside ``serialized(_:)``, or by the initializer before anyone else can see the store.
    let connection: Connection
    let mappings: [TableMapping]
    /// For a store Core Data wrote, how its tables are read; nil for an Amber store.
    let coreData: CoreDataLayout?
    /// What this process may write of the file (a store it cannot write is opened read-only).
    let access: FileAccess
    /// For a store Core Data wrote, the rows its own derived-attribute triggers moved in the save under way.
    private let coreDataLog = CoreDataDerivedLog()
    /// SQLite's words for what differs between SQL databases.
    let dialect = SQLiteDialect()
    /// Held while one caller's statements run (every package entry point takes it).
    private let lock = NSLock()
    /// The inboxes of the contexts on this store; guarded by `lock`.
    var inboxes = InboxList()

    static let metadataTable = "_amber_metadata"
    /// The metadata key holding the largest deleted key of table `table` (quoted):

    /// Records `key` as deleted from `table` (quoted) unless a larger one
    /// is, so no new row takes it again; inside the caller's transaction.
    func keepDeletedKey(_ key: Int64, ofTable table: String) throws(AmberError) {
        let statement = try connection.statement("INSERT INTO \(Self.metadataTable) (key, value) VALUES (?, ?) "
            + "ON CONFLICT(key) DO UPDATE SET value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))")
        statement.bind(0, TableMapping.deletedKeyName(table: table))
        statement.bind(1, String(key))
        try statement.run()
    }

    /// The attributes of the constraint SQLite's "UNIQUE constraint failed:
    /// Book.title, Book.author" names, as `entity` declares them.
    static func violatedConstraint(of entity: Entity, sqliteMessage: String, names: StoredNames = .amber, table: String = "")
        -> [Attribute]
    {
        let columns = Set(sqliteMessage.split(separator: ":").last?.split(separator: ",").map {
            String($0.split(separator: ".", maxSplits: 1).last ?? "").trimmingCharacters(in: .whitespaces)
        } ?? [])
        // SQLite names the stored columns; `column(_:of:)` quotes, so compare quoted.
        let named = { (attribute: Attribute) in columns.contains { quote($0) == names.column(attribute.columnName, of: table) } }
        return entity.uniquenessConstraints.first { Set($0.map(\.name)).count == columns.count && $0.allSatisfy(named) }
            ?? entity.persistentAttributes.filter(named)
    }
    private static let formatVersion = "1"

    /// Opens the store at `path` with `model`, creating the file and its
    /// tables if the file is missing or empty. Several processes may create
    /// the same new store at once: one makes it, the others open it.
    ///
    /// - Throws: ``/AmberValues/AmberError/modelMismatch(store:differences:)`` if the store
    ///   was made with a model of another shape, naming each difference;
    ///   ``/AmberValues/AmberError/notAStore(path:reason:)`` for a file that is not an
    ///   Amber store; ``/AmberValues/AmberError/busy(path:timeout:)`` if another connection
    ///   kept the file locked for longer than `options.busyTimeout`.
    package convenience init(path: String, model: Model, options: Store.Options = Store.Options()) throws(AmberError) {
        let existed = FileManager.default.fileExists(atPath: path)
        let access = existed ? FileAccess.of(path) : .readWrite
        // Made here first, exclusively: another process making the same store at once makes its own or opens this one.
        let made = !existed && Self.makeEmptyFile(path)
        do throws(AmberError) {
            let connection = try Self.open(path, access: access, create: true, options: options)
            try self.init(connection: connection, path: path, model: model, options: options, access: access)
        } catch {
            guard let failure = error.storageFailure(of: path, existed ? "the store was not opened" : "no store was made") else { throw error }
            if made { Self.removeUnfinished(path) }
            throw failure
        }
    }

    /// Makes an empty file at `path` if nothing is there; whether this call made it.
    private static func makeEmptyFile(_ path: String) -> Bool {
        let descriptor = Glibc.open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return false }
        Glibc.close(descriptor)
        return true
    }

    /// Removes the files of a store this call began to make and could not
    /// finish, when they hold nothing committed (a first page at most, an
    /// empty log): no half-made file is left to be taken for a store, and
    /// nothing another process committed meanwhile is touched.
    private static func removeUnfinished(_ path: String) {
        let files = FileManager.default
        func size(_ file: String) -> Int? { (try? files.attributesOfItem(atPath: file))?[.size] as? Int }
        guard (size(path) ?? 0) <= 4096, (size(path + "-wal") ?? 0) == 0 else { return }
        for suffix in ["", "-wal", "-shm", "-journal"] { try? files.removeItem(atPath: path + suffix) }
    }

    /// A connection to the store file at `path` as `access` allows.
    private static func open(_ path: String, access: FileAccess, create: Bool, options: Store.Options) throws(AmberError) -> Connection {
        try access.requireReadable(path)
        do throws(AmberError) {
            return try Connection(path: path, create: create, readOnly: access == .readOnly, immutable: access == .immutable,
                                  busyTimeout: options.busyTimeout)
        } catch .notAStore(_, let reason) where !FileManager.default.fileExists(atPath: path) {
            let folder = (path as NSString).deletingLastPathComponent
            throw .notAStore(path: path, reason: FileManager.default.isWritableFile(atPath: folder.isEmpty ? "." : folder)
                ? reason : "no store can be made there: this process cannot write the folder \(folder.isEmpty ? "." : folder)")
        }
    }

    /// Opens an existing store with the model it carries, so a program (such
    /// as the `amber` CLI) can read a store it did not make. The model is
    /// bound against `registry`, which must hold the transformers it names.
    package convenience init(openingExisting path: String, registry: Registry, options: Store.Options) throws(AmberError) {
        guard FileManager.default.fileExists(atPath: path) else {
            throw .notAStore(path: path, reason: "no such file")
        }
        let access = FileAccess.of(path)
        do throws(AmberError) {
            let connection = try Self.open(path, access: access, create: false, options: options)
            let metadata = try Self.readMetadata(connection, path: path)
            try self.init(connection: connection, path: path, model: try Model.existing(in: metadata, place: path, registry: registry),
                          options: options, updatesModelCopy: false, access: access)
        } catch {
            throw error.storageFailure(of: path, "the store was not opened") ?? error
        }
    }

    /// An in-memory store with `model`; it lives as long as this object.
    package convenience init(inMemory model: Model, options: Store.Options) throws(AmberError) {
        var options = options
        options.busyTimeout = .zero
        try self.init(connection: Connection(path: ":memory:", create: true, busyTimeout: .zero), path: nil, model: model, options: options)
    }

    private init(connection: Connection, path: String?, model: Model, options: Store.Options, updatesModelCopy: Bool = true,
                 access: FileAccess = .readWrite) throws(AmberError) {
        self.connection = connection
        self.path = path
        self.model = model
        self.coreData = nil
        self.access = access
        // The progress handler is for the opening only (a C caller's context pointer may not outlive it).
        var kept = options
        kept.migrationProgress = nil
        self.options = kept
        self.mappings = model.entities.map { TableMapping(entity: $0, model: model, dialect: SQLiteDialect()) }
        let place = path ?? "memory:", mappings = self.mappings
        let metadata = try Self.retryingWhileBusy(connection) { () throws(AmberError) in
            // Another program's database (Core Data's, or any other) is refused before configuring changes its journal mode.
            _ = try Self.readMetadata(connection, path: place)
            try Self.configure(connection, writesLog: path != nil && access == .readWrite, durability: options.durability, place: place)
            let metadata = try Self.readMetadata(connection, path: place)
            guard !metadata.isEmpty else {
                if let refusal = access.refusal { throw AmberError.notAStore(path: place, reason: "the file is empty, and \(refusal)") }
                return try Self.createSchema(connection, mappings: mappings, model: model, place: place)
            }
            // A store made before the history existed gains its table; a read-only one keeps none, and records none.
            do throws(AmberError) {
                try connection.execute(HistoryTable.createSQL)
            } catch .sqlite(let code, _) where code & 0xff == SQLITE_READONLY {}
            return metadata
        }
        guard metadata["format"] == Self.formatVersion, let uuidText = metadata["store_uuid"], let uuid = UUID(uuidString: uuidText) else {
            throw .notAStore(path: place, reason: "unknown store format \(metadata["format"] ?? "(none)")")
        }
        identifier = uuid
        if metadata["model_hash"] != model.versionHash, options.migratesStore, let refusal = access.refusal {
            throw .migrationFailed(store: place, problems: ["the store was made with another model and needs migrating, but \(refusal)"])
        } else if metadata["model_hash"] != model.versionHash, options.migratesStore, let path {
            try Self.migrate(connection, path: path, store: uuid, metadata: metadata, to: model, options: options)
        } else if metadata["model_hash"] != model.versionHash {
            let stored = metadata["model"].flatMap { try? ModelDescription(json: Data($0.utf8)) }
            let differences = stored.map {
                ModelFingerprint.differences(store: ModelFingerprint($0), model: ModelFingerprint(model.description))
            } ?? []
            throw .modelMismatch(store: place, differences: differences.isEmpty
                ? ["model version hash \(metadata["model_hash"] ?? "(none)") in the store, \(model.versionHash) in the model"]
                : differences)
        }
        // What does not shape the store (templates, defaults, rules, user info) may change between
        // openings: the store's copy of the model follows the latest, so `amber` reads what the program declares.
        if updatesModelCopy, case let json = model.description.jsonText(), metadata["model"] != json {
            // Best effort: a store opened read-only keeps its older copy, which is complete for its shape.
            do throws(AmberError) {
                let update = try connection.statement("UPDATE \(Self.metadataTable) SET value = ? WHERE key = 'model'")
                update.bind(0, json)
                try update.run()
            } catch {}
        }
        let derived = try DerivedTriggers.sql(model: model, mappings: mappings)
        for sql in derived { try connection.execute(sql) }
        hasDerivedAttributes = !derived.isEmpty
    }

    /// Opens the SQLite store Core Data wrote at `path` (with its `-wal`
    /// beside it, if any) with `model`, the model it was made with. Nothing
    /// is written to the file until a save, and closing does not fold the
    /// `-wal` into it (Core Data does that when it next opens the store). A
    /// file this process may not write, or any with `readOnly`, is opened
    /// read-only (a save then fails naming the store).
    ///
    /// - Throws: ``/AmberValues/AmberError/modelMismatch(store:differences:)`` naming every
    ///   entity, table and column in which the store and the model differ;
    ///   ``/AmberValues/AmberError/notAStore(path:reason:)`` for a missing file or one
    ///   that is not a Core Data store.
    package init(coreDataPath path: String, model: Model, options: Store.Options, readOnly: Bool = false) throws(AmberError) {
        guard FileManager.default.fileExists(atPath: path) else { throw .notAStore(path: path, reason: "no such file") }
        let found = FileAccess.of(path)
        let access = readOnly && found == .readWrite ? .readOnly : found
        let readOnly = access != .readWrite
        let connection = try Self.open(path, access: access, create: false, options: options)
        if !readOnly {
            let rc = amber_sqlite3_no_checkpoint_on_close(connection.handle)
            guard rc == SQLITE_OK else { throw connection.error(rc, message: "cannot keep the -wal on close: \(String(cString: sqlite3_errstr(rc)))") }
        }
        guard try CoreDataLayout.describes(connection) else {
            throw .notAStore(path: path, reason: "not a Core Data store (no Z_PRIMARYKEY and Z_METADATA tables)")
        }
        let layout = try CoreDataLayout(connection: connection, model: model, place: path)
        // The views of external-storage columns call it.
        try connection.registerExternalData(CoreDataExternalData(storePath: path,
                                                                 largestFile: Int(sqlite3_limit(connection.handle, SQLITE_LIMIT_LENGTH, -1)) - 1))
        for view in layout.views { try connection.execute(view) }
        self.connection = connection
        self.path = path
        self.model = model
        var kept = options
        kept.migrationProgress = nil
        self.options = kept
        self.mappings = model.entities.map { TableMapping(entity: $0, model: model, dialect: SQLiteDialect(), names: layout.names) }
        self.identifier = layout.identifier
        self.coreData = layout
        self.access = access
        try connection.registerCoreDataTriggerFunctions(coreDataLog)
    }

    /// Whether the file at `path` is an SQLite store Core Data wrote (its
    /// bookkeeping tables, no Amber metadata); false for a missing file and
    /// for anything else.
    ///
    /// - Throws: ``/AmberValues/AmberError/busy(path:timeout:)`` when another
    ///   connection kept the file locked past `busyTimeout`: the caller must
    ///   not guess, and open it as the wrong kind of store.
    package static func holdsCoreDataStore(atPath path: String, busyTimeout: Duration = .seconds(5)) throws(AmberError) -> Bool {
        guard FileManager.default.fileExists(atPath: path) else { return false }
        do throws(AmberError) {
            return try CoreDataLayout.describes(Connection(path: path, create: false, readOnly: true, busyTimeout: busyTimeout))
        } catch .busy(let path, let timeout) {
            throw .busy(path: path, timeout: timeout)
        } catch {
            return false  // not an SQLite database at all: opening it as an Amber store says so
        }
    }

    /// Refuses `capability` on a store Core Data wrote, whose objects this version reads and writes, and nothing else.
    func refusingCoreData(_ capability: String) throws(AmberError) {
        guard coreData == nil else { throw .unsupported(store: place, capability: "\(capability) (on a store Core Data made)") }
    }

    /// Refuses `capability`, a write, on a store opened read-only, saying why.
    func refusingReadOnly(_ capability: String) throws(AmberError) {
        if let refusal = access.refusal { throw .unsupported(store: place, capability: "\(capability) (\(refusal))") }
    }

    /// What Amber and Core Data call the tables rows are written to.
    var names: StoredNames { coreData?.names ?? .amber }

    // MARK: Migration

    /// Where a migration keeps the copy of the store it makes first:
    /// `<path>.<version hash>.backup`, after the version it replaces.
    package static func backupPath(for path: String, version: String) -> String { "\(path).\(version).backup" }

    /// The version hash of the model the store at `path` was last opened with.
    package static func versionHash(ofStoreAt path: String) throws(AmberError) -> String {
        guard FileManager.default.fileExists(atPath: path) else { throw .notAStore(path: path, reason: "no such file") }
        let metadata = try readMetadata(open(path, access: FileAccess.of(path), create: false, options: Store.Options()), path: path)
        guard let hash = metadata["model_hash"] else { throw .notAStore(path: path, reason: "no model hash in the metadata table") }
        return hash
    }

    /// What opening the store at `path` with `model` would do to it, one
    /// line per change, without changing anything; empty when the store
    /// already has the model's shape. The migration is rehearsed on the
    /// store's objects and rolled back, so every refusal it would meet is
    /// reported (a store this process cannot write is planned from the
    /// models alone).
    ///
    /// - Throws: ``/AmberValues/AmberError/migrationFailed(store:problems:)`` naming every
    ///   change that cannot be inferred and every object the migration would
    ///   refuse; ``/AmberValues/AmberError/notAStore(path:reason:)``.
    package static func migrationPlan(forStoreAt path: String, to model: Model) throws(AmberError) -> [String] {
        guard FileManager.default.fileExists(atPath: path) else { throw .notAStore(path: path, reason: "no such file") }
        let access = FileAccess.of(path)
        let connection = try open(path, access: access, create: false, options: Store.Options())
        let metadata = try readMetadata(connection, path: path)
        guard metadata["model_hash"] != model.versionHash else { return [] }
        let mapping = try ModelMapping(from: Model.stored(in: metadata, place: path, registry: model.registry), to: model)
        guard mapping.problems.isEmpty else { throw .migrationFailed(store: path, problems: mapping.problems) }
        let planning = TableMigration(mapping: mapping, driver: SQLiteMigrationDriver(connection: connection, metadataTable: metadataTable),
                                      dialect: SQLiteDialect(), storeIdentifier: UUID(), storedHash: "", progress: nil)
        let (promoted, removed) = (try planning.promotedValues(), try planning.removedData())
        if access.refusal == nil {
            // Under the store's own identifier: the objects a refusal names are the store's.
            let identifier = metadata["store_uuid"].flatMap(UUID.init(uuidString:)) ?? UUID()
            var rehearsal = StoreMigration(mapping: mapping, connection: connection, storeIdentifier: identifier, progress: nil,
                                           storedHash: metadata["model_hash"] ?? mapping.source.versionHash, storePath: path,
                                           backupPath: nil, allowsDataRemoval: true)
            rehearsal.rehearsal = true
            let problems = try rehearsal.run(metadataTable: metadataTable)
            guard problems.isEmpty else { throw .migrationFailed(store: path, problems: problems) }
        }
        return mapping.steps + promoted + removed.map(TableMigration.plannedRemoval)
    }

    /// Migrates the store to `model` in one transaction, after a backup
    /// (unless the options say not to); nothing changes if it fails.
    private static func migrate(_ connection: Connection, path: String, store: UUID, metadata: [String: String], to model: Model,
                                options: Store.Options) throws(AmberError)
    {
        let mapping = ModelMapping(from: try Model.stored(in: metadata, place: path, registry: model.registry), to: model)
        guard mapping.problems.isEmpty else { throw .migrationFailed(store: path, problems: mapping.problems) }
        let stored = metadata["model_hash"] ?? mapping.source.versionHash
        let problems: [String]
        do throws(AmberError) {
            problems = try StoreMigration(mapping: mapping, connection: connection, storeIdentifier: store,
                                          progress: options.migrationProgress, storedHash: stored, storePath: path,
                                          backupPath: options.backsUpBeforeMigrating ? backupPath(for: path, version: stored) : nil,
                                          allowsDataRemoval: options.allowsDataRemoval)
                .run(metadataTable: metadataTable)
        } catch {
            // The migration is one transaction: a disk that failed it left the store as it was.
            guard let failure = error.storageFailure(of: path, "the migration was rolled back; the store is unchanged") else { throw error }
            throw .migrationFailed(store: path, problems: ["\(failure)"])
        }
        guard problems.isEmpty else { throw .migrationFailed(store: path, problems: problems) }
    }

    /// Whether saves read the log of derived values their triggers changed.
    private(set) var hasDerivedAttributes = false

    /// Runs `body` (the opening steps) again while it fails as busy, until
    /// the busy timeout has passed. Opening is where SQLite reports busy
    /// without waiting: two connections switching a new file to WAL at once
    /// would deadlock if both waited, so one is told at once.
    private static func retryingWhileBusy<T>(_ connection: Connection, _ body: () throws(AmberError) -> T) throws(AmberError) -> T {
        let deadline = ContinuousClock.now + connection.busyTimeout
        while true {
            do throws(AmberError) {
                return try body()
            } catch .busy(let path, let timeout) {
                guard ContinuousClock.now < deadline else { throw .busy(path: path, timeout: timeout) }
                usleep(UInt32.random(in: 1_000...5_000))
            }
        }
    }

    /// Sets the connection up: the write-ahead log (`writesLog`: a file this process may write) and SQLite's settings.
    private static func configure(_ connection: Connection, writesLog: Bool, durability: Store.Durability, place: String) throws(AmberError) {
        do throws(AmberError) {
            // WAL lets readers run beside a writer; NORMAL sync is durable across
            // application crashes, which is SQLite's advice for WAL. A log that
            // could not be truncated at a checkpoint is cut back to 16 MiB when reused.
            if writesLog {
                let sync = durability == .full ? "FULL" : "NORMAL"
                try connection.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = \(sync); PRAGMA journal_size_limit = 16777216;")
                connection.checkpointsAsItGrows()
            }
            // The writer checks the links a save leaves once per save (StoreWriter.danglingLinks);
            // SQLite's own check, run per row, was a tenth of a large insert.
            try connection.execute("PRAGMA foreign_keys = OFF")
        } catch .busy(let path, let timeout) {
            throw .busy(path: path, timeout: timeout)
        } catch {
            // A disk that failed is not a file that is no store: the caller says which (see storageFailure).
            if error.storageFailure(of: place, "") != nil { throw error }
            throw .notAStore(path: place, reason: "\(error)")
        }
    }

    /// Runs `body` as the only caller using the connection: contexts on
    /// several threads share a store, one statement sequence at a time.
    func serialized<T>(_ body: () throws(AmberError) -> T) throws(AmberError) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// The metadata table as key → value; empty for a new, empty database.
    static func readMetadata(_ connection: Connection, path: String) throws(AmberError) -> [String: String] {
        let tables: Statement
        do throws(AmberError) {
            tables = try connection.statement("SELECT name FROM sqlite_schema WHERE type = 'table'")
        } catch .busy(let path, let timeout) {
            throw .busy(path: path, timeout: timeout)
        } catch {
            throw .notAStore(path: path, reason: "\(error)")
        }
        var names: [String] = []
        while try tables.step() { names.append(try tables.string(0)) }
        tables.reset()
        guard names.contains(metadataTable) else {
            if names.isEmpty { return [:] }
            throw .notAStore(path: path, reason: "the database has tables but no \(metadataTable) table")
        }
        let rows = try connection.statement("SELECT key, value FROM \(metadataTable)")
        defer { rows.reset() }
        var metadata: [String: String] = [:]
        while try rows.step() { metadata[try rows.string(0)] = try rows.string(1) }
        return metadata
    }

    /// Makes the tables and the metadata of a new store and returns the
    /// metadata, unless another connection made them first (checked under the
    /// write lock): then it returns theirs.
    private static func createSchema(_ connection: Connection, mappings: [TableMapping], model: Model,
                                     place: String) throws(AmberError) -> [String: String]
    {
        try connection.execute("BEGIN IMMEDIATE")
        do throws(AmberError) {
            let existing = try readMetadata(connection, path: place)
            guard existing.isEmpty else {
                try connection.execute("COMMIT")
                return existing
            }
            try connection.execute("CREATE TABLE \(Self.metadataTable) (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            for mapping in mappings {
                for sql in mapping.createSQL { try connection.execute(sql) }
            }
            for sql in TableMapping.joinTableSQL(model: model, dialect: SQLiteDialect()) { try connection.execute(sql) }
            try connection.execute(HistoryTable.createSQL)
            let metadata = ["format": Self.formatVersion, "store_uuid": UUID().uuidString, "model_hash": model.versionHash,
                            "model": model.description.jsonText(), "created_by": "Amber \(version)"]
            let insert = try connection.statement("INSERT INTO \(Self.metadataTable) (key, value) VALUES (?, ?)")
            for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
                insert.bind(0, key)
                insert.bind(1, value)
                try insert.run()
            }
            try connection.execute("COMMIT")
            return metadata
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// The table mapping of `entity`.
    func mapping(for entity: Entity) -> TableMapping { mappings[entity.index] }

    // MARK: The API contexts use

    /// Reads the rows of `entity` that `request` matches, in the request's order.
    ///
    /// - Throws: an unknown attribute or a predicate that does not fit the
    ///   entity (with its position), a corrupt stored value (naming its
    ///   attribute), or an SQLite error.
    package func fetchRows(of entity: Entity, matching request: FetchRequest) throws(AmberError) -> FetchedRows {
        let mapping = mapping(for: entity)
        return try query(request, mapping, columns: mapping.selectColumns) { (statement) throws(AmberError) in
            try FetchedRows(reading: statement, mapping: mapping)
        }
    }

    /// Reads the rows of `entity` whose `column` holds one of `keys`, in
    /// primary-key order (after the columns of `order`, if given):
    /// the rows of faults, the members of to-many relationships, and
    /// prefetches, one statement for any number of keys.
    package func fetchRows(of entity: Entity, where column: KeyColumn, in keys: [Int64], orderedBy order: [String])
        throws(AmberError) -> FetchedRows
    {
        try rows(of: entity, "WHERE \(Self.name(of: column)) IN (SELECT value FROM json_each(?)) "
            + "ORDER BY \((order.map(quote) + ["_pk"]).joined(separator: ", "))", keys: keys)
    }

    /// Reads every row of `entity` whose to-one `relationship` is set, in
    /// primary-key order. For the members of many owners at once: one pass
    /// over the table costs a fifth of looking each owner's rows up through
    /// the index, where every row is a seek (100,000 rows of 10,000 owners:
    /// 13 ms against 60 in SQLite 3.40's shell).
    package func fetchRows(of entity: Entity, linkedThrough relationship: Relationship) throws(AmberError) -> FetchedRows {
        try rows(of: entity, "WHERE \(Self.name(of: .foreignKey(relationship))) IS NOT NULL ORDER BY _pk", keys: nil)
    }

    /// The rows of `entity` that `clause` selects, with `keys` bound to its parameter as one JSON array.
    private func rows(of entity: Entity, _ clause: String, keys: [Int64]?) throws(AmberError) -> FetchedRows {
        let mapping = mapping(for: entity)
        return try serialized { () throws(AmberError) in
            let statement = try connection.statement("SELECT \(mapping.selectColumns) FROM \(mapping.table) " + clause)
            defer { statement.reset() }
            if let keys { statement.bind(0, Self.jsonArray(keys)) }
            return try FetchedRows(reading: statement, mapping: mapping)
        }
    }

    /// The rows of `entity` whose to-one `relationship` holds one of `keys`,
    /// as (primary key, destination key) pairs.
    package func links(of entity: Entity, through relationship: Relationship, to keys: [Int64]) throws(AmberError) -> [(Int64, Int64)] {
        let column = Self.name(of: .foreignKey(relationship))
        return try pairs("SELECT _pk, \(column) FROM \(mapping(for: entity).table) WHERE \(column) IN (SELECT value FROM json_each(?)) ORDER BY _pk",
                         keys)
    }

    /// The two integer columns of the rows `sql` returns for `keys` (bound as one JSON array).
    private func pairs(_ sql: String, _ keys: [Int64]) throws(AmberError) -> [(Int64, Int64)] {
        try serialized { () throws(AmberError) in
            let statement = try connection.statement(sql)
            defer { statement.reset() }
            statement.bind(0, Self.jsonArray(keys))
            var pairs: [(Int64, Int64)] = []
            while try statement.step() { pairs.append((statement.int64(0), statement.int64(1))) }
            return pairs
        }
    }

    /// The rows of join-table `relationship` whose far end is one of `keys`,
    /// as (near end, far end) pairs.
    package func joinedLinks(through relationship: Relationship, to keys: [Int64]) throws(AmberError) -> [(Int64, Int64)] {
        guard case .joinTable(let table, let mine, let theirs, _) = relationship.storage else { return [] }
        return try pairs("SELECT \(mine), \(theirs) FROM \(quote(table)) WHERE \(theirs) IN (SELECT value FROM json_each(?)) ORDER BY 1, 2", keys)
    }

    /// The links of join-table `relationship` from any of `keys`, as (near
    /// end, far end) pairs in the relationship's order: a prefetch's one query.
    package func joinedPairs(through relationship: Relationship, from keys: [Int64]) throws(AmberError) -> [(Int64, Int64)] {
        guard case .joinTable(let table, let mine, let theirs, let order) = relationship.storage else { return [] }
        return try pairs("SELECT \(mine), \(theirs) FROM \(quote(table)) WHERE \(mine) IN "
            + "(SELECT value FROM json_each(?)) ORDER BY \(mine), \(order.map { "\($0), " } ?? "")\(theirs)", keys)
    }

    /// Statements used so far on this store's connection (for tests that count queries).
    package var statementCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return connection.statementCount
    }

    /// How many keys are linked to `key` through join-table `relationship`.
    package func joinedCount(through relationship: Relationship, from key: Int64) throws(AmberError) -> Int {
        guard case .joinTable(let table, let mine, _, _) = relationship.storage else { return 0 }
        return try count("SELECT count(*) FROM \(quote(table)) WHERE \(mine) = ?", key)
    }

    /// How many rows of `entity` have `key` in to-one `relationship`.
    package func count(of entity: Entity, through relationship: Relationship, to key: Int64) throws(AmberError) -> Int {
        try count("SELECT count(*) FROM \(mapping(for: entity).table) WHERE \(Self.name(of: .foreignKey(relationship))) = ?", key)
    }

    /// The count `sql` returns with `key` bound.
    private func count(_ sql: String, _ key: Int64) throws(AmberError) -> Int {
        try serialized { () throws(AmberError) in
            let statement = try connection.statement(sql)
            defer { statement.reset() }
            statement.bind(0, key)
            return try statement.step() ? Int(statement.int64(0)) : 0
        }
    }

    /// The extended attribute keys the rows of `entity` (and of the entities
    /// below it) hold, sorted, each with how many rows hold it; none for an
    /// entity that is not extensible.
    package func extendedKeyUsage(of entity: Entity) throws(AmberError) -> [(key: String, count: Int)] {
        guard entity.isExtensible else { return [] }
        let mapping = mapping(for: entity)
        let filter = mapping.entityFilter.map { " AND \($0)" } ?? ""
        let sql = "SELECT j.key, count(*) FROM \(mapping.table), json_each(\(mapping.table).\(quote(ExtendedValues.columnName))) j "
            + "WHERE j.key <> '#'\(filter) GROUP BY j.key ORDER BY j.key"
        return try serialized { () throws(AmberError) in
            let statement = try connection.statement(sql)
            defer { statement.reset() }
            var usage: [(key: String, count: Int)] = []
            while try statement.step() { usage.append((try statement.string(0), Int(statement.int64(1)))) }
            return usage
        }
    }

    private static func name(of column: KeyColumn) -> String {
        switch column {
        case .primaryKey: "_pk"
        case .foreignKey(let relationship): quote(relationship.columnName)
        }
    }

    /// `[1,2,3]`: keys for `json_each`, one statement whatever their number.
    static func jsonArray(_ keys: [Int64]) -> String {
        "[" + keys.map(String.init).joined(separator: ",") + "]"
    }

    /// How many rows of `entity` `request` matches (its limit and offset included).
    package func count(of entity: Entity, matching request: FetchRequest) throws(AmberError) -> Int {
        try query(request, mapping(for: entity), columns: "count(*)", counting: true) { (statement) throws(AmberError) in
            try statement.step() ? Int(statement.int64(0)) : 0
        }
    }

    /// The primary keys of the rows of `entity` that `request` matches, in its order.
    package func primaryKeys(of entity: Entity, matching request: FetchRequest) throws(AmberError) -> [Int64] {
        try query(request, mapping(for: entity), columns: "_pk") { (statement) throws(AmberError) in
            var keys: [Int64] = []
            while try statement.step() { keys.append(statement.int64(0)) }
            return keys
        }
    }

    /// `request` compiled once for ``sortedKeys(_:among:)``, which a live
    /// query runs after every change.
    final class SQLiteSortedKeysQuery: SortedKeysQuery {
        let all: FetchQuery
        let among: FetchQuery
        let one: FetchQuery
        let sortCount: Int32

        init(all: FetchQuery, among: FetchQuery, one: FetchQuery, sortCount: Int32) {
            (self.all, self.among, self.one, self.sortCount) = (all, among, one, sortCount)
        }
    }

    /// Below this many keys, ``sortedKeys(_:among:)`` seeks each key rather
    /// than build the temporary table a key list needs.
    static let seekLimit = 6

    /// Compiles `request` over `entity` for ``sortedKeys(_:among:)``.
    package func sortedKeysQuery(of entity: Entity, matching request: FetchRequest) throws(AmberError) -> any SortedKeysQuery {
        let mapping = mapping(for: entity)
        return SQLiteSortedKeysQuery(
            all: try FetchQuery(request: request, mapping: mapping, model: model, columns: "", sortColumns: true),
            among: try FetchQuery(request: request, mapping: mapping, model: model, columns: "", sortColumns: true, among: []),
            one: try FetchQuery(request: request, mapping: mapping, model: model, columns: "", sortColumns: true, among: [0]),
            sortCount: Int32(request.sortKeys.count))
    }

    /// The primary keys of the rows the compiled request matches, each with
    /// the values it sorts by, in the request's order; with `keys`, only
    /// among those rows, in no particular order (and the limit and offset do
    /// not apply). The sort values compare as SQLite compares them in the
    /// request's ORDER BY, so a caller can place a row among others without
    /// the store.
    package func sortedKeys(_ query: any SortedKeysQuery, among keys: [Int64]?) throws(AmberError) -> [SortedKey] {
        guard let query = query as? SQLiteSortedKeysQuery else { throw .unsupported(store: place, capability: "a query another store prepared") }
        return try serialized { () throws(AmberError) in
            var found: [SortedKey] = []
            func read(_ statement: Statement) throws(AmberError) {
                defer { statement.reset() }
                while try statement.step() {
                    var values: [SortValue] = []
                    values.reserveCapacity(Int(query.sortCount))
                    for column in 0..<query.sortCount { values.append(try SortValue(statement, column: column + 1)) }
                    found.append(SortedKey(key: statement.int64(0), values: values))
                }
            }
            guard let keys else {
                try read(query.all.prepare(on: connection))
                return found
            }
            if keys.count < Self.seekLimit {
                for key in keys { try read(query.one.prepare(on: connection, keys: [key])) }
            } else {
                try read(query.among.prepare(on: connection, keys: keys))
            }
            return found
        }
    }

    /// Compiles `request` for `mapping`'s table, selecting `columns`, and
    /// hands the prepared statement to `body`; it is reset afterwards.
    private func query<T>(_ request: FetchRequest, _ mapping: TableMapping, columns: String, counting: Bool = false,
                          _ body: (Statement) throws(AmberError) -> T) throws(AmberError) -> T
    {
        let query = try FetchQuery(request: request, mapping: mapping, model: model, columns: columns, counting: counting)
        return try serialized { () throws(AmberError) in
            let statement = try query.prepare(on: connection)
            defer { statement.reset() }
            return try body(statement)
        }
    }

    /// Writes `changes` in one transaction: inserts, then updates and deletes
    /// of rows still at the version they were read at. A row changed or
    /// deleted since it was read is a conflict, settled by `policy`. Every
    /// failing row (a uniqueness violation, a conflict under
    /// ``MergePolicy/error``) is reported, and then nothing is written.
    ///
    /// - Returns: the new primary keys of `changes.inserts`, what each
    ///   provisional key of ``ChangeSet/linkTargets`` became, and how each
    ///   settled conflict was settled.
    /// - Throws: ``/AmberValues/AmberError/saveFailed(_:)`` listing every problem; the
    ///   database is as it was.
    package func write<Row: RowSource>(_ changes: ChangeSet<Row>, policy: MergePolicy, from inbox: ChangeInbox?, origin: WriteOrigin)
        throws(AmberError) -> WrittenKeys
    {
        // A save with nothing to write (a context closed unchanged) is no write.
        if !changes.writesNothing { try refusingReadOnly("saving") }
        if !changes.writesNothing, coreData?.tracksHistory == true {
            throw .unsupported(store: place, capability: "saving (the store keeps Core Data's persistent history, which this version does not write)")
        }
        return try serialized { () throws(AmberError) in
            let written = try write(changes, StoreWriter<Row>(store: self, policy: policy, settlesAsAMerge: changes.settlesAsAMerge),
                                    trial: false, origin: origin)
            inboxes.post(SavedChanges(changes, written), skipping: inbox)
            return written
        }
    }

    /// The uniqueness constraints writing `changes` under `policy` would
    /// break, found by writing them in a transaction that is always rolled
    /// back. A save that failed validation reports these with its own
    /// problems, so one save lists them all. The trial does not wait for the
    /// write lock: with another writer holding it, it finds nothing; a change
    /// the other problems already explain may stop it early, with what it
    /// found so far.
    package func uniquenessProblems<Row: RowSource>(writing changes: ChangeSet<Row>, policy: MergePolicy) -> [SaveProblem] {
        guard coreData?.tracksHistory != true else { return [] }
        do {
            return try serialized { () throws(AmberError) in
                connection.waitsForLocks(false)
                defer { connection.waitsForLocks(true) }
                _ = try write(changes, StoreWriter<Row>(store: self, policy: policy), trial: true, origin: WriteOrigin())
                return []
            }
        } catch .saveFailed(let problems) {
            return problems.filter { $0.rule == .uniqueness }
        } catch {
            return []
        }
    }

    /// An inbox that receives what every other context's save on this store wrote.
    package func openInbox() -> ChangeInbox {
        lock.lock()
        defer { lock.unlock() }
        return inboxes.open()
    }

    /// SQLite's `data_version`: it changes when another connection (another
    /// store on the file, another process) commits, and only then.
    package func dataVersion() throws(AmberError) -> Int64 {
        try serialized { () throws(AmberError) in
            let statement = try connection.statement("PRAGMA data_version")
            defer { statement.reset() }
            return try statement.step() ? statement.int64(0) : 0
        }
    }

    /// The stored versions of the rows of `table` (a root entity's index)
    /// with one of `keys`, by key: a missing key is a deleted row.
    package func versions(in table: Int, of keys: [Int64]) throws(AmberError) -> [Int64: Int64] {
        var versions: [Int64: Int64] = [:]
        for (key, version) in try pairs("SELECT _pk, _version FROM \(mappings[table].table) WHERE _pk IN (SELECT value FROM json_each(?))", keys) {
            versions[key] = version
        }
        return versions
    }

    // MARK: History

    package func lastHistorySequence() throws(AmberError) -> Int64? {
        guard coreData == nil else { return nil }
        return try serialized { () throws(AmberError) in try history.lastSequence(on: connection) }
    }

    package func history(after given: Int64?) throws(AmberError) -> [HistoryTransaction] {
        try refusingCoreData("history")
        return try serialized { () throws(AmberError) in
            try connection.execute("BEGIN")
            defer { try? connection.execute("COMMIT") }
            var sequence: Int64
            if let given { sequence = given } else { sequence = try history.purgedThrough(on: connection, metadataTable: Self.metadataTable) }
            try history.check(sequence, on: connection, metadataTable: Self.metadataTable, place: place)
            return try HistoryReading.transactions(history.entries(after: sequence, on: connection), store: identifier, place: place)
        }
    }

    package func purgeHistory(through sequence: Int64) throws(AmberError) {
        try refusingCoreData("history")
        try refusingReadOnly("purging the history")
        try serialized { () throws(AmberError) in
            try connection.execute("BEGIN IMMEDIATE")
            do throws(AmberError) {
                let last = try history.lastSequence(on: connection)
                guard sequence <= last else {
                    throw .historyUnavailable(store: place, reason: "the token is at transaction \(sequence), but the store's history ends at \(last)")
                }
                try history.purge(through: sequence, on: connection, metadataTable: Self.metadataTable)
                try connection.execute("COMMIT")
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    package func savedChanges(after sequence: Int64) throws(AmberError) -> (records: [SavedChanges], through: Int64)? {
        guard coreData == nil else { return nil }
        return try serialized { () throws(AmberError) -> (records: [SavedChanges], through: Int64)? in
            try connection.execute("BEGIN")
            defer { try? connection.execute("COMMIT") }
            guard try history.purgedThrough(on: connection, metadataTable: Self.metadataTable) <= sequence else { return nil }
            // This store's own contexts posted theirs to the inboxes already.
            return HistoryReading.savedChanges(try history.entries(after: sequence, on: connection), after: sequence,
                                               skipping: history.origin, model: model, place: place)
        }
    }

    /// Writes `changes` in one transaction, committed unless a problem was
    /// found or this is a `trial` (which ends in ROLLBACK and throws the
    /// problems it met, if any).
    private func write<Row: RowSource>(_ changes: ChangeSet<Row>, _ writer: StoreWriter<Row>, trial: Bool, origin: WriteOrigin)
        throws(AmberError) -> WrittenKeys
    {
        var problems: [SaveProblem] = []
        var written = WrittenKeys()
        do throws(AmberError) {
            try connection.execute("BEGIN IMMEDIATE")
            _ = coreDataLog.take()  // what a trial or a failed save logged
            written.provisional = try writer.assignKeys(changes)
            written.keys = try writer.insert(changes.inserts, problems: &problems)
            try writer.update(changes.updates, problems: &problems)
            try writer.delete(changes.deletes, problems: &problems)
            try writer.link(changes.links, positions: changes.positions, deleted: changes.deletes)
            try writer.keepDeletedKeys()
            try writer.finishCoreDataBookkeeping()
            if trial {
                try connection.execute("ROLLBACK")
            } else {
                problems += try writer.danglingLinks()
                if hasDerivedAttributes { (written.derived, written.derivedEntities) = try takeDerivedLog() }
                if let coreData { (written.derived, written.derivedEntities) = try derivedRows(coreData.derivedKeys(coreDataLog.take())) }
                written.resolved = writer.resolved
                // A Core Data store has no Amber history table: other processes compare what they hold.
                if problems.isEmpty, !changes.writesNothing, coreData == nil {
                    // Without history, only that a transaction happened: other processes then compare what they hold.
                    var text = HistoryTable.unrecorded
                    if options.recordsHistory {
                        var record = HistoryRecord(changes, written: written, model: model)
                        text = record.finished()
                    }
                    try history.record(text, origin: origin, relinked: !changes.links.isEmpty || !changes.positions.isEmpty, on: connection)
                }
                if problems.isEmpty { try connection.execute("COMMIT") }
            }
        } catch .busy(let path, let timeout) {
            // Not a problem with the changes: the caller may simply retry.
            if connection.isInTransaction { try? connection.execute("ROLLBACK") }
            throw .busy(path: path, timeout: timeout)
        } catch {
            // Nor is a disk that failed: said as such, to be saved again once there is room.
            if let failure = error.storageFailure(of: place, "nothing was written, and the context keeps its changes",
                                                  ioOutcome: "the save may or may not be in the store (check it with amber check and "
                                                      + "fetch before saving again); the context keeps its changes") {
                if connection.isInTransaction { try? connection.execute("ROLLBACK") }
                throw failure
            }
            problems.append(SaveProblem(objectID: nil, place: place, rule: .store, message: "\(error)"))
        }
        guard problems.isEmpty else {
            if connection.isInTransaction { try? connection.execute("ROLLBACK") }
            throw .saveFailed(problems)
        }
        return written
    }

    /// The rows whose derived values this transaction's triggers changed,
    /// with their new versions; the log is emptied for the next save.
    func takeDerivedLog() throws(AmberError) -> ([SavedChanges.Row], [Int]) {
        var keys: [Int: [Int64]] = [:]
        let log = try connection.statement("SELECT tbl, pk FROM \(DerivedTriggers.log)")
        defer { log.reset() }
        while try log.step() { keys[Int(log.int64(0)), default: []].append(log.int64(1)) }
        try connection.execute("DELETE FROM \(DerivedTriggers.log)")
        return try derivedRows(keys)
    }

    /// The rows of `keys` (by table) with their versions and entities, for a save's report of derived values.
    private func derivedRows(_ keys: [Int: [Int64]]) throws(AmberError) -> ([SavedChanges.Row], [Int]) {
        var rows: [SavedChanges.Row] = [], entities: [Int] = []
        for (table, keys) in keys {
            // A row deleted later in the same save has no version to report.
            let versions = try connection.statement(
                "SELECT _pk, _version, _entity FROM \(mappings[table].table) WHERE _pk IN (SELECT value FROM json_each(?))")
            defer { versions.reset() }
            versions.bind(0, Self.jsonArray(keys))
            while try versions.step() {
                rows.append(SavedChanges.Row(table: table, key: versions.int64(0), version: versions.int64(1)))
                entities.append(mappings[table].entityIndex(code: versions.int64(2)))
            }
        }
        return (rows, entities)
    }
}
