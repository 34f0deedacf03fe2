import AmberModel
import AmberSQL
import AmberStore
import AmberValues
import Foundation

/// Writes one change set in one PostgreSQL transaction, under the store's
/// advisory write lock. What it decides (conflicts, merge policies, the
/// words of each problem) is ``WriteRules``, shared with the SQLite store;
/// this type runs the statements.
///
/// PostgreSQL aborts a transaction at the first failed statement, so a row
/// that may break a uniqueness constraint is written so it cannot fail:
/// inserts skip conflicting rows (`ON CONFLICT DO NOTHING RETURNING`) and
/// the writer names the constraint each skipped row broke; updates run
/// inside a savepoint. Every refused row is a problem of its own, and one
/// failed save lists them all, as on SQLite.
final class PGWriter<Row: RowSource> {
    let store: PostgreSQLStore
    let policy: MergePolicy
    private let settlesAsAMerge: Bool
    private var connection: PGConnection { store.connection }
    private var provisional = ProvisionalKeys()
    /// Per table (root entity index): the key its next new row gets.
    private var next: [Int64?]
    private var resolved: [ObjectIdentifier: Resolution] = [:]
    /// Per table, the largest key a new row of this write keeps as its own.
    private var ownKeys: [Int: Int64] = [:]
    /// Per table, the largest key of a row this write deleted (or found deleted).
    private var deletedKeys: [Int: Int64] = [:]
    /// Per table, the keys of the rows this write's deletes removed.
    private var removed: [Int: Set<Int64>] = [:]
    /// Per table, the keys of new rows a constraint refused (their problem is listed already).
    private var refused: [Int: Set<Int64>] = [:]
    /// Per table, the stored rows this write's to-one columns point at, with who points.
    private var linked: [[Int64: [(object: Row, column: Int)]]]
    /// Per table, whether any entity stored in it declares a uniqueness constraint.
    private let guarded: [Bool]

    init(store: PostgreSQLStore, policy: MergePolicy, settlesAsAMerge: Bool = false) {
        self.store = store
        self.policy = policy
        self.settlesAsAMerge = settlesAsAMerge
        next = [Int64?](repeating: nil, count: store.mappings.count)
        linked = Array(repeating: [:], count: store.mappings.count)
        let model = store.model
        guarded = model.entities.map { table in
            model.entities.contains { $0.rootIndex == table.rootIndex && !$0.uniquenessConstraints.isEmpty }
        }
    }

    /// Writes `changes`, committed unless a problem was found or this is a
    /// `trial` (rolled back, throwing the problems it met).
    ///
    /// - Throws: ``/AmberValues/AmberError/saveFailed(_:)`` listing every problem
    ///   (nothing written); a serialization failure or deadlock (SQLSTATE
    ///   40001, 40P01) as the server reported it, for the store to retry.
    func write(_ changes: ChangeSet<Row>, trial: Bool, origin: WriteOrigin) throws(AmberError) -> WrittenKeys {
        var problems: [SaveProblem] = []
        var written = WrittenKeys()
        do throws(AmberError) {
            // READ COMMITTED whatever the server's default: each statement then sees every save committed before it,
            // under the lock (a snapshot taken before the lock was granted would miss the last writer's rows).
            try connection.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
            if trial {
                // A trial never waits for another writer: with one writing, it finds nothing, as on SQLite.
                guard try connection.query("SELECT pg_try_advisory_xact_lock(\(store.lockKey))").text(0, 0) == "t" else {
                    try connection.execute("ROLLBACK")
                    return written
                }
            } else {
                _ = try connection.query("SELECT pg_advisory_xact_lock(\(store.lockKey))")
            }
            written.provisional = try assignKeys(changes)
            written.keys = try insert(changes.inserts, problems: &problems)
            try update(changes.updates, problems: &problems)
            try delete(changes.deletes, problems: &problems)
            try link(changes.links, positions: changes.positions, deleted: changes.deletes)
            for (table, key) in deletedKeys { try store.keepDeletedKey(key, ofTable: store.mappings[table].table) }
            if trial {
                try connection.execute("ROLLBACK")
            } else {
                problems += try danglingLinks()
                if store.hasDerivedAttributes { (written.derived, written.derivedEntities) = try store.takeDerivedLog() }
                written.resolved = resolved
                if problems.isEmpty, !changes.writesNothing {
                    var text = PGHistory.unrecorded
                    if store.options.recordsHistory {
                        var record = HistoryRecord(changes, written: written, model: store.model)
                        text = record.finished()
                    }
                    try store.recordWrite(text, origin: origin, relinked: !changes.links.isEmpty || !changes.positions.isEmpty)
                }
                if problems.isEmpty {
                    try connection.execute("COMMIT")
                    if !changes.writesNothing { store.ownWrites += 1 }
                }
            }
        } catch .server(let place, let state, let message) where PostgreSQLStore.retryable.contains(state) {
            try? connection.execute("ROLLBACK")
            throw .server(store: place, state: state, message: message)
        } catch {
            problems.append(SaveProblem(objectID: nil, place: store.place, rule: .store, message: "\(error)"))
        }
        guard problems.isEmpty else {
            if connection.isInTransaction { try? connection.execute("ROLLBACK") }
            throw .saveFailed(problems)
        }
        return written
    }

