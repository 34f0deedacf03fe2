import AmberModel
import AmberSQL
import AmberStore
import AmberValues
import Foundation

/// Batch changes by predicate on PostgreSQL: one statement per entity in
/// one transaction under the store's write lock, without reading objects.
/// A batch update returns each changed row's key, entity, new version and
/// computed values (`RETURNING`), and each computed value is checked as a
/// fetch checks a stored one and against the attribute's rules; one that
/// fails rolls the transaction back, so nothing is written unless every
/// row can take its new value. Integer overflow is the server's error
/// (SQLSTATE 22003), reported as the value's problem; `numeric` arithmetic
/// is exact, so a decimal result is refused only where Amber cannot hold it.
extension PostgreSQLStore {
    package func batchUpdate(_ entity: Entity, matching request: FetchRequest, setting assignments: [BatchAssignment], origin: WriteOrigin,
                             from inbox: ChangeInbox?) throws(AmberError) -> BatchOutcome
    {
        let mapping = mapping(for: entity)
        let terms = assignments.map { $0.term.sql(as: $0.attribute.type, dialect: dialect) }
        let computed = assignments.indices.filter { assignments[$0].isComputed }.map { assignments[$0].attribute }
        let returning = " RETURNING " + (["_pk", "_entity", "_version"] + computed.map { quote($0.columnName) }).joined(separator: ", ")
        let update = try BatchUpdateStatement(request: request, assignments: assignments, terms: terms, version: SQLFragment(sql: "_version + 1"),
                                              returning: returning, mapping: mapping, model: model)
        let integral = assignments.filter { $0.isComputed && $0.attribute.type.integerRange != nil }
        return try changing(from: inbox, origin: origin) { (record) throws(AmberError) -> BatchOutcome in
            let rows: PGRows
            // An integer overflow aborts the statement: the savepoint lets the batch name each object it would overflow.
            if !integral.isEmpty { try connection.execute("SAVEPOINT amber_batch") }
            do throws(AmberError) {
                rows = try connection.query(update.statement.sql, update.statement.bindings)
            } catch .server(_, "22003", let message) where !integral.isEmpty {
                try connection.execute("ROLLBACK TO SAVEPOINT amber_batch")
                // A floating overflow, or an integer one only midway through a term, names no object: said as the server said it.
                let found = try overflowing(integral, rows: update.rows, mapping: mapping)
                throw .saveFailed(found.isEmpty ? [overflow(computed, message)] : found)
            } catch .server(_, "23505", let message) {
                let constraint = entity.uniquenessConstraints.first { message.contains("\"\(TableMapping.constraintName(entity: entity, $0))") }
                throw .saveFailed([SaveProblem.batchUniqueness(entity, constraint: constraint ?? [])])
            } catch .server(_, let state, let message) where state == "22003" || state == "22P03" {
                throw .saveFailed([overflow(computed, message)])
            }
            let problems = try check(rows, computed: computed, mapping: mapping)
            guard problems.isEmpty else { throw .saveFailed(problems) }
            var outcome = BatchOutcome()
            let table = entity.rootIndex, keys = assignments.map(\.attribute.name)
            outcome.rows.reserveCapacity(rows.count)
            outcome.record.updated.reserveCapacity(rows.count)
            for row in 0..<rows.count {
                let (key, version) = (rows.int64(row, 0), rows.int64(row, 2))
                let entity = mapping.entityIndex(code: rows.int64(row, 1))
                outcome.rows.append((entity, key))
                outcome.record.updated.append(SavedChanges.Row(table: table, key: key, version: version))
                record.updated(entity, key, version: version, keys: keys)
            }
            // The request's order, as on SQLite (RETURNING gives rows in the order the server wrote them).
            if request.sortKeys.isEmpty { outcome.rows.sort { $0.key < $1.key } }
            return outcome
        }
    }

