import AmberModel
import AmberTransformers
import AmberValues
import CSQLite
import Foundation

/// An Amber store: an SQLite file (in WAL mode) or an in-memory database,
/// holding one table per entity and a metadata table with the store's UUID,
/// its model's version hash and the model itself.
///
/// The store owns every SQL statement and transaction: contexts ask it for
/// rows matching a fetch request, for counts, and to write a change set in
/// one transaction (`write(_:)`, internal to the package); they never see SQL.
///
/// Threads: a store may be shared by contexts on any threads; it runs one
/// caller's statements at a time (a save holds it for its transaction).
/// Each `Context` (module Amber) and its objects are used from one thread at a time.
/// Several stores (in this process or others) may open one file: a save
/// that finds another connection writing waits up to
/// ``Options/busyTimeout`` and then fails with ``/AmberValues/AmberError/busy(path:timeout:)``,
/// keeping every pending change.
public final class Store: @unchecked Sendable {
    /// How a store is opened.
    public struct Options: Sendable {
        /// How long a save (or a read) waits for another connection's lock
        /// before failing with ``/AmberValues/AmberError/busy(path:timeout:)``. Five
        /// seconds by default; zero fails at once.
        public var busyTimeout: Duration = .seconds(5)
        /// Whether opening a store made with another model migrates it to
        /// this one (true, the default) or fails with
        /// ``/AmberValues/AmberError/modelMismatch(store:differences:)``.
        public var migratesStore = true
        /// Whether a migration first copies the store to
        /// ``Store/backupPath(for:version:)`` (true, the default). A backup that
        /// cannot be written stops the migration before anything changes.
        public var backsUpBeforeMigrating = true
        /// Called as a migration proceeds, on the opening thread; an error it
        /// throws cancels the migration (nothing changes).
        public var migrationProgress: (@Sendable (MigrationProgress) throws -> Void)?
        /// What a save that returned survives: ``Durability/normal`` (the
        /// default) or ``Durability/full``.
        public var durability = Durability.normal

        /// The default options.
        public init() {}

        /// Options with `busyTimeout`.
        public init(busyTimeout: Duration) { self.busyTimeout = busyTimeout }
    }

    /// What a save that returned survives. Either way a crash never leaves a
    /// store damaged or a save half written: a save is all there or not at all.
    public enum Durability: Sendable {
        /// A save survives the process crashing or being killed; a power
        /// failure or an operating-system crash may undo the last saves
        /// before the write-ahead log is next synced (SQLite's
        /// `synchronous = NORMAL` in WAL mode).
        case normal
        /// A save survives power failure too: the log is synced to disk at
        /// every save before the save returns (`synchronous = FULL`). Costs
        /// one `fsync` per save; see BENCHMARKS.md.
        case full
    }

    /// The file, or nil for an in-memory store.
    public let path: String?
    /// The model the store was opened with.
    public let model: Model
    /// The store's UUID, fixed when the store is created; part of every object ID URI.
    public let identifier: UUID
    /// The options the store was opened with.
    public let options: Options

    /// Used only inside ``serialized(_:)``, or by the initializer before anyone else can see the store.
    let connection: Connection
    let mappings: [TableMapping]
    /// Held while one caller's statements run (every package entry point takes it).
    private let lock = NSLock()
    /// The inboxes of the contexts on this store (weakly: a context's goes with it); guarded by `lock`.
    private var inboxes: [WeakInbox] = []

    static let metadataTable = "_amber_metadata"
    /// The metadata key holding the largest deleted key of table `table` (quoted):
    /// written by saves, carried over by migrations.
    static func deletedKeyName(table: String) -> String { "deleted-key.\(table)" }
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
    public convenience init(path: String, model: Model, options: Options = Options()) throws(AmberError) {
        let connection = try Connection(path: path, create: true, busyTimeout: options.busyTimeout)
        try self.init(connection: connection, path: path, model: model, options: options)
    }