    // MARK: Keys

    /// The primary keys of the new rows others point at, known before any row is written.
    private func assignKeys(_ changes: ChangeSet<Row>) throws(AmberError) -> ProvisionalKeys {
        ownKeys = changes.ownKeys
        var pairs: [(key: Int64, primaryKey: Int64)] = []
        for (key, table, rank) in changes.linkTargets { pairs.append((key, try firstKey(of: table) + Int64(rank))) }
        provisional = ProvisionalKeys(pairs)
        return provisional
    }

    /// The key the first new row of `table` gets: above every key a row of
    /// it has had (the store keeps the largest deleted one), so a deleted
    /// object's key stays its own.
    private func firstKey(of table: Int) throws(AmberError) -> Int64 {
        if let key = next[table] { return key }
        let rows = try connection.query(
            "SELECT greatest(coalesce((SELECT max(_pk) FROM \(store.mappings[table].table)), 0), "
                + "coalesce((SELECT value::bigint FROM \(PostgreSQLStore.metadataTable) WHERE key = ?), 0))",
            [.string(TableMapping.deletedKeyName(table: store.mappings[table].table))])
        let key = max(rows.int64(0, 0) &+ 1, (ownKeys[table] ?? 0) &+ 1)
        next[table] = key
        return key
    }

    // MARK: Rows

    /// Inserts `objects`: an entity's many new rows in a table without
    /// uniqueness constraints with one COPY, the others
    /// ``TableMapping/batchRows`` rows to a statement, every statement of
    /// the save in one pipeline.
    ///
    /// - Returns: their primary keys, in order.
    private func insert(_ objects: [Row], problems: inout [SaveProblem]) throws(AmberError) -> [Int64] {
        let listed = problems.count
        defer { if problems.count > listed + 1 { WriteRules.inObjectOrder(&problems, from: listed, objects) } }
        var keys: [Int64] = []
        keys.reserveCapacity(objects.count)
        var byEntity = [[Int]](repeating: [], count: store.mappings.count)
        for index in objects.indices {
            let object = objects[index]
            if let own = object.objectID.primaryKey {
                keys.append(own)
            } else {
                let key = try firstKey(of: object.entity.rootIndex)
                next[object.entity.rootIndex] = key + 1
                keys.append(key)
            }
            byEntity[object.entity.index].append(index)
        }
        var batches: [[Int]] = []
        for (entity, indices) in byEntity.enumerated() where !indices.isEmpty {
            if !guarded[entity], indices.count >= Self.copyRows {
                try copyRows(indices, of: objects, keys: keys)
                continue
            }
            let size = store.mappings[entity].batchRows
            batches += stride(from: 0, to: indices.count, by: size).map { Array(indices[$0..<min($0 + size, indices.count)]) }
        }
        try insertRows(batches, of: objects, keys: keys, problems: &problems)
        return keys
    }

    /// From this many new rows of an entity, a COPY (one more round trip
    /// than a pipeline, but no statement for the server to parse per 32 rows).
    static var copyRows: Int { 512 }