    /// The problems of the computed values `rows` returned (after the key,
    /// entity and version columns), at most ``problemLimit``: each read as a
    /// fetch reads it, then held to its attribute's optionality and rules.
    private func check(_ rows: PGRows, computed: [Attribute], mapping: TableMapping) throws(AmberError) -> [SaveProblem] {
        var problems: [SaveProblem] = []
        for (index, attribute) in computed.enumerated() {
            guard let column = mapping.fetchNames.firstIndex(of: attribute.columnName) else { continue }
            let hasRules = attribute.hasRules
            for row in 0..<rows.count where problems.count < Self.problemLimit {
                func object() -> ObjectID {
                    ObjectID(entityName: model.entities[mapping.entityIndex(code: rows.int64(row, 1))].name, store: identifier,
                             key: .permanent(rows.int64(row, 0)))
                }
                guard !rows.isNull(row, 3 + index) else {
                    if !attribute.isOptional {
                        problems.append(SaveProblem.batchValue(attribute, of: object(), .required,
                                                                     "nil, for a required attribute (an attribute it reads is nil)"))
                    }
                    continue
                }
                var cell = FetchedRows.Cell(), boxes: [Value] = []
                let arena = ByteArena()
                do throws(AmberError) {
                    try rows.withBytes(row, 3 + index) { (text) throws(AmberError) in
                        try mapping.copy(text: text, column: column, into: &cell, arena: arena, boxes: &boxes)
                    }
                } catch .invalidValue(_, _, let given) {
                    // A numeric result wider than Amber's decimals: exact on the server, but not here.
                    let what = attribute.type == .decimal ? "not a number the attribute can hold exactly (an overflow, or an inexact decimal)"
                        : "\(given), which \(attribute.type.coreDataName) cannot hold"
                    problems.append(SaveProblem.batchValue(attribute, of: object(), .store, what))
                    continue
                }
                guard hasRules else { continue }
                if let (rule, message) = attribute.violations(of: mapping.value(of: cell, column: column, arena: arena, boxes: boxes)).first {
                    problems.append(SaveProblem.batchValue(attribute, of: object(), rule, message))
                }
            }
        }
        return problems
    }

    /// The objects whose new value of an integer attribute in `assignments`
    /// would overflow it: each computed again in `numeric`, which does not overflow.
    private func overflowing(_ assignments: [BatchAssignment], rows: SQLFragment, mapping: TableMapping) throws(AmberError) -> [SaveProblem] {
        func exact(_ term: BatchAssignment.Term) -> SQLFragment {
            func binary(_ op: String, _ a: BatchAssignment.Term, _ b: BatchAssignment.Term) -> SQLFragment {
                let (left, right) = (exact(a), exact(b))
                return SQLFragment(sql: "(\(left.sql) \(op) \(right.sql))", bindings: left.bindings + right.bindings)
            }
            switch term {
            case .constant(let value): return SQLFragment(sql: "?::numeric", bindings: [value])
            case .column(let attribute): return SQLFragment(sql: "\(quote(attribute.columnName))::numeric")
            case .add(let a, let b): return binary("+", a, b)
            case .subtract(let a, let b): return binary("-", a, b)
            case .multiply(let a, let b): return binary("*", a, b)
            }
        }
        let terms = assignments.map { exact($0.term) }
        let found = try connection.query("SELECT _pk, _entity, \(terms.map(\.sql).joined(separator: ", ")) FROM \(mapping.table)\(rows.sql) ORDER BY _pk",
                                         terms.flatMap(\.bindings) + rows.bindings)
        var problems: [SaveProblem] = []
        for row in 0..<found.count {
            for (index, assignment) in assignments.enumerated() where !found.isNull(row, 2 + index) && problems.count < Self.problemLimit {
                let value = found.text(row, 2 + index), type = assignment.attribute.type
                guard let range = type.integerRange, Int64(value).map(range.contains) != true else { continue }
                let object = ObjectID(entityName: model.entities[mapping.entityIndex(code: found.int64(row, 1))].name, store: identifier,
                                      key: .permanent(found.int64(row, 0)))
                problems.append(SaveProblem.batchValue(assignment.attribute, of: object, .store, "\(value), out of range, which \(type.coreDataName) cannot hold"))
            }
        }
        return problems
    }

