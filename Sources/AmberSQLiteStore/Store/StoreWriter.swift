import AmberModel
import AmberSQL
import AmberStore
import AmberTransformers
import AmberValues
import CSQLite
import Foundation

/// Writes a change set's rows inside the store's transaction. Each failing
/// row becomes a problem and writing goes on, so one failed save reports
/// every violated constraint; the store then rolls back.
final class StoreWriter<Row: RowSource> {
    /// SQLITE_CONSTRAINT_UNIQUE, a macro expression Swift does not import.
    private let sqliteConstraintUnique = SQLITE_CONSTRAINT | (8 << 8)

    let store: SQLiteStore
    /// How rows changed or deleted since they were read are handled.
    let policy: MergePolicy
    /// Provisional keys of this write's new objects → their primary keys.
    private var provisional = ProvisionalKeys()
    /// Per table (root entity index): the key its next new row gets.
    private var next: [Int64?]
    /// The conflicts `policy` settled, by object identity.
    private(set) var resolved: [ObjectIdentifier: Resolution] = [:]
    /// Per table, the largest key a new row of this write keeps as its own.
    private var ownKeys: [Int: Int64] = [:]
    /// Per table, the largest key of a row this write deleted (or found deleted).
    private var deletedKeys: [Int: Int64] = [:]
    /// Per table, the keys of the rows this write's deletes removed.
    private var removed: [Int: Set<Int64>] = [:]
    /// Per table, the keys of the rows this write inserted or updated, kept
    /// for a Core Data store's bookkeeping (``finishCoreDataBookkeeping()``).
    private var written: [Int: [Int64]] = [:]
    /// Per table, the own keys of new rows a constraint refused (their problem is listed already).
    private var refused: [Int: Set<Int64>] = [:]
    /// Per table (root entity index), the stored rows this write's to-one
    /// columns point at: key → each object whose written row points at it, with the column.
    private var linked: [[Int64: [(object: Row, column: Int)]]]
    /// Stored keys bound into to-one columns of the statement being run,
    /// moved into `linked` once it wrote its row (``keepLinks(_:)``).
    private var bound: [(table: Int, key: Int64, object: Row, column: Int)] = []

    /// ``ChangeSet/settlesAsAMerge``: conflicts of a context that merges automatically are settled as its merge would.
    private let settlesAsAMerge: Bool

    init(store: SQLiteStore, policy: MergePolicy, settlesAsAMerge: Bool = false) {
        self.store = store
        self.policy = policy
        self.settlesAsAMerge = settlesAsAMerge
        next = [Int64?](repeating: nil, count: store.mappings.count)
        linked = Array(repeating: [:], count: store.mappings.count)
    }

    /// Works out, before any row is written, the primary keys of the new
    /// rows others point at, so rows can point at each other in one pass (a
    /// book at its new author, two new objects at each other). Per table, new
    /// rows take the keys after its largest, in order (what SQLite would
    /// choose, inside this write transaction).
    ///
    /// - Returns: provisional key → primary key for `changes.linkTargets`.
    func assignKeys(_ changes: ChangeSet<Row>) throws(AmberError) -> ProvisionalKeys {
        ownKeys = changes.ownKeys
        var pairs: [(key: Int64, primaryKey: Int64)] = []
        pairs.reserveCapacity(changes.linkTargets.count)
        for (key, table, rank) in changes.linkTargets { pairs.append((key, try firstKey(of: table) + Int64(rank))) }
        provisional = ProvisionalKeys(pairs)
        return provisional
    }

    /// The key the first new row of `table` (a root entity's index) gets:
    /// above every key a row of it has had, so a deleted object's key stays
    /// its own (undo brings it back under it).
    private func firstKey(of table: Int) throws(AmberError) -> Int64 {
        if let key = next[table] { return key }
        if let coreData = store.coreData {
            let key = max(try coreData.largestKey(ofTable: table, store.connection) &+ 1, (ownKeys[table] ?? 0) &+ 1)
            next[table] = key
            return key
        }
        let statement = try store.connection.statement(
            "SELECT max(coalesce((SELECT max(_pk) FROM \(store.mappings[table].table)), 0), "
                + "coalesce((SELECT CAST(value AS INTEGER) FROM \(SQLiteStore.metadataTable) WHERE key = ?), 0))")
        defer { statement.reset() }
        statement.bind(0, TableMapping.deletedKeyName(table: store.mappings[table].table))
        let key = max(try statement.step() ? statement.int64(0) &+ 1 : 1, (ownKeys[table] ?? 0) &+ 1)
        next[table] = key
        return key
    }