    /// Inserts the rows of `objects` at `indices` (all of one entity, whose
    /// table has no uniqueness constraint) with one COPY.
    private func copyRows(_ indices: [Int], of objects: [Row], keys: [Int64]) throws(AmberError) {
        let mapping = store.mapping(for: objects[indices[0]].entity)
        var bound: [(table: Int, key: Int64, object: Row, column: Int)] = []
        let entityNumber = Array(String(objects[indices[0]].entity.index + 1).utf8)
        try connection.copy("COPY \(mapping.table) (\(mapping.insertColumns)) FROM STDIN", count: indices.count) { (row, buffer) throws(AmberError) in
            let object = objects[indices[row]], values = object.slotValues
            buffer += String(keys[indices[row]]).utf8
            buffer.append(UInt8(ascii: "\t"))
            buffer += entityNumber
            for column in mapping.slots.indices {
                buffer.append(UInt8(ascii: "\t"))
                let value = try stored(values[mapping.slots[column]], column: column, mapping, object, links: &bound)
                try PGText.appendCopyField(value, to: &buffer, place: { "\(object.entity.name).\(mapping.columns[column].name)" })
            }
        }
        for link in bound { linked[link.table][link.key, default: []].append((link.object, link.column)) }
    }

    /// The parameters of `object`'s new row under `key`: its key, entity number and columns.
    private func parameters(of object: Row, key: Int64, _ mapping: TableMapping,
                            links: inout [(table: Int, key: Int64, object: Row, column: Int)]) throws(AmberError) -> [PGParameter]
    {
        var parameters = [try PGParameter(.int(key), place: store.place), try PGParameter(.int(Int64(object.entity.index + 1)), place: store.place)]
        parameters.reserveCapacity(mapping.slots.count + 2)
        let values = object.slotValues
        for column in mapping.slots.indices {
            parameters.append(try parameter(values[mapping.slots[column]], column: column, mapping, object, links: &links))
        }
        return parameters
    }

    /// Inserts the rows of `objects` at each of `batches` (each all of one
    /// entity) with one statement a batch, in one pipeline; in a guarded
    /// table, rows a uniqueness constraint refuses are skipped and each
    /// becomes a problem naming its constraint.
    private func insertRows(_ batches: [[Int]], of objects: [Row], keys: [Int64], problems: inout [SaveProblem]) throws(AmberError) {
        var statements: [PGConnection.Pipelined] = []
        // Per statement, the stored keys its to-one columns hold and whose row holds each.
        var links: [[(link: (table: Int, key: Int64, object: Row, column: Int), owner: Int64)]] = []
        for batch in batches {
            let mapping = store.mapping(for: objects[batch[0]].entity)
            let row = "(" + Array(repeating: "?", count: mapping.slots.count + 2).joined(separator: ", ") + ")"
            let sql = "INSERT INTO \(mapping.table) (\(mapping.insertColumns)) VALUES "
                + Array(repeating: row, count: batch.count).joined(separator: ", ")
                + (guarded[mapping.entity.index] ? " ON CONFLICT DO NOTHING RETURNING _pk" : "")
            var parameters: [PGParameter] = []
            parameters.reserveCapacity(batch.count * (mapping.slots.count + 2))
            var bound: [(table: Int, key: Int64, object: Row, column: Int)] = [], owners: [Int64] = []
            for index in batch {
                defer { owners += repeatElement(keys[index], count: bound.count - owners.count) }
                parameters += try self.parameters(of: objects[index], key: keys[index], mapping, links: &bound)
            }
            statements.append((sql, parameters))
            links.append(Array(zip(bound, owners).map { (link: $0, owner: $1) }))
        }
        let results = try connection.pipeline(statements)
        for (number, batch) in batches.enumerated() {
            let result = results[number], entity = objects[batch[0]].entity
            var inserted: Set<Int64>?
            if guarded[entity.index] { inserted = Set((0..<result.count).map { result.int64($0, 0) }) }
            for (link, owner) in links[number] where inserted?.contains(owner) ?? true {
                linked[link.table][link.key, default: []].append((link.object, link.column))
            }
            guard let inserted else { continue }
            for index in batch where !inserted.contains(keys[index]) {
                refused[entity.rootIndex, default: []].insert(keys[index])
                problems.append(try uniquenessProblem(objects[index], key: keys[index]))
            }
        }
    }