    /// Opens an existing store with the model it carries, so a program (such
    /// as the `amber` CLI) can read a store it did not make. The model is
    /// bound against `registry`, which must hold the transformers it names.
    public convenience init(openingExisting path: String, registry: Registry = .shared, options: Options = Options()) throws(AmberError) {
        guard FileManager.default.fileExists(atPath: path) else {
            throw .notAStore(path: path, reason: "no such file")
        }
        let connection = try Connection(path: path, create: false, busyTimeout: options.busyTimeout)
        let metadata = try Self.readMetadata(connection, path: path)
        guard let json = metadata["model"] else { throw .notAStore(path: path, reason: "no model in the metadata table") }
        let model: Model
        do throws(AmberError) {
            model = try Model(ModelDescription(json: Data(json.utf8)), registry: registry)
        } catch {
            throw .notAStore(path: path, reason: "the stored model cannot be read: \(error)")
        }
        try self.init(connection: connection, path: path, model: model, options: options, updatesModelCopy: false)
    }

    /// An in-memory store with `model`; it lives as long as this object.
    public static func inMemory(model: Model) throws(AmberError) -> Store {
        try Store(connection: Connection(path: ":memory:", create: true, busyTimeout: .zero), path: nil, model: model, options: Options())
    }

    private init(connection: Connection, path: String?, model: Model, options: Options, updatesModelCopy: Bool = true) throws(AmberError) {
        self.connection = connection
        self.path = path
        self.model = model
        // The progress handler is for the opening only (a C caller's context pointer may not outlive it).
        var kept = options
        kept.migrationProgress = nil
        self.options = kept
        self.mappings = model.entities.map { TableMapping(entity: $0, model: model) }
        let place = path ?? ":memory:", mappings = self.mappings
        let metadata = try Self.retryingWhileBusy(connection) { () throws(AmberError) in
            try Self.configure(connection, inMemory: path == nil, durability: options.durability, place: place)
            let metadata = try Self.readMetadata(connection, path: place)
            return metadata.isEmpty ? try Self.createSchema(connection, mappings: mappings, model: model, place: place) : metadata
        }
        guard metadata["format"] == Self.formatVersion, let uuidText = metadata["store_uuid"], let uuid = UUID(uuidString: uuidText) else {
            throw .notAStore(path: place, reason: "unknown store format \(metadata["format"] ?? "(none)")")
        }
        identifier = uuid
        if metadata["model_hash"] != model.versionHash, options.migratesStore, let path {
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

    // MARK: Migration

    /// Where a migration keeps the copy of the store it makes first:
    /// `<path>.<version hash>.backup`, after the version it replaces.
    public static func backupPath(for path: String, version: String) -> String { "\(path).\(version).backup" }

    /// The version hash of the model the store at `path` was last opened with.
    public static func versionHash(ofStoreAt path: String) throws(AmberError) -> String {
        guard FileManager.default.fileExists(atPath: path) else { throw .notAStore(path: path, reason: "no such file") }
        let metadata = try readMetadata(Connection(path: path, create: false, busyTimeout: .seconds(5)), path: path)
        guard let hash = metadata["model_hash"] else { throw .notAStore(path: path, reason: "no model hash in the metadata table") }
        return hash
    }

    /// What opening the store at `path` with `model` would do to it, one
    /// line per change, without changing anything; empty when the store
    /// already has the model's shape.
    ///
    /// - Throws: ``/AmberValues/AmberError/migrationFailed(store:problems:)`` naming every
    ///   change that cannot be inferred; ``/AmberValues/AmberError/notAStore(path:reason:)``.
    public static func migrationPlan(forStoreAt path: String, to model: Model) throws(AmberError) -> [String] {
        guard FileManager.default.fileExists(atPath: path) else { throw .notAStore(path: path, reason: "no such file") }
        let connection = try Connection(path: path, create: false, busyTimeout: .seconds(5))
        let metadata = try readMetadata(connection, path: path)
        guard metadata["model_hash"] != model.versionHash else { return [] }
        let mapping = try ModelMapping(from: storedModel(metadata, path: path, registry: model.registry), to: model)
        guard mapping.problems.isEmpty else { throw .migrationFailed(store: path, problems: mapping.problems) }
        return mapping.steps
    }

    /// The model a store's metadata holds, bound against `registry`.
    private static func storedModel(_ metadata: [String: String], path: String, registry: Registry) throws(AmberError) -> Model {
        guard let json = metadata["model"] else { throw .notAStore(path: path, reason: "no model in the metadata table") }
        do throws(AmberError) {
            return try Model(ModelDescription(json: Data(json.utf8)), registry: registry)
        } catch {
            throw .migrationFailed(store: path, problems: ["the store's model cannot be bound, so its values cannot be read: \(error)"])
        }
    }

    /// Migrates the store to `model` in one transaction, after a backup
    /// (unless the options say not to); nothing changes if it fails.
    private static func migrate(_ connection: Connection, path: String, store: UUID, metadata: [String: String], to model: Model,
                                options: Options) throws(AmberError)
    {
        let mapping = ModelMapping(from: try storedModel(metadata, path: path, registry: model.registry), to: model)
        guard mapping.problems.isEmpty else { throw .migrationFailed(store: path, problems: mapping.problems) }
        let stored = metadata["model_hash"] ?? mapping.source.versionHash
        let problems = try StoreMigration(mapping: mapping, connection: connection, storeIdentifier: store, storedHash: stored,
                                          storePath: path, backupPath: options.backsUpBeforeMigrating ? backupPath(for: path, version: stored) : nil,
                                          progress: options.migrationProgress).run(metadataTable: metadataTable)
        guard problems.isEmpty else { throw .migrationFailed(store: path, problems: problems) }
    }

    /// Whether saves read the log of derived values their triggers changed.
    private var hasDerivedAttributes = false

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

    private static func configure(_ connection: Connection, inMemory: Bool, durability: Durability, place: String) throws(AmberError) {
        do throws(AmberError) {
            // WAL lets readers run beside a writer; NORMAL sync is durable across
            // application crashes, which is SQLite's advice for WAL. A log that
            // could not be truncated at a checkpoint is cut back to 16 MiB when reused.
            if !inMemory {
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
            for sql in TableMapping.joinTableSQL(model: model) { try connection.execute(sql) }
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

    /// A column rows can be looked up by, for relationships.
    package enum KeyColumn {
        /// The row's own primary key.
        case primaryKey
        /// A to-one relationship of the entity: the destination's key it holds.
        case foreignKey(Relationship)
    }

    /// Reads the rows of `entity` whose `column` holds one of `keys`, in
    /// primary-key order (after the columns of `order`, if given):
    /// the rows of faults, the members of to-many relationships, and
    /// prefetches, one statement for any number of keys.
    package func fetchRows(of entity: Entity, where column: KeyColumn, in keys: [Int64], orderedBy order: [String] = [])
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
        case .foreignKey(let relationship): quote(relationship.name)
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
    package struct SortedKeysQuery {
        let all: FetchQuery
        let among: FetchQuery
        let one: FetchQuery
        let sortCount: Int32
    }

    /// Below this many keys, ``sortedKeys(_:among:)`` seeks each key rather
    /// than build the temporary table a key list needs.
    static let seekLimit = 6

    /// Compiles `request` over `entity` for ``sortedKeys(_:among:)``.
    package func sortedKeysQuery(of entity: Entity, matching request: FetchRequest) throws(AmberError) -> SortedKeysQuery {
        let mapping = mapping(for: entity)
        return SortedKeysQuery(
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
    package func sortedKeys(_ query: SortedKeysQuery, among keys: [Int64]? = nil) throws(AmberError) -> [SortedKey] {
        try serialized { () throws(AmberError) in
            var found: [SortedKey] = []
            func read(_ statement: Statement) throws(AmberError) {
                defer { statement.reset() }
                while try statement.step() {
                    var values: [SQLiteValue] = []
                    values.reserveCapacity(Int(query.sortCount))
                    for column in 0..<query.sortCount { values.append(try SQLiteValue(statement, column: column + 1)) }
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
    package func write<Row: RowSource>(_ changes: ChangeSet<Row>, policy: MergePolicy = .error, from inbox: ChangeInbox? = nil)
        throws(AmberError) -> WrittenKeys
    {
        try serialized { () throws(AmberError) in
            let written = try write(changes, StoreWriter<Row>(store: self, policy: policy), trial: false)
            post(SavedChanges(changes, written), skipping: inbox)
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
        do {
            return try serialized { () throws(AmberError) in
                connection.waitsForLocks(false)
                defer { connection.waitsForLocks(true) }
                _ = try write(changes, StoreWriter<Row>(store: self, policy: policy), trial: true)
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
        let inbox = ChangeInbox()
        lock.lock()
        defer { lock.unlock() }
        inboxes.removeAll { $0.inbox == nil }
        inboxes.append(WeakInbox(inbox: inbox))
        return inbox
    }

    /// Hands `saved` to every inbox but the saver's (called holding `lock`).
    /// The record is made only if some inbox will read it: a store with one context pays nothing.
    private func post(_ saved: @autoclosure () -> SavedChanges, skipping sender: ChangeInbox?) {
        var record: SavedChanges?
        for entry in inboxes {
            guard let inbox = entry.inbox, inbox !== sender else { continue }
            if record == nil { record = saved() }
            if let record, !record.isEmpty { inbox.post(record) }
        }
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

    /// Writes `changes` in one transaction, committed unless a problem was
    /// found or this is a `trial` (which ends in ROLLBACK and throws the
    /// problems it met, if any).
    private func write<Row: RowSource>(_ changes: ChangeSet<Row>, _ writer: StoreWriter<Row>, trial: Bool) throws(AmberError) -> WrittenKeys {
        var problems: [SaveProblem] = []
        var written = WrittenKeys()
        do throws(AmberError) {
            try connection.execute("BEGIN IMMEDIATE")
            written.provisional = try writer.assignKeys(changes)
            written.keys = try writer.insert(changes.inserts, problems: &problems)
            try writer.update(changes.updates, problems: &problems)
            try writer.delete(changes.deletes, problems: &problems)
            try writer.link(changes.links, positions: changes.positions, deleted: changes.deletes)
            try writer.keepDeletedKeys()
            if trial {
                try connection.execute("ROLLBACK")
            } else {
                problems += try writer.danglingLinks()
                if hasDerivedAttributes { written.derived = try takeDerivedLog() }
                written.resolved = writer.resolved
                if problems.isEmpty { try connection.execute("COMMIT") }
            }
        } catch .busy(let path, let timeout) {
            // Not a problem with the changes: the caller may simply retry.
            if connection.isInTransaction { try? connection.execute("ROLLBACK") }
            throw .busy(path: path, timeout: timeout)
        } catch {
            problems.append(SaveProblem(objectID: nil, place: path ?? ":memory:", rule: .store, message: "\(error)"))
        }
        guard problems.isEmpty else {
            if connection.isInTransaction { try? connection.execute("ROLLBACK") }
            throw .saveFailed(problems)
        }
        return written
    }

    /// The rows whose derived values this transaction's triggers changed,
    /// with their new versions; the log is emptied for the next save.
    private func takeDerivedLog() throws(AmberError) -> [SavedChanges.Row] {
        var keys: [Int: [Int64]] = [:]
        let log = try connection.statement("SELECT tbl, pk FROM \(DerivedTriggers.log)")
        defer { log.reset() }
        while try log.step() { keys[Int(log.int64(0)), default: []].append(log.int64(1)) }
        try connection.execute("DELETE FROM \(DerivedTriggers.log)")
        var rows: [SavedChanges.Row] = []
        for (table, keys) in keys {
            // A row deleted later in the same save has no version to report.
            let versions = try connection.statement("SELECT _pk, _version FROM \(mappings[table].table) WHERE _pk IN (SELECT value FROM json_each(?))")
            defer { versions.reset() }
            versions.bind(0, Self.jsonArray(keys))
            while try versions.step() { rows.append(SavedChanges.Row(table: table, key: versions.int64(0), version: versions.int64(1))) }
        }
        return rows
    }
}

/// What one save wrote, by row, for the other contexts on the store to merge.
package struct SavedChanges: Sendable {
    /// A written row: its table (a root entity's index), key and new version.
    package struct Row: Sendable {
        package let table: Int
        package let key: Int64
        package let version: Int64
    }

    /// New rows need no merging (the next fetch finds them), but live queries
    /// look at them: their keys, unless there were more than `insertedLimit`.
    package var inserted: [Row] = []
    /// Set when a save inserted more rows than are listed: a live query then evaluates its request again.
    package var insertedUnlisted = false
    static let insertedLimit = 4096
    package var updated: [Row] = []
    package var deleted: [Row] = []
    /// Whether join-table rows (many-to-many links) or ordered positions changed.
    package var relinked = false

    var isEmpty: Bool { inserted.isEmpty && !insertedUnlisted && updated.isEmpty && deleted.isEmpty && !relinked }

    init<Source: RowSource>(_ changes: ChangeSet<Source>, _ written: WrittenKeys) {
        // A bulk insert is not kept row by row in every other context's inbox until it merges.
        if changes.inserts.count > Self.insertedLimit {
            insertedUnlisted = true
        } else {
            inserted.reserveCapacity(changes.inserts.count)
            for (object, key) in zip(changes.inserts, written.keys) {
                inserted.append(Row(table: object.entity.rootIndex, key: key, version: 1))
            }
        }
        for object in changes.updates {
            var version = object.rowVersion + 1
            switch written.resolved[ObjectIdentifier(object)] {
            case .merged(let stored, _, _)?: version = stored.version(0) + 1
            case .writtenAgain(let again)?: version = again
            case .deletedInStore?: continue
            case nil: break
            }
            updated.append(Row(table: object.entity.rootIndex, key: object.objectID.primaryKey ?? 0, version: version))
        }
        for object in changes.deletes {
            deleted.append(Row(table: object.entity.rootIndex, key: object.objectID.primaryKey ?? 0, version: object.rowVersion))
        }
        // Rows whose derived values moved, at their final versions (after the saved ones, so merges see the later version).
        updated += written.derived
        relinked = !changes.links.isEmpty || !changes.positions.isEmpty
    }
}

/// Where a context receives what other contexts on its store saved; any
/// thread may post while the owner takes.
package final class ChangeInbox: @unchecked Sendable {
    private let lock = NSLock()
    private var records: [SavedChanges] = []
    /// Set when more records came than an inbox keeps: the owner must compare
    /// every object it holds with the store instead.
    private var overflowed = false
    /// Records kept for a context that does not merge: past this, it compares instead.
    private static let limit = 1024

    fileprivate func post(_ saved: SavedChanges) {
        lock.lock()
        defer { lock.unlock() }
        if records.count >= Self.limit {
            records.removeAll()
            overflowed = true
        } else if !overflowed {
            records.append(saved)
        }
    }

    /// The records posted since the last call, and whether some were lost (then compare everything).
    package func take() -> (records: [SavedChanges], overflowed: Bool) {
        lock.lock()
        defer { lock.unlock() }
        defer { (records, overflowed) = ([], false) }
        return (records, overflowed)
    }
}

/// Provisional keys → the primary keys a save gave their new rows. A large
/// save looks one up per link to a new object, twice (to write the row, then
/// to rewrite the object's slot). Provisional keys come from one counter, so
/// a save's are usually close together: then they index an array down from
/// the highest, which costs a subtraction where a dictionary's seeded hash
/// cost a twentieth of the save; keys spread wider than four slots per key
/// fall back to a dictionary.
package struct ProvisionalKeys {
    /// By `highest - key`: the primary key, 0 for none (primary keys start at 1).
    private var dense: [Int64] = []
    /// The highest provisional key, where `dense` starts.
    private var highest: Int64 = 0
    private var sparse: [Int64: Int64] = [:]

    package init() {}

    /// The map of `pairs` (provisional key, primary key).
    init(_ pairs: [(key: Int64, primaryKey: Int64)]) {
        guard let high = pairs.map(\.key).max(), let low = pairs.map(\.key).min() else { return }
        let span = high.subtractingReportingOverflow(low)
        guard !span.overflow, span.partialValue < Int64(pairs.count) * 4 + 64 else {
            sparse = Dictionary(pairs.map { ($0.key, $0.primaryKey) }, uniquingKeysWith: { _, last in last })
            return
        }
        highest = high
        dense = [Int64](repeating: 0, count: Int(span.partialValue) + 1)
        for (key, primaryKey) in pairs { dense[Int(high - key)] = primaryKey }
    }

    package var isEmpty: Bool { dense.isEmpty && sparse.isEmpty }

    /// The primary key of provisional `key`, if this save gave it one.
    package subscript(key: Int64) -> Int64? {
        guard !dense.isEmpty else { return sparse[key] }
        let (offset, overflow) = highest.subtractingReportingOverflow(key)
        guard !overflow, offset >= 0, offset < Int64(dense.count), dense[Int(offset)] != 0 else { return nil }
        return dense[Int(offset)]
    }
}

private struct WeakInbox {
    weak var inbox: ChangeInbox?
}

/// The primary keys a save gave its new rows.
package struct WrittenKeys {
    /// By position in ``ChangeSet/inserts``.
    package var keys: [Int64] = []
    /// Provisional key → primary key, for the ``ChangeSet/linkTargets``.
    package var provisional = ProvisionalKeys()
    /// The updated objects whose conflicts a merge policy settled, by object identity.
    package var resolved: [ObjectIdentifier: Resolution] = [:]
    /// The rows whose derived attributes the save computed anew (saved or
    /// not: an author whose book count moved), with their new versions.
    package var derived: [SavedChanges.Row] = []
}

/// One row of a join table: `source` and `target` as the table names them.
package struct JoinRow: Hashable, Sendable {
    package let table: String
    package let source: Int64
    package let target: Int64

    package init(table: String, source: Int64, target: Int64) {
        (self.table, self.source, self.target) = (table, source, target)
    }
}

/// A member's position in an ordered to-many relationship: in a join table
/// (the row `keyColumn` = `key`, `otherColumn` = `other`), or in the
/// member's own table (`otherColumn` nil: the row `_pk` = `key`).
package struct Position: Sendable {
    package let table: String
    package let keyColumn: String
    package let key: Int64
    package let otherColumn: String?
    package let other: Int64
    package let orderColumn: String
    package let position: Int64

    package init(table: String, keyColumn: String, key: Int64, otherColumn: String?, other: Int64, orderColumn: String, position: Int64) {
        (self.table, self.keyColumn, self.key, self.otherColumn, self.other) = (table, keyColumn, key, otherColumn, other)
        (self.orderColumn, self.position) = (orderColumn, position)
    }
}

/// What the store needs of an object to write its row: the context's objects
/// conform, so a save binds values straight from their slots.
package protocol RowSource: AnyObject {
    /// The row's entity.
    var entity: Entity { get }
    /// The object's ID (its primary key once saved); problems name it.
    var objectID: ObjectID { get }
    /// The object's slots, with every encoded form current (``Entity/columns`` say which slot each column reads).
    var slotValues: [Value] { get }
    /// The slots as last saved or fetched, if the object keeps them (nil:
    /// every column is written).
    var savedSlotValues: [Value]? { get }
    /// The row version last read or written, checked by updates and deletes.
    var rowVersion: Int64 { get }
    /// Whether the stored value in `slot` (a column's slot) was set here
    /// since the row was read: a merge policy decides per key on it.
    func isSetHere(slot: Int) -> Bool
}

/// The rows one save writes.
package struct ChangeSet<Row: RowSource> {
    /// New rows, in the order they are inserted (``add(insert:table:provisionalKey:)``).
    package private(set) var inserts: [Row] = []
    package var updates: [Row] = []
    package var deletes: [Row] = []
    /// Rows of join tables to add (true) or remove (false); keys may be provisional.
    package var links: [JoinRow: Bool] = [:]
    /// Positions of the members of ordered to-many relationships.
    package var positions: [Position] = []
    /// The new rows other rows point at by a provisional key: their table (a
    /// root entity's index) and their place among that table's inserts, so the
    /// writer knows every such key before writing the first row.
    private(set) var linkTargets: [(key: Int64, table: Int, rank: Int)] = []
    /// Inserts so far per table (root entity index).
    private var insertsPerTable: [Int] = []
    /// Per table, the largest key of a new row that keeps its own (an
    /// object whose deleted row is written again): keys handed out start above it.
    private(set) var ownKeys: [Int: Int64] = [:]

    package init() {}

    /// Adds a new row for the table of root entity `table`; `provisionalKey`
    /// is the negative key other rows' slots and join rows hold for it, if any do.
    package mutating func add(insert row: Row, table: Int, provisionalKey: Int64?) {
        inserts.append(row)
        if let key = row.objectID.primaryKey {
            ownKeys[table] = max(ownKeys[table] ?? key, key)
            return
        }
        if table >= insertsPerTable.count { insertsPerTable += repeatElement(0, count: table + 1 - insertsPerTable.count) }
        if let provisionalKey { linkTargets.append((provisionalKey, table, insertsPerTable[table])) }
        insertsPerTable[table] += 1
    }

    /// Lists the link targets again, after more new rows became ones.
    package mutating func findLinkTargets(_ provisionalKey: (Row) -> Int64?) {
        let rows = inserts
        (inserts, linkTargets, insertsPerTable) = ([], [], [])
        for row in rows { add(insert: row, table: row.entity.rootIndex, provisionalKey: provisionalKey(row)) }
    }
}