    /// Inserts `objects` (a change set's inserts, after ``assignKeys(_:)``):
    /// per entity, ``TableMapping/batchRows`` rows to a statement
    /// (``TableMapping/batchInsertSQL``), the rest one by one.
    ///
    /// - Returns: their primary keys, in order.
    func insert(_ objects: [Row], problems: inout [SaveProblem]) throws(AmberError) -> [Int64] {
        let listed = problems.count
        defer { if problems.count > listed + 1 { WriteRules.inObjectOrder(&problems, from: listed, objects) } }
        var keys: [Int64] = []
        keys.reserveCapacity(objects.count)
        // By entity index (no hashing per row): the objects waiting for a full batch, and its statement.
        var waiting = [[Int]](repeating: [], count: store.mappings.count)
        var batches = [Statement?](repeating: nil, count: store.mappings.count)
        // Index loops, not for-in: this generic code runs unspecialized, and an iterator looks up metadata per element.
        for index in objects.indices {
            let object = objects[index], entityIndex = object.entity.index, table = object.entity.rootIndex
            if let own = object.objectID.primaryKey {
                keys.append(own)
            } else {
                let key = try firstKey(of: table)
                next[table] = key + 1
                keys.append(key)
            }
            if store.coreData != nil { written[table, default: []].append(keys[index]) }
            let mapping = store.mappings[entityIndex]
            waiting[entityIndex].append(index)
            guard waiting[entityIndex].count == mapping.batchRows else { continue }
            let statement: Statement
            if let cached = batches[entityIndex] {
                statement = cached
            } else {
                statement = try store.connection.statement(mapping.batchInsertSQL)
                batches[entityIndex] = statement
            }
            try insertBatch(waiting[entityIndex], of: objects, keys: keys, mapping, statement, problems: &problems)
            waiting[entityIndex].removeAll(keepingCapacity: true)
        }
        for entityIndex in waiting.indices where !waiting[entityIndex].isEmpty {
            let mapping = store.mappings[entityIndex], statement = try store.connection.statement(mapping.insertSQL)
            for index in waiting[entityIndex] { _ = try insertRow(of: objects[index], key: keys[index], mapping, statement, problems: &problems) }
        }
        return keys
    }

    /// Inserts the rows of `objects` at `batch` (``TableMapping/batchRows``
    /// of them, all of `mapping`'s entity) with `statement`
    /// (``TableMapping/batchInsertSQL``). If it fails
    /// (a uniqueness constraint refused a row, a value could not be bound),
    /// SQLite undoes the statement and the rows are inserted one by one, so
    /// each refused row is a problem of its own, as in a smaller save.
    private func insertBatch(_ batch: [Int], of objects: [Row], keys: [Int64], _ mapping: TableMapping, _ statement: Statement,
                             problems: inout [SaveProblem]) throws(AmberError)
    {
        let perRow = Int32(mapping.slots.count + 2)
        for row in batch.indices {
            try bindRow(of: objects[batch[row]], key: keys[batch[row]], mapping, statement, from: Int32(row) * perRow)
        }
        let rc = statement.stepCode()
        let failure = statement.error(rc)
        statement.rewind()
        keepLinks(rc == SQLITE_DONE)
        if rc == SQLITE_DONE { return }
        // An error SQLite answered by rolling back the whole transaction ends the save; one that only undid the statement does not.
        guard store.connection.isInTransaction else { throw failure }
        let single = try store.connection.statement(mapping.insertSQL)
        for index in batch { _ = try insertRow(of: objects[index], key: keys[index], mapping, single, problems: &problems) }
    }

    /// Binds and runs `statement` (`mapping.insertSQL`) for `object`'s row under `key`.
    ///
    /// - Returns: false if a constraint refused it (a problem is listed).
    private func insertRow(of object: Row, key: Int64, _ mapping: TableMapping, _ statement: Statement,
                           problems: inout [SaveProblem]) throws(AmberError) -> Bool
    {
        try bindRow(of: object, key: key, mapping, statement, from: 0)
        let wrote = try run(statement, for: object, problems: &problems)
        keepLinks(wrote)
        if !wrote, object.objectID.primaryKey != nil { refused[object.entity.rootIndex, default: []].insert(key) }
        return wrote
    }

    /// Binds `object`'s row under `key` to the parameters of `statement`
    /// from `first` on (key, entity, then `mapping`'s columns).
    /// Inlined: the insert loops run it per row.
    @inline(__always)
    private func bindRow(of object: Row, key: Int64, _ mapping: TableMapping, _ statement: Statement, from first: Int32)
        throws(AmberError)
    {
        statement.bind(first, key)
        statement.bind(first + 1, mapping.storedEntityCode)
        let values = object.slotValues
        for column in mapping.slots.indices {
            try bind(values[mapping.slots[column]], column: column, at: first + Int32(column) + 2, mapping, statement, object)
        }
    }