    /// The problem of `object`, whose row (under `key`, with its slots
    /// `values`: the object's own unless a merge settled others) a
    /// uniqueness constraint refused: the first of its entity's constraints
    /// another row already holds its values for, or the key itself.
    private func uniquenessProblem(_ object: Row, key: Int64, values given: [Value]? = nil) throws(AmberError) -> SaveProblem {
        let mapping = store.mapping(for: object.entity), values = given ?? object.slotValues
        for constraint in object.entity.uniquenessConstraints {
            let terms = constraint.map { "\(quote($0.columnName)) = ?" }.joined(separator: " AND ")
            var parameters: [PGParameter] = []
            for attribute in constraint { parameters.append(try PGParameter(values[attribute.codec?.encodedSlot ?? attribute.slot], place: store.place)) }
            parameters.append(try PGParameter(.int(key), place: store.place))
            if try connection.query("SELECT 1 FROM \(mapping.table) WHERE \(terms) AND _pk <> ? LIMIT 1", parameters: parameters).count > 0 {
                return WriteRules.uniquenessProblem(object, constraint: constraint)
            }
        }
        // No declared constraint collides: the row's own key does (a row another program wrote), which is no uniqueness rule.
        return SaveProblem(objectID: object.objectID, place: object.entity.name, rule: .store,
                           message: "the key \(key) is taken by a row another program wrote")
    }

    /// One column's value as a parameter (``stored(_:column:_:_:links:)``).
    private func parameter(_ value: Value, column: Int, _ mapping: TableMapping, _ object: Row,
                           links: inout [(table: Int, key: Int64, object: Row, column: Int)]) throws(AmberError) -> PGParameter
    {
        try PGParameter(try stored(value, column: column, mapping, object, links: &links),
                        place: "\(object.entity.name).\(mapping.columns[column].name)")
    }

    /// One column's value as the row stores it: a foreign key that stands
    /// for a new object becomes that object's key, one of a stored row is
    /// noted in `links` for ``danglingLinks()``; a decimal numeric would
    /// change is refused, naming the attribute.
    private func stored(_ value: Value, column: Int, _ mapping: TableMapping, _ object: Row,
                        links: inout [(table: Int, key: Int64, object: Row, column: Int)]) throws(AmberError) -> Value
    {
        if case .decimal(let decimal) = value, let problem = PostgreSQLDialect.numericRefusal(decimal.description) {
            throw .invalidValue(place: "\(object.entity.name).\(mapping.columns[column].name)",
                                expected: "a decimal PostgreSQL's numeric keeps as written", given: problem)
        }
        guard let table = mapping.foreignKeys[column], case .int(let key) = value else { return value }
        guard key < 0 else {
            links.append((table, key, object, column))
            return value
        }
        guard let saved = provisional[key] else { throw WriteRules.unsavedTarget(object, column: column, mapping: mapping) }
        return .int(saved)
    }

    /// Updates the changed columns of `objects` whose row still has the
    /// version they were read at; a row that moved is settled by ``policy``.
    /// Rows of unguarded tables go in one pipeline, their conflicts settled
    /// after it; a guarded table's rows one at a time, each in a savepoint.
    private func update(_ objects: [Row], problems: inout [SaveProblem]) throws(AmberError) {
        var statements: [PGConnection.Pipelined] = [], pending: [(object: Row, links: [(table: Int, key: Int64, object: Row, column: Int)])] = []
        for object in objects {
            let values = object.slotValues, saved = object.savedSlotValues
            let statement = try updateStatement(object, version: object.rowVersion, values: values) { slot in
                saved.map { $0[slot] != values[slot] } ?? true
            }
            if guarded[object.entity.index] {
                if try run(statement, of: object, problems: &problems) == false { try settleUpdateConflict(object, problems: &problems) }
            } else {
                statements.append((statement.sql, statement.parameters))
                pending.append((object, statement.links))
            }
        }
        for (result, (object, links)) in zip(try connection.pipeline(statements), pending) {
            if result.affectedRows > 0 {
                for link in links { linked[link.table][link.key, default: []].append((link.object, link.column)) }
            } else {
                try settleUpdateConflict(object, problems: &problems)
            }
        }
    }

