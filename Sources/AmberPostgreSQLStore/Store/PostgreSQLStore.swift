import AmberModel
import AmberSQL
import AmberStore
import AmberTransformers
import AmberValues
import Foundation

/// The PostgreSQL store: the same tables as the SQLite store
/// (``TableMapping`` in PostgreSQL's words), a metadata table and the
/// history, in one schema of a database that many processes on many
/// machines share.
///
/// Writes are serialized per store by a transaction-scoped advisory lock,
/// as SQLite's write lock serializes them: new keys, deleted-key marks and
/// history numbers are then handed out in commit order, and optimistic
/// locking through row versions finds every conflict. Reads run beside
/// writes (PostgreSQL's snapshots). One libpq connection per store, used
/// by one caller at a time.
package final class PostgreSQLStore: StoreEngine, @unchecked Sendable {
    package let model: Model
    package let identifier: UUID
    package var place: String { address.place }
    package var capabilities: StoreCapabilities { [.history, .sharedAcrossProcesses, .vacuum, .integrityChecks, .batchChanges] }
    let address: PGAddress
    let options: Store.Options
    let history = PGHistory()
    /// Used only inside ``serialized(_:)``, or by the initializer.
    let connection: PGConnection
    let mappings: [TableMapping]
    let dialect = PostgreSQLDialect()
    private let lock = NSLock()
    /// The inboxes of the contexts on this store; guarded by `lock`.
    var inboxes = InboxList()
    /// Transactions this store committed, so ``dataVersion()`` moves for others' only.
    var ownWrites: Int64 = 0
    /// The channel saves notify (`amber.<schema>`), which ``waitForChanges(from:inbox:timeout:)`` listens on.
    var channel: String { "amber.\(address.schema)" }
    /// A connection of its own that listens on ``channel``, made on the first wait; guarded by `listenerLock`.
    private var listener: PGConnection?
    /// Notices from other stores read so far, by any waiter; guarded by `listenerLock`.
    private var notices = 0
    private let listenerLock = NSLock()

    static let metadataTable = "_amber_metadata"
    /// The metadata key counting committed writes, for ``dataVersion()``.
    static let writesKey = "writes"
    /// SQLSTATEs a save is tried again for: a serialization failure, a deadlock.
    static let retryable: Set<String> = ["40001", "40P01"]
    /// How many times a save is tried before its serialization failure or deadlock is reported.
    static let attempts = 4
    private static let formatVersion = "1"
    /// What every session of the store runs first: its schema, UTC dates, exact floating-point text.
    var setup: String { Self.setup(address, durability: options.durability, derived: hasDerivedAttributes) }
    /// Whether the model has derived attributes, which the store's triggers keep (``PGDerivedTriggers``).
    let hasDerivedAttributes: Bool
    /// The type OID of the schema's `amber_value` (``PGExtendedValues``), by which sort values are read; nil in a store made without it.
    private(set) var extendedType: UInt32?
    /// Whatever the server's or role's defaults: values travel as Amber reads them (UTF-8, hex `bytea`, exact
    /// floating point, backslashes as written in quoted text), dates in UTC, and a save returns once the
    /// server's log holds it (`local`), or also its synchronous standbys' (`on`, for full durability):
    /// a commit the server acknowledged survives the server crashing.
    static func setup(_ address: PGAddress, durability: Store.Durability = .normal, derived: Bool = false) -> String {
        "SET search_path TO \"\(address.schema)\", public; SET TIME ZONE 'UTC'; SET extra_float_digits = 3; SET client_encoding = 'UTF8'; "
            + "SET bytea_output = 'hex'; SET standard_conforming_strings = on; "
            + "SET synchronous_commit = \(durability == .full ? "on" : "local")" + (derived ? "; " + PGDerivedTriggers.sessionSetup : "")
    }
    /// The advisory lock key that serializes this store's writers: the schema's, so stores in other schemas do not wait.
    static let lockKey = "hashtext('amber:' || current_schema())"
    var lockKey: String { Self.lockKey }

    /// Opens the store `address` names with `model`, creating its schema,
    /// tables and metadata when the schema holds none (under the write
    /// lock: two processes creating the store at once make it once).
    ///
    /// - Throws: ``/AmberValues/AmberError/server(store:state:message:)``
    ///   when the server cannot be reached or refuses (SQLSTATE and message);
    ///   ``/AmberValues/AmberError/migrationFailed(store:problems:)`` for a store
    ///   made with a model of another shape that cannot become this one (or
    ///   ``/AmberValues/AmberError/modelMismatch(store:differences:)`` when the
    ///   options say not to migrate); ``/AmberValues/AmberError/notAStore(path:reason:)`` for a schema
    ///   holding other tables.
    package init(address: PGAddress, model: Model, options: Store.Options) throws(AmberError) {
        self.address = address
        self.model = model
        var kept = options
        kept.migrationProgress = nil
        self.options = kept
        connection = try PGConnection(conninfo: address.conninfo, place: address.place)
        mappings = model.entities.map { TableMapping(entity: $0, model: model, dialect: PostgreSQLDialect()) }
        hasDerivedAttributes = !model.declaredDerivations.isEmpty
        do throws(AmberError) {
            try connection.execute("CREATE SCHEMA IF NOT EXISTS \"\(address.schema)\"")
        } catch .server(_, "23505", _) {
            // Another process made it in the same instant (IF NOT EXISTS does not lock): it is there.
        }
        try connection.execute(Self.setup(address, durability: options.durability, derived: hasDerivedAttributes))
        let metadata = try Self.metadataCreatingSchema(connection, model: model, lockKey: Self.lockKey, place: address.place)
        guard metadata["format"] == Self.formatVersion, let text = metadata["store_uuid"], let uuid = UUID(uuidString: text) else {
            throw .notAStore(path: address.place, reason: "unknown store format \(metadata["format"] ?? "(none)")")
        }
        identifier = uuid
        if let storedHash = metadata["model_hash"], storedHash != model.versionHash {
            guard options.migratesStore else {
                let stored = metadata["model"].flatMap { try? ModelDescription(json: Data($0.utf8)) }
                let differences = stored.map { ModelFingerprint.differences(store: ModelFingerprint($0), model: ModelFingerprint(model.description)) } ?? []
                throw .modelMismatch(store: address.place, differences: differences.isEmpty
                    ? ["model version hash \(storedHash) in the store, \(model.versionHash) in the model"] : differences)
            }
            try Self.migrate(connection, address: address, store: uuid, stored: try Model.stored(in: metadata, place: address.place, registry: model.registry),
                             storedHash: storedHash, to: model, options: options)
        }
        let type = try connection.query("SELECT to_regtype('amber_value')::oid")
        extendedType = type.isNull(0, 0) ? nil : UInt32(type.text(0, 0))
    }

    /// The model the store at `address` was made with, bound against
    /// `registry`, so a program (such as the `amber` CLI) can open a store it did not make.
    ///
    /// - Throws: ``/AmberValues/AmberError/notAStore(path:reason:)`` for a schema
    ///   without a store or a stored model that cannot be read; the server's errors.
    package static func storedModel(at address: PGAddress, registry: Registry) throws(AmberError) -> Model {
        try Model.existing(in: metadata(at: address), place: address.place, registry: registry)
    }

    /// The version hash of the model the store at `address` was last opened with.
    ///
    /// - Throws: ``/AmberValues/AmberError/notAStore(path:reason:)``; the server's errors.
    package static func versionHash(at address: PGAddress) throws(AmberError) -> String {
        guard let hash = try metadata(at: address)["model_hash"] else {
            throw .notAStore(path: address.place, reason: "no model hash in the metadata table")
        }
        return hash
    }

    /// What opening the store at `address` with `model` would do to it, one
    /// line per change, without changing anything; empty when the store
    /// already has the model's shape. The migration is rehearsed in a
    /// transaction that is rolled back, so every refusal it would meet is
    /// reported; meanwhile it holds the locks the migration would (the
    /// store's tables are not read or written by others until it ends). A
    /// role that may not change the schema gets the plan from the models alone.
    ///
    /// - Throws: ``/AmberValues/AmberError/migrationFailed(store:problems:)`` naming every
    ///   change that cannot be inferred and every object the migration would
    ///   refuse; ``/AmberValues/AmberError/notAStore(path:reason:)``.
    package static func migrationPlan(at address: PGAddress, to model: Model) throws(AmberError) -> [String] {
        let connection = try PGConnection(conninfo: address.conninfo, place: address.place)
        let metadata = try metadata(at: address, on: connection)
        guard metadata["model_hash"] != model.versionHash else { return [] }
        let mapping = ModelMapping(from: try Model.stored(in: metadata, place: address.place, registry: model.registry), to: model)
        guard mapping.problems.isEmpty else { throw .migrationFailed(store: address.place, problems: mapping.problems) }
        let planning = TableMigration(mapping: mapping, driver: PGMigrationDriver(connection: connection, schema: address.schema),
                                      dialect: PostgreSQLDialect(), storeIdentifier: UUID(), storedHash: "", progress: nil)
        let (promoted, removed) = (try planning.promotedValues(), try planning.removedData())
        do throws(AmberError) {
            try migrate(connection, address: address, store: metadata["store_uuid"].flatMap(UUID.init(uuidString:)) ?? UUID(),
                        stored: mapping.source, storedHash: metadata["model_hash"] ?? mapping.source.versionHash, to: model,
                        options: Store.Options(), rehearsal: true)
        } catch .server(_, let state, _) where state == "42501" {
            // A role that may not change the schema (insufficient_privilege) gets the plan from the models alone.
        }
        return mapping.steps + promoted + removed.map(TableMigration.plannedRemoval)
    }

    /// The metadata of the store at `address`, read on `connection` (one of its own).
    private static func metadata(at address: PGAddress, on given: PGConnection? = nil) throws(AmberError) -> [String: String] {
        let connection: PGConnection
        if let given { connection = given } else { connection = try PGConnection(conninfo: address.conninfo, place: address.place) }
        try connection.execute(setup(address))
        guard let metadata = try readMetadata(connection, place: address.place) else {
            throw .notAStore(path: address.place, reason: "the schema \(address.schema) holds no tables")
        }
        return metadata
    }

    /// What makes the store's schema for `model`: its `tables` (empty), and
    /// what `finish`es them once they hold their rows (foreign keys, the
    /// derived values' triggers, the extended values' type and function).
    static func schemaSQL(_ model: Model) throws(AmberError) -> (tables: [String], finish: [String]) {
        let dialect = PostgreSQLDialect()
        let mappings = model.entities.map { TableMapping(entity: $0, model: model, dialect: dialect) }
        let derived = try DerivedTriggerPlan(model: model, mappings: mappings, dialect: dialect)
        return (mappings.flatMap(\.createSQL) + TableMapping.joinTableSQL(model: model, dialect: dialect),
                mappings.flatMap(\.foreignKeySQL) + PGDerivedTriggers.sql(derived) + PGExtendedValues.createSQL)
    }

    /// The metadata of the store in the connection's schema, making the
    /// store first when the schema holds no tables.
    private static func metadataCreatingSchema(_ connection: PGConnection, model: Model, lockKey: String, place: String)
        throws(AmberError) -> [String: String] {
        if let metadata = try readMetadata(connection, place: place) { return metadata }
        try connection.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
        do throws(AmberError) {
            _ = try connection.query("SELECT pg_advisory_xact_lock(\(lockKey))")
            if let metadata = try readMetadata(connection, place: place) {
                try connection.execute("COMMIT")
                return metadata
            }
            // Best effort: diacritic-insensitive comparisons need it, and creating it may need rights the user lacks.
            try connection.execute("SAVEPOINT extension")
            do throws(AmberError) {
                try connection.execute("CREATE EXTENSION IF NOT EXISTS unaccent WITH SCHEMA public")
            } catch {
                try connection.execute("ROLLBACK TO SAVEPOINT extension")
            }
            try connection.execute("CREATE TABLE \(metadataTable) (key text PRIMARY KEY, value text NOT NULL)")
            let schema = try schemaSQL(model)
            for sql in schema.tables + schema.finish { try connection.execute(sql) }
            try connection.execute(PGHistory.createSQL)
            let metadata = ["format": formatVersion, "store_uuid": UUID().uuidString, "model_hash": model.versionHash,
                            "model": model.description.jsonText(), "created_by": "Amber \(version)", writesKey: "0"]
            for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
                _ = try connection.query("INSERT INTO \(metadataTable) (key, value) VALUES (?, ?)", [.string(key), .string(value)])
            }
            try connection.execute("COMMIT")
            return metadata
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// The metadata table as key → value; nil for a schema without tables.
    private static func readMetadata(_ connection: PGConnection, place: String) throws(AmberError) -> [String: String]? {
        let tables = try connection.query("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")
        let names = Set((0..<tables.count).map { tables.text($0, 0) })
        guard names.contains(metadataTable) else {
            if names.isEmpty { return nil }
            throw .notAStore(path: place, reason: "the schema has tables but no \(metadataTable) table")
        }
        let rows = try connection.query("SELECT key, value FROM \(metadataTable)")
        return Dictionary((0..<rows.count).map { (rows.text($0, 0), rows.text($0, 1)) }, uniquingKeysWith: { _, last in last })
    }

    /// Runs `body` as the only caller using the connection, connecting
    /// again first if the server went away since the last call.
    func serialized<T>(_ body: () throws(AmberError) -> T) throws(AmberError) -> T {
        lock.lock()
        defer { lock.unlock() }
        try connection.reconnectIfLost(setup: setup)
        return try body()
    }

    /// The table mapping of `entity`.
    func mapping(for entity: Entity) -> TableMapping { mappings[entity.index] }

    package var statementCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return connection.statementCount
    }

    // MARK: Reading

    package func fetchRows(of entity: Entity, matching request: FetchRequest) throws(AmberError) -> FetchedRows {
        let mapping = mapping(for: entity)
        let query = try FetchQuery(request: request, mapping: mapping, model: model, columns: mapping.selectColumns)
        return try rows(query.sql, query.bindings, mapping: mapping)
    }

    /// The rows `sql` selects (``TableMapping/selectColumns``), read in
    /// their binary forms (no number or `bytea` text to parse), or in text
    /// when a column is not of the type Amber made it (a table altered behind its back).
    private func rows(_ sql: String, _ bindings: [Value], mapping: TableMapping) throws(AmberError) -> FetchedRows {
        let rows = try serialized { () throws(AmberError) in
            let binary = try connection.query(sql, bindings, binaryResults: true)
            return mapping.binaryTypesMatch(binary) ? binary : try connection.query(sql, bindings)
        }
        return try FetchedRows(reading: rows, mapping: mapping)
    }

    package func fetchRows(of entity: Entity, where column: KeyColumn, in keys: [Int64], orderedBy order: [String])
        throws(AmberError) -> FetchedRows
    {
        try rows(of: entity, "WHERE \(Self.name(of: column)) = ANY(?::bigint[]) ORDER BY \((order.map(quote) + ["_pk"]).joined(separator: ", "))",
                 keys: keys)
    }

    package func fetchRows(of entity: Entity, linkedThrough relationship: Relationship) throws(AmberError) -> FetchedRows {
        try rows(of: entity, "WHERE \(Self.name(of: .foreignKey(relationship))) IS NOT NULL ORDER BY _pk", keys: nil)
    }

    private func rows(of entity: Entity, _ clause: String, keys: [Int64]?) throws(AmberError) -> FetchedRows {
        let mapping = mapping(for: entity)
        return try rows("SELECT \(mapping.selectColumns) FROM \(mapping.table) " + clause, keys.map { [dialect.keyList($0)] } ?? [], mapping: mapping)
    }

    package func links(of entity: Entity, through relationship: Relationship, to keys: [Int64]) throws(AmberError) -> [(Int64, Int64)] {
        let column = Self.name(of: .foreignKey(relationship))
        return try pairs("SELECT _pk, \(column) FROM \(mapping(for: entity).table) WHERE \(column) = ANY(?::bigint[]) ORDER BY _pk", keys)
    }

    package func joinedLinks(through relationship: Relationship, to keys: [Int64]) throws(AmberError) -> [(Int64, Int64)] {
        guard case .joinTable(let table, let mine, let theirs, _) = relationship.storage else { return [] }
        return try pairs("SELECT \(mine), \(theirs) FROM \(quote(table)) WHERE \(theirs) = ANY(?::bigint[]) ORDER BY 1, 2", keys)
    }

    package func joinedPairs(through relationship: Relationship, from keys: [Int64]) throws(AmberError) -> [(Int64, Int64)] {
        guard case .joinTable(let table, let mine, let theirs, let order) = relationship.storage else { return [] }
        return try pairs("SELECT \(mine), \(theirs) FROM \(quote(table)) WHERE \(mine) = ANY(?::bigint[]) "
            + "ORDER BY \(mine), \(order.map { "\($0), " } ?? "")\(theirs)", keys)
    }

    /// The two integer columns of the rows `sql` returns for `keys` (bound as one array).
    private func pairs(_ sql: String, _ keys: [Int64]) throws(AmberError) -> [(Int64, Int64)] {
        let rows = try serialized { () throws(AmberError) in try connection.query(sql, [dialect.keyList(keys)]) }
        return (0..<rows.count).map { (rows.int64($0, 0), rows.int64($0, 1)) }
    }

    package func joinedCount(through relationship: Relationship, from key: Int64) throws(AmberError) -> Int {
        guard case .joinTable(let table, let mine, _, _) = relationship.storage else { return 0 }
        return try count("SELECT count(*) FROM \(quote(table)) WHERE \(mine) = ?", key)
    }

    package func count(of entity: Entity, through relationship: Relationship, to key: Int64) throws(AmberError) -> Int {
        try count("SELECT count(*) FROM \(mapping(for: entity).table) WHERE \(Self.name(of: .foreignKey(relationship))) = ?", key)
    }

    private func count(_ sql: String, _ key: Int64) throws(AmberError) -> Int {
        Int(try serialized { () throws(AmberError) in try connection.query(sql, [.int(key)]).int64(0, 0) })
    }

    package func extendedKeyUsage(of entity: Entity) throws(AmberError) -> [(key: String, count: Int)] {
        guard entity.isExtensible else { return [] }
        let mapping = mapping(for: entity)
        let filter = mapping.entityFilter.map { " AND \($0)" } ?? ""
        let rows = try serialized { () throws(AmberError) in
            try connection.query("SELECT k, count(*) FROM \(mapping.table), jsonb_object_keys(\(quote(ExtendedValues.columnName))::jsonb) k "
                + "WHERE k <> '#'\(filter) GROUP BY k ORDER BY k COLLATE \"C\"")
        }
        return (0..<rows.count).map { (rows.text($0, 0), Int(rows.int64($0, 1))) }
    }

    private static func name(of column: KeyColumn) -> String {
        switch column {
        case .primaryKey: "_pk"
        case .foreignKey(let relationship): quote(relationship.columnName)
        }
    }

    package func count(of entity: Entity, matching request: FetchRequest) throws(AmberError) -> Int {
        Int(try query(request, mapping(for: entity), columns: "count(*)", counting: true).int64(0, 0))
    }

    package func primaryKeys(of entity: Entity, matching request: FetchRequest) throws(AmberError) -> [Int64] {
        let rows = try query(request, mapping(for: entity), columns: "_pk")
        return (0..<rows.count).map { rows.int64($0, 0) }
    }

    /// `request` compiled once for ``sortedKeys(_:among:)``.
    final class PGSortedKeysQuery: SortedKeysQuery {
        let all: FetchQuery
        let among: FetchQuery
        let sortCount: Int

        init(all: FetchQuery, among: FetchQuery, sortCount: Int) {
            (self.all, self.among, self.sortCount) = (all, among, sortCount)
        }
    }

    package func sortedKeysQuery(of entity: Entity, matching request: FetchRequest) throws(AmberError) -> any SortedKeysQuery {
        let mapping = mapping(for: entity)
        return PGSortedKeysQuery(all: try FetchQuery(request: request, mapping: mapping, model: model, columns: "", sortColumns: true),
                                 among: try FetchQuery(request: request, mapping: mapping, model: model, columns: "", sortColumns: true, among: []),
                                 sortCount: request.sortKeys.count)
    }

    package func sortedKeys(_ query: any SortedKeysQuery, among keys: [Int64]?) throws(AmberError) -> [SortedKey] {
        guard let query = query as? PGSortedKeysQuery else { throw .unsupported(store: place, capability: "a query another store prepared") }
        var bindings = keys == nil ? query.all.bindings : query.among.bindings
        if let keys, let index = query.among.keysIndex { bindings[Int(index)] = dialect.keyList(keys) }
        let sql = keys == nil ? query.all.sql : query.among.sql
        let rows = try serialized { () throws(AmberError) in try connection.query(sql, bindings) }
        return (0..<rows.count).map { row in
            SortedKey(key: rows.int64(row, 0), values: (0..<query.sortCount).map { SortValue(rows, row: row, column: $0 + 1, extendedType: extendedType) })
        }
    }

    /// Runs `request` compiled for `mapping`'s table, selecting `columns`.
    private func query(_ request: FetchRequest, _ mapping: TableMapping, columns: String, counting: Bool = false) throws(AmberError) -> PGRows {
        let query = try FetchQuery(request: request, mapping: mapping, model: model, columns: columns, counting: counting)
        return try serialized { () throws(AmberError) in try connection.query(query.sql, query.bindings) }
    }

    // MARK: Writing

    package func write<Row: RowSource>(_ changes: ChangeSet<Row>, policy: MergePolicy, from inbox: ChangeInbox?, origin: WriteOrigin)
        throws(AmberError) -> WrittenKeys
    {
        try serialized { () throws(AmberError) in
            var attempt = 1
            while true {
                do throws(AmberError) {
                    let written = try PGWriter<Row>(store: self, policy: policy, settlesAsAMerge: changes.settlesAsAMerge)
                        .write(changes, trial: false, origin: origin)
                    inboxes.post(SavedChanges(changes, written), skipping: inbox)
                    return written
                } catch .server(let place, let state, let message) where Self.retryable.contains(state) {
                    guard attempt < Self.attempts else {
                        throw .saveFailed([SaveProblem(objectID: nil, place: place, rule: .store,
                                                       message: "\(message) (SQLSTATE \(state), \(attempt) attempts)")])
                    }
                    attempt += 1
                    usleep(UInt32.random(in: 1_000...(10_000 * UInt32(attempt))))
                }
            }
        }
    }

    /// Records a write in the history, notifying other connections (both
    /// take effect at commit), and counts it for ``dataVersion()``.
    func recordWrite(_ changes: String, origin: WriteOrigin, relinked: Bool) throws(AmberError) {
        try history.record(changes, origin: origin, relinked: relinked, channel: channel, on: connection)
        _ = try connection.query("UPDATE \(Self.metadataTable) SET value = (value::bigint + 1)::text WHERE key = ?", [.string(Self.writesKey)])
    }

    /// Records `key` as deleted from `table` unless a larger key is.
    func keepDeletedKey(_ key: Int64, ofTable table: String) throws(AmberError) {
        _ = try connection.query("INSERT INTO \(Self.metadataTable) (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE "
            + "SET value = greatest(\(Self.metadataTable).value::bigint, excluded.value::bigint)::text",
                                 [.string(TableMapping.deletedKeyName(table: table)), .string(String(key))])
    }

    package func uniquenessProblems<Row: RowSource>(writing changes: ChangeSet<Row>, policy: MergePolicy) -> [SaveProblem] {
        do {
            return try serialized { () throws(AmberError) in
                _ = try PGWriter<Row>(store: self, policy: policy).write(changes, trial: true, origin: WriteOrigin())
                return []
            }
        } catch .saveFailed(let problems) {
            return problems.filter { $0.rule == .uniqueness }
        } catch {
            return []
        }
    }

    package func openInbox() -> ChangeInbox {
        lock.lock()
        defer { lock.unlock() }
        return inboxes.open()
    }

    /// The store's count of committed writes less this store's own: it
    /// moves when another connection (another process, another host) commits, and only then.
    package func dataVersion() throws(AmberError) -> Int64 {
        try serialized { () throws(AmberError) in
            let writes = try connection.query("SELECT value FROM \(Self.metadataTable) WHERE key = ?", [.string(Self.writesKey)])
            return (writes.count == 1 ? writes.int64(0, 0) : 0) - ownWrites
        }
    }

    /// Waits for other writers' notices on a connection of its own (the
    /// store's connection stays free for other callers meanwhile): a notice
    /// from another store (its mark is not this one's) means a commit, as
    /// does a data version that moved. The listener listens before the
    /// version is read, so no commit falls between the two. Several contexts
    /// may wait at once: whoever reads a notice counts it for all.
    package func waitForChanges(from version: Int64, inbox: ChangeInbox?, timeout: Duration) throws(AmberError) -> Bool {
        let deadline = ContinuousClock.now + timeout
        let (listener, seen) = try listened { () throws(AmberError) in (try listening(), notices) }
        if try dataVersion() != version { return true }
        while true {
            if inbox?.hasRecords == true { return true }
            let heard = try listened { () throws(AmberError) -> Int in
                do throws(AmberError) {
                    notices += try listener.notifications().filter { !$0.hasSuffix(" \(history.origin)") }.count
                } catch {
                    // The server went away: the next wait listens on a new connection, and the caller hears why now.
                    if self.listener === listener { self.listener = nil }
                    throw error
                }
                return notices
            }
            // A notice can outlive the merge that took its save: the version says whether it is news.
            if heard != seen, try dataVersion() != version { return true }
            let left = deadline - .now
            guard left > .zero else { return false }
            // A context on this store posts to its inbox without a notice here: look again now and then.
            listener.waitForInput(timeout: min(left, .milliseconds(50)))
        }
    }

    /// Runs `body` holding the listener's lock.
    private func listened<T>(_ body: () throws(AmberError) -> T) throws(AmberError) -> T {
        listenerLock.lock()
        defer { listenerLock.unlock() }
        return try body()
    }

    /// The listening connection, connected and listening on first use.
    private func listening() throws(AmberError) -> PGConnection {
        if let listener { return listener }
        let connection = try PGConnection(conninfo: address.conninfo, place: address.place)
        try connection.execute("LISTEN \"\(channel)\"")
        listener = connection
        return connection
    }

    package func versions(in table: Int, of keys: [Int64]) throws(AmberError) -> [Int64: Int64] {
        var versions: [Int64: Int64] = [:]
        for (key, version) in try pairs("SELECT _pk, _version FROM \(mappings[table].table) WHERE _pk = ANY(?::bigint[])", keys) {
            versions[key] = version
        }
        return versions
    }

    // MARK: History

    package func lastHistorySequence() throws(AmberError) -> Int64? {
        try serialized { () throws(AmberError) in try history.lastSequence(on: connection) }
    }

    package func history(after given: Int64?) throws(AmberError) -> [HistoryTransaction] {
        try serialized { () throws(AmberError) in
            // One snapshot for the whole read.
            try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            defer { try? connection.execute("COMMIT") }
            var sequence: Int64
            if let given { sequence = given } else { sequence = try history.purgedThrough(on: connection) }
            try history.check(sequence, on: connection, place: place)
            return try HistoryReading.transactions(history.entries(after: sequence, on: connection), store: identifier, place: place)
        }
    }

    package func purgeHistory(through sequence: Int64) throws(AmberError) {
        try serialized { () throws(AmberError) in
            try connection.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
            do throws(AmberError) {
                _ = try connection.query("SELECT pg_advisory_xact_lock(\(lockKey))")
                let last = try history.lastSequence(on: connection)
                guard sequence <= last else {
                    throw .historyUnavailable(store: place, reason: "the token is at transaction \(sequence), but the store's history ends at \(last)")
                }
                try history.purge(through: sequence, on: connection)
                try connection.execute("COMMIT")
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    package func savedChanges(after sequence: Int64) throws(AmberError) -> (records: [SavedChanges], through: Int64)? {
        try serialized { () throws(AmberError) -> (records: [SavedChanges], through: Int64)? in
            try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            defer { try? connection.execute("COMMIT") }
            guard try history.purgedThrough(on: connection) <= sequence else { return nil }
            return HistoryReading.savedChanges(try history.entries(after: sequence, on: connection), after: sequence,
                                               skipping: history.origin, model: model, place: place)
        }
    }

    // MARK: Maintenance

    /// Links that point at rows no longer there and rows of entities the
    /// model does not know: what a program writing the tables around Amber
    /// could leave (Amber's own saves check both).
    package func checkIntegrity() throws(AmberError) -> [String] {
        try serialized { () throws(AmberError) in
            var problems: [String] = []
            for mapping in mappings where mapping.entity.parentIndex == nil {
                let codes = mapping.entity.subentityIndices.map { String($0 + 1) }.joined(separator: ", ")
                let strays = try connection.query("SELECT _pk FROM \(mapping.table) WHERE _entity NOT IN (\(codes)) ORDER BY _pk LIMIT 10")
                for row in 0..<strays.count {
                    problems.append("\(mapping.entity.name) row \(strays.int64(row, 0)): an entity outside the \(mapping.entity.name) hierarchy")
                }
            }
            for mapping in mappings where mapping.entity.parentIndex == nil {
                for referrer in mapping.referrers {
                    let dangling = try connection.query("SELECT r._pk, r.\(referrer.column) FROM \(referrer.table) r WHERE r.\(referrer.column) IS NOT NULL "
                        + "AND NOT EXISTS (SELECT 1 FROM \(mapping.table) d WHERE d._pk = r.\(referrer.column)) ORDER BY 1 LIMIT 10")
                    for row in 0..<dangling.count {
                        problems.append("\(referrer.place) of row \(dangling.int64(row, 0)) points at \(mapping.entity.name) "
                            + "\(dangling.int64(row, 1)), which is not there")
                    }
                }
            }
            return problems
        }
    }

    /// A server's backup is the server's: `pg_dump` copies one consistent snapshot of a schema.
    package func backup(to destination: String) throws(AmberError) {
        throw .unsupported(store: place, capability: "backups to a file (use pg_dump --schema=\(address.schema), "
            + "which copies one consistent snapshot of the store)")
    }

    /// Runs VACUUM (ANALYZE) on the store's tables: dead rows' space is reused and the planner's statistics refreshed.
    package func vacuum() throws(AmberError) {
        try serialized { () throws(AmberError) in
            let tables = mappings.filter { $0.entity.parentIndex == nil }.map(\.table)
                + Set(model.entities.flatMap(\.relationships).compactMap { relationship -> String? in
                    guard case .joinTable(let table, _, _, _) = relationship.storage else { return nil }
                    return quote(table)
                }).sorted() + [PGHistory.name, Self.metadataTable]
            try connection.execute("VACUUM (ANALYZE) " + tables.joined(separator: ", "))
        }
    }

    /// The server checkpoints on its own; a client cannot (it needs the `pg_checkpoint` role) and need not.
    package func checkpoint() throws(AmberError) {
        throw .unsupported(store: place, capability: "checkpoints (the server writes its own; CHECKPOINT needs the pg_checkpoint role)")
    }
}