    /// Binds one column's value; a foreign key that stands for a new object
    /// gets that object's new primary key, one of a stored row is noted for
    /// ``danglingLinks()``.
    private func bind(_ value: Value, column: Int, at parameter: Int32, _ mapping: TableMapping, _ statement: Statement,
                      _ object: Row) throws(AmberError)
    {
        guard let table = mapping.foreignKeys[column], case .int(let key) = value else {
            if let coreData = store.coreData {
                return TableMapping.bind(try coreData.stored(value, of: mapping.columns[column], in: object.entity, store.connection),
                                         at: parameter, in: statement)
            }
            TableMapping.bind(value, at: parameter, in: statement)
            return
        }
        guard key < 0 else {
            bound.append((table, key, object, column))
            return statement.bind(parameter, key)
        }
        guard let saved = provisional[key] else { throw WriteRules.unsavedTarget(object, column: column, mapping: mapping) }
        statement.bind(parameter, saved)
    }

    /// Ends a statement's run: the stored keys it bound count as links
    /// (``danglingLinks()`` checks them) only if it `wrote` its rows.
    private func keepLinks(_ wrote: Bool) {
        if wrote {
            for link in bound { linked[link.table][link.key, default: []].append((link.object, link.column)) }
        }
        bound.removeAll(keepingCapacity: true)
    }

    /// Updates the changed columns of `objects` whose row still has the
    /// version they were read at (every object's version is raised, even if
    /// only its unstored attributes changed, so its version stays the row's).
    /// A row changed or deleted since is a conflict, settled by ``policy``.
    func update(_ objects: [Row], problems: inout [SaveProblem]) throws(AmberError) {
        for object in objects {
            let values = object.slotValues
            let saved = object.savedSlotValues
            let written = try update(object, version: object.rowVersion, values: values, problems: &problems) { slot in
                saved.map { $0[slot] != values[slot] } ?? true
            }
            if written == false { try settleUpdateConflict(object, problems: &problems) }
        }
    }

    /// Writes the columns of `object` whose slots `write` picks over its row
    /// at `version`, raising the version: the values of its slots `values`.
    ///
    /// - Returns: whether the row was found at that version; nil if the
    ///   statement failed on a constraint (a problem is listed).
    private func update(_ object: Row, version: Int64, values: [Value], problems: inout [SaveProblem], writing write: (Int) -> Bool)
        throws(AmberError) -> Bool?
    {
        let mapping = store.mapping(for: object.entity)
        if store.coreData != nil { written[object.entity.rootIndex, default: []].append(object.objectID.primaryKey ?? 0) }
        // Never a derived column, whatever the policy kept: a value held here may be older than the store's.
        let columns = mapping.slots.indices.filter { !mapping.derived[$0] && write(mapping.slots[$0]) }
        let statement = try store.connection.statement(mapping.updateSQL(columns: columns))
        for (parameter, column) in columns.enumerated() {
            try bind(values[mapping.slots[column]], column: column, at: Int32(parameter), mapping, statement, object)
        }
        statement.bind(Int32(columns.count), object.objectID.primaryKey ?? 0)
        statement.bind(Int32(columns.count + 1), version)
        guard try run(statement, for: object, problems: &problems) else {
            keepLinks(false)
            return nil
        }
        let wrote = store.connection.changes > 0
        keepLinks(wrote)
        return wrote
    }

    /// `object`'s row was changed or deleted since it was read: reported
    /// under ``MergePolicy/error``, else settled per key against the row as
    /// it is now (inside this transaction, so nothing can change it again).
    /// A row whose only moves were derived values the store recomputed (a
    /// book added to an author elsewhere) is no conflict: the changes here
    /// are written over it, and the object takes the stored derived values.
    private func settleUpdateConflict(_ object: Row, problems: inout [SaveProblem]) throws(AmberError) {
        let stored = try storedRow(of: object)
        let resolution = try WriteRules.settleUpdate(object, stored: stored, policy: policy, mapping: store.mapping(for: object.entity),
                                                     settlesAsAMerge: settlesAsAMerge, problems: &problems,
                                                     writeAgain: { (problems) throws(AmberError) in try writeAgain(object, problems: &problems) },
                                                     update: { (values, writes, problems) throws(AmberError) in
                                                         try update(object, version: stored.version(0), values: values, problems: &problems, writing: writes)
                                                     })
        if let resolution { resolved[ObjectIdentifier(object)] = resolution }
    }