    /// The UPDATE writing the columns of `object` whose slots `write` picks
    /// over its row at `version`, raising the version: its text, its
    /// parameters, and the stored keys its to-one columns will hold.
    private func updateStatement(_ object: Row, version: Int64, values: [Value], writing write: (Int) -> Bool) throws(AmberError)
        -> (sql: String, parameters: [PGParameter], links: [(table: Int, key: Int64, object: Row, column: Int)], values: [Value])
    {
        let mapping = store.mapping(for: object.entity)
        let columns = mapping.slots.indices.filter { !mapping.derived[$0] && write(mapping.slots[$0]) }
        var parameters: [PGParameter] = [], bound: [(table: Int, key: Int64, object: Row, column: Int)] = []
        for column in columns { parameters.append(try parameter(values[mapping.slots[column]], column: column, mapping, object, links: &bound)) }
        parameters.append(try PGParameter(.int(object.objectID.primaryKey ?? 0), place: store.place))
        parameters.append(try PGParameter(.int(version), place: store.place))
        return (mapping.updateSQL(columns: columns), parameters, bound, values)
    }

    /// Runs one update alone, in a savepoint when its table is guarded.
    ///
    /// - Returns: whether the row was found at its version; nil if a
    ///   uniqueness constraint refused it (a problem is listed).
    private func run(_ statement: (sql: String, parameters: [PGParameter], links: [(table: Int, key: Int64, object: Row, column: Int)], values: [Value]),
                     of object: Row, problems: inout [SaveProblem]) throws(AmberError) -> Bool? {
        let changed: Int
        if guarded[object.entity.index] {
            try connection.execute("SAVEPOINT amber_row")
            do throws(AmberError) {
                changed = try connection.query(statement.sql, parameters: statement.parameters).affectedRows
                try connection.execute("RELEASE SAVEPOINT amber_row")
            } catch .server(_, "23505", _) {
                try connection.execute("ROLLBACK TO SAVEPOINT amber_row; RELEASE SAVEPOINT amber_row")
                problems.append(try uniquenessProblem(object, key: object.objectID.primaryKey ?? 0, values: statement.values))
                return nil
            }
        } else {
            changed = try connection.query(statement.sql, parameters: statement.parameters).affectedRows
        }
        if changed > 0 {
            for link in statement.links { linked[link.table][link.key, default: []].append((link.object, link.column)) }
        }
        return changed > 0
    }

    /// `object`'s row was changed or deleted since it was read: reported or settled as ``WriteRules`` decide.
    private func settleUpdateConflict(_ object: Row, problems: inout [SaveProblem]) throws(AmberError) {
        let stored = try storedRow(of: object)
        let resolution = try WriteRules.settleUpdate(object, stored: stored, policy: policy, mapping: store.mapping(for: object.entity),
                                                     settlesAsAMerge: settlesAsAMerge, problems: &problems,
                                                     writeAgain: { (problems) throws(AmberError) in try writeAgain(object, problems: &problems) },
                                                     update: { (values, writes, problems) throws(AmberError) in
                                                         try run(updateStatement(object, version: stored.version(0), values: values, writing: writes),
                                                                 of: object, problems: &problems)
                                                     })
        if let resolution { resolved[ObjectIdentifier(object)] = resolution }
    }

    /// Inserts `object`'s row again under its own key after another save
    /// deleted it, at one more than the version it read.
    private func writeAgain(_ object: Row, problems: inout [SaveProblem]) throws(AmberError) -> Bool {
        let key = object.objectID.primaryKey ?? 0, table = object.entity.rootIndex
        let before = problems.count
        try insertRows([[0]], of: [object], keys: [key], problems: &problems)
        guard problems.count == before else { return false }
        _ = try connection.query("UPDATE \(store.mappings[table].table) SET _version = ? WHERE _pk = ?", [.int(object.rowVersion + 1), .int(key)])
        return true
    }

    /// Deletes `objects` whose row still has the version they were read at;
    /// a row that moved is a conflict under ``MergePolicy/error``, else the deletion stands.
    private func delete(_ objects: [Row], problems: inout [SaveProblem]) throws(AmberError) {
        for object in objects {
            let mapping = store.mapping(for: object.entity)
            let table = object.entity.rootIndex, key = object.objectID.primaryKey ?? 0
            deletedKeys[table] = max(deletedKeys[table] ?? key, key)
            if try connection.query(mapping.deleteSQL, [.int(key), .int(object.rowVersion)]).affectedRows > 0 {
                removed[table, default: []].insert(key)
                continue
            }
            let stored = try storedRow(of: object)
            if WriteRules.reportsDeleteConflict(object, stored, policy: policy, mapping: mapping, settlesAsAMerge: settlesAsAMerge) {
                problems.append(WriteRules.conflict(object, stored, mapping: mapping, deletedHere: true))
            } else if try connection.query("DELETE FROM \(mapping.table) WHERE _pk = ?", [.int(key)]).affectedRows > 0 {
                removed[table, default: []].insert(key)
            }
        }
    }