    /// The problem of an overflow the server reported for no one object.
    private func overflow(_ computed: [Attribute], _ message: String) -> SaveProblem {
        SaveProblem(objectID: nil, place: computed.map(\.description).joined(separator: ", "), rule: .store,
                    message: "the batch update's value: an overflow, which the attribute cannot hold (\(message))")
    }

    /// At most this many problems are listed from one batch.
    static let problemLimit = 100

    package func batchDelete(_ entity: Entity, matching request: FetchRequest, origin: WriteOrigin, from inbox: ChangeInbox?)
        throws(AmberError) -> BatchOutcome
    {
        let mapping = mapping(for: entity)
        let query = try FetchQuery(request: request, mapping: mapping, model: model, columns: "_pk, _version, _entity")
        return try changing(from: inbox, origin: origin) { (record) throws(AmberError) -> BatchOutcome in
            var outcome = BatchOutcome(), versions: [Int64] = []
            let found = try connection.query(query.sql, query.bindings)
            for row in 0..<found.count {
                outcome.rows.append((mapping.entityIndex(code: found.int64(row, 2)), found.int64(row, 0)))
                versions.append(found.int64(row, 1))
            }
            guard !outcome.rows.isEmpty else { return outcome }
            let keys = outcome.rows.map(\.key)
            try BatchDeletion(keys: keys, model: model, mappings: mappings, dialect: dialect)
                .unlink(entity, into: &outcome, record: &record, on: connection)
            _ = try connection.query("DELETE FROM \(mapping.table) WHERE _pk IN (\(dialect.keyListSubquery))", [dialect.keyList(keys)])
            try keepDeletedKey(keys.max() ?? 0, ofTable: mapping.table)
            for (row, version) in zip(outcome.rows, versions) {
                outcome.record.deleted.append(SavedChanges.Row(table: entity.rootIndex, key: row.key, version: version))
                record.deleted(row.entity, row.key, version: version)
            }
            return outcome
        }
    }

    /// Runs `body` in a write transaction under the store's write lock,
    /// recorded in the history and committed if it changed rows, and posts
    /// what it changed to every inbox but `inbox`; on any error nothing changed.
    private func changing(from inbox: ChangeInbox?, origin: WriteOrigin,
                          _ body: (inout HistoryRecord) throws(AmberError) -> BatchOutcome) throws(AmberError) -> BatchOutcome
    {
        try serialized { () throws(AmberError) -> BatchOutcome in
            try connection.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
            do throws(AmberError) {
                _ = try connection.query("SELECT pg_advisory_xact_lock(\(lockKey))")
                var record = HistoryRecord(model: model)
                var outcome = try body(&record)
                guard !outcome.rows.isEmpty else {
                    try connection.execute("ROLLBACK")
                    return outcome
                }
                if hasDerivedAttributes {
                    var written = WrittenKeys()
                    (written.derived, written.derivedEntities) = try takeDerivedLog()
                    outcome.record.updated += written.derived
                    record.derived(written)
                }
                try recordWrite(options.recordsHistory ? record.finished() : PGHistory.unrecorded, origin: origin,
                                relinked: outcome.record.relinked)
                try connection.execute("COMMIT")
                ownWrites += 1
                inboxes.post(outcome.record, skipping: inbox)
                return outcome
            } catch {
                if connection.isInTransaction { try? connection.execute("ROLLBACK") }
                throw error
            }
        }
    }
}

extension PGConnection: SQLStatements {
    @discardableResult
    package func run(_ statement: SQLFragment) throws(AmberError) -> Int {
        try query(statement.sql, statement.bindings).affectedRows
    }

    package func integers(_ statement: SQLFragment, width: Int) throws(AmberError) -> [[Int64]] {
        let rows = try query(statement.sql, statement.bindings)
        return (0..<rows.count).map { row in (0..<width).map { rows.int64(row, $0) } }
    }

    package func texts(_ statement: SQLFragment) throws(AmberError) -> [String] {
        let rows = try query(statement.sql, statement.bindings)
        return (0..<rows.count).map { rows.text($0, 0) }
    }
}