    /// Inserts the row of `object` again, under its own key, after another
    /// save deleted it; the version is one more than the object read.
    ///
    /// - Returns: false if a constraint refused it (a problem is listed).
    private func writeAgain(_ object: Row, problems: inout [SaveProblem]) throws(AmberError) -> Bool {
        let mapping = store.mapping(for: object.entity)
        let statement = try store.connection.statement(mapping.insertSQL)
        guard try insertRow(of: object, key: object.objectID.primaryKey ?? 0, mapping, statement, problems: &problems) else { return false }
        let version = try store.connection.statement(mapping.versionSQL)
        version.bind(0, object.rowVersion + 1)
        version.bind(1, object.objectID.primaryKey ?? 0)
        try version.run()
        return true
    }

    /// Deletes `objects` whose row still has the version they were read at.
    /// A row changed since is a conflict: reported under
    /// ``MergePolicy/error``; under every other policy the deletion stands.
    func delete(_ objects: [Row], problems: inout [SaveProblem]) throws(AmberError) {
        for object in objects {
            let mapping = store.mapping(for: object.entity)
            let statement = try store.connection.statement(mapping.deleteSQL)
            statement.bind(0, object.objectID.primaryKey ?? 0)
            statement.bind(1, object.rowVersion)
            let table = object.entity.rootIndex, key = object.objectID.primaryKey ?? 0
            deletedKeys[table] = max(deletedKeys[table] ?? key, key)
            guard try run(statement, for: object, problems: &problems) else { continue }
            if store.connection.changes > 0 {
                removed[table, default: []].insert(key)
                continue
            }
            let stored = try storedRow(of: object)
            if WriteRules.reportsDeleteConflict(object, stored, policy: policy, mapping: mapping, settlesAsAMerge: settlesAsAMerge) {
                problems.append(WriteRules.conflict(object, stored, mapping: mapping, deletedHere: true))
            } else {
                let anyVersion = try store.connection.statement(mapping.deleteAnyVersionSQL)
                anyVersion.bind(0, key)
                try anyVersion.run()
                if store.connection.changes > 0 { removed[table, default: []].insert(key) }
            }
        }
    }

    /// Records, per table this write deleted rows of, the largest key deleted,
    /// so no later row takes it (``firstKey(of:)``). A Core Data store
    /// needs no record: its `Z_MAX` is at least every key it ever gave.
    func keepDeletedKeys() throws(AmberError) {
        guard store.coreData == nil else { return }
        for (table, key) in deletedKeys { try store.keepDeletedKey(key, ofTable: store.mappings[table].table) }
    }

    /// Keeps what Core Data keeps beside the rows this write inserted and
    /// updated: each table's `Z_MAX` and the destination entity columns of
    /// its to-ones.
    func finishCoreDataBookkeeping() throws(AmberError) {
        guard let coreData = store.coreData else { return }
        for (table, keys) in written.sorted(by: { $0.key < $1.key }) {
            try coreData.keep(writtenKeys: keys, ofTable: table, store.connection)
        }
    }

    /// The links this write leaves pointing at rows that are not there, run
    /// last, inside the transaction, so no other save can come between.
    /// The context checks the links it knows before writing; these are the
    /// ones it cannot know: a stored row another save deleted since it was
    /// read, and a row another save linked to an object this save deletes.
    /// SQLite's own foreign-key check would do the same per row; this does
    /// it once per save for the rows the save touched (the columns keep their
    /// `FOREIGN KEY` clause for `PRAGMA foreign_key_check`).
    func danglingLinks() throws(AmberError) -> [SaveProblem] {
        var problems: [SaveProblem] = []
        for table in linked.indices where !linked[table].isEmpty {
            // Rows this save deleted are the second check's; own-key rows a constraint refused are listed already.
            let keys = linked[table].keys.filter { removed[table]?.contains($0) != true && refused[table]?.contains($0) != true }
            guard !keys.isEmpty else { continue }
            let destination = store.mappings[table]
            let missing = try store.connection.statement(
                "SELECT value FROM json_each(?) WHERE value NOT IN (SELECT _pk FROM \(destination.table)) ORDER BY value")
            defer { missing.reset() }
            missing.bind(0, SQLiteStore.jsonArray(keys))
            while try missing.step() {
                for (object, column) in linked[table][missing.int64(0)] ?? [] {
                    problems.append(WriteRules.danglingLink(object, column: column, mapping: store.mapping(for: object.entity),
                                                            destination: destination, key: missing.int64(0)))
                }
            }
        }
        for (table, keys) in removed.sorted(by: { $0.key < $1.key }) {
            let deleted = store.mappings[table]
            for referrer in deleted.referrers {
                let left = try store.connection.statement(
                    "SELECT _pk, _entity, \(referrer.column) FROM \(referrer.table) WHERE \(referrer.column) IN (SELECT value FROM json_each(?)) ORDER BY _pk")
                defer { left.reset() }
                left.bind(0, SQLiteStore.jsonArray(keys.sorted()))
                while try left.step() {
                    let entity = Int(left.int64(1)) - 1
                    let name = store.model.entities.indices.contains(entity) ? store.model.entities[entity].name : referrer.place
                    problems.append(WriteRules<Row>.linkToDeleted(entityName: name, key: left.int64(0), store: store.identifier, referrer: referrer,
                                                             deleted: deleted, target: left.int64(2)))
                }
            }
        }
        return problems
    }