    /// The row of `object` as stored now: one row, or none if it was deleted.
    private func storedRow(of object: Row) throws(AmberError) -> FetchedRows {
        let mapping = store.mapping(for: object.entity)
        let rows = try connection.query("SELECT \(mapping.selectColumns) FROM \(mapping.table) WHERE _pk = ?", [.int(object.objectID.primaryKey ?? 0)])
        return try FetchedRows(reading: rows, mapping: mapping)
    }

    // MARK: Links

    /// Writes join-table rows (added and removed, then every row of a
    /// deleted object) and the positions of ordered members.
    private func link(_ links: [JoinRow: Bool], positions: [Position], deleted: [Row]) throws(AmberError) {
        for (row, added) in links.sorted(by: { ($0.key.table, $0.key.source, $0.key.target) < ($1.key.table, $1.key.source, $1.key.target) }) {
            _ = try connection.query(added
                ? "INSERT INTO \(quote(row.table)) (source, target) VALUES (?, ?) ON CONFLICT DO NOTHING"
                : "DELETE FROM \(quote(row.table)) WHERE source = ? AND target = ?", [.int(try saved(row.source)), .int(try saved(row.target))])
        }
        for object in deleted {
            guard let key = object.objectID.primaryKey else { continue }
            for sql in store.mapping(for: object.entity).joinRowDeletes { _ = try connection.query(sql, [.int(key)]) }
        }
        for position in positions {
            let condition = position.otherColumn.map { " AND \($0) = ?" } ?? ""
            var bindings: [Value] = [.int(position.position), .int(try saved(position.key))]
            if position.otherColumn != nil { bindings.append(.int(try saved(position.other))) }
            _ = try connection.query("UPDATE \(quote(position.table)) SET \(quote(position.orderColumn)) = ? WHERE \(position.keyColumn) = ?\(condition)",
                                     bindings)
        }
    }

    /// A key as stored: a provisional one becomes its new object's primary key.
    private func saved(_ key: Int64) throws(AmberError) -> Int64 {
        guard key < 0 else { return key }
        guard let primaryKey = provisional[key] else { throw WriteRules<Row>.unsavedTarget(nil, column: nil, mapping: nil) }
        return primaryKey
    }

    /// The links this write leaves pointing at rows that are not there,
    /// checked last inside the transaction: a stored row another save
    /// deleted since it was read, and a row another save linked to an object this save deletes.
    private func danglingLinks() throws(AmberError) -> [SaveProblem] {
        var problems: [SaveProblem] = []
        for table in linked.indices where !linked[table].isEmpty {
            let keys = linked[table].keys.filter { removed[table]?.contains($0) != true && refused[table]?.contains($0) != true }
            guard !keys.isEmpty else { continue }
            let destination = store.mappings[table]
            let missing = try connection.query("SELECT k FROM unnest(?::bigint[]) k WHERE NOT EXISTS "
                + "(SELECT 1 FROM \(destination.table) WHERE _pk = k) ORDER BY k", [store.dialect.keyList(keys)])
            for row in 0..<missing.count {
                let key = missing.int64(row, 0)
                for (object, column) in linked[table][key] ?? [] {
                    problems.append(WriteRules.danglingLink(object, column: column, mapping: store.mapping(for: object.entity),
                                                            destination: destination, key: key))
                }
            }
        }
        for (table, keys) in removed.sorted(by: { $0.key < $1.key }) {
            let deleted = store.mappings[table]
            for referrer in deleted.referrers {
                let left = try connection.query("SELECT _pk, _entity, \(referrer.column) FROM \(referrer.table) "
                    + "WHERE \(referrer.column) = ANY(?::bigint[]) ORDER BY _pk", [store.dialect.keyList(keys.sorted())])
                for row in 0..<left.count {
                    let entity = Int(left.int64(row, 1)) - 1
                    let name = store.model.entities.indices.contains(entity) ? store.model.entities[entity].name : referrer.place
                    problems.append(WriteRules<Row>.linkToDeleted(entityName: name, key: left.int64(row, 0), store: store.identifier,
                                                                  referrer: referrer, deleted: deleted, target: left.int64(row, 2)))
                }
            }
        }
        return problems
    }
}