    /// The row of `object` as stored now: one row, or none if it was deleted.
    private func storedRow(of object: Row) throws(AmberError) -> FetchedRows {
        let mapping = store.mapping(for: object.entity)
        let statement = try store.connection.statement("SELECT \(mapping.selectColumns) FROM \(mapping.table) WHERE _pk = ?")
        defer { statement.reset() }
        statement.bind(0, object.objectID.primaryKey ?? 0)
        return try FetchedRows(reading: statement, mapping: mapping)
    }

    /// Writes join-table rows (the links added and removed, then every row
    /// of a deleted object) and the positions of ordered members. Keys that
    /// stand for new objects become their primary keys.
    func link(_ links: [JoinRow: Bool], positions: [Position], deleted: [Row]) throws(AmberError) {
        let names = store.names
        for (row, added) in links.sorted(by: { ($0.key.table, $0.key.source, $0.key.target) < ($1.key.table, $1.key.source, $1.key.target) }) {
            let (table, source, target) = (names.table(row.table), names.column("source", of: row.table), names.column("target", of: row.table))
            let statement = try store.connection.statement(added
                ? "INSERT OR IGNORE INTO \(table) (\(source), \(target)) VALUES (?, ?)"
                : "DELETE FROM \(table) WHERE \(source) = ? AND \(target) = ?")
            statement.bind(0, try saved(row.source))
            statement.bind(1, try saved(row.target))
            try statement.run()
        }
        // A deleted object's rows in every join table that can hold it, from either end.
        for object in deleted {
            guard let pk = object.objectID.primaryKey else { continue }
            for sql in store.mapping(for: object.entity).joinRowDeletes {
                let statement = try store.connection.statement(sql)
                statement.bind(0, pk)
                try statement.run()
            }
        }
        for position in positions {
            let condition = position.otherColumn.map { " AND \(names.column($0, of: position.table)) = ?" } ?? ""
            let statement = try store.connection.statement("UPDATE \(names.table(position.table)) SET \(names.column(position.orderColumn, of: position.table)) = ? "
                + "WHERE \(names.column(position.keyColumn, of: position.table)) = ?\(condition)")
            statement.bind(0, position.position)
            statement.bind(1, try saved(position.key))
            if position.otherColumn != nil { statement.bind(2, try saved(position.other)) }
            try statement.run()
        }
    }

    /// A key as stored: a provisional one becomes its new object's primary key.
    private func saved(_ key: Int64) throws(AmberError) -> Int64 {
        guard key < 0 else { return key }
        guard let pk = provisional[key] else { throw WriteRules<Row>.unsavedTarget(nil, column: nil, mapping: nil) }
        return pk
    }

    /// Runs one row's statement. A constraint violation becomes a problem
    /// (false); any other error ends the save (throws).
    private func run(_ statement: Statement, for object: Row, problems: inout [SaveProblem]) throws(AmberError) -> Bool {
        defer { statement.rewind() }
        let rc = statement.stepCode()
        if rc == SQLITE_DONE { return true }
        if rc == sqliteConstraintUnique, case .sqlite(_, let message) = statement.error(rc) {
            problems.append(uniquenessProblem(object, sqliteMessage: message))
            return false
        }
        throw statement.error(rc)
    }

    /// Names the constraint from SQLite's "UNIQUE constraint failed: Book.title, Book.author".
    private func uniquenessProblem(_ object: Row, sqliteMessage: String) -> SaveProblem {
        WriteRules.uniquenessProblem(object, constraint: SQLiteStore.violatedConstraint(
            of: object.entity, sqliteMessage: sqliteMessage, names: store.names, table: store.model.root(of: object.entity).name))
    }
}
