import AmberModel
import AmberSQL
import AmberStore
import AmberValues
import CSQLite
import Foundation

/// Batch changes by predicate: one statement per entity inside one
/// transaction, without reading objects. A batch update is one `UPDATE`
/// whose version column goes through `amber_batch_row`, which collects each
/// row's key, entity and new version and checks each computed value (as a
/// fetch checks a stored one, and against the attribute's rules) as SQLite
/// writes it; a value that fails rolls the transaction back, so nothing is
/// written unless every row can take its new value.
extension SQLiteStore {
    package func batchUpdate(_ entity: Entity, matching request: FetchRequest, setting assignments: [BatchAssignment], origin: WriteOrigin,
                             from inbox: ChangeInbox?) throws(AmberError) -> BatchOutcome
    {
        try refusingCoreData("batch updates")
        let mapping = mapping(for: entity)
        let terms = assignments.map { $0.term.sql(as: $0.attribute.type, dialect: dialect) }
        // Passed to amber_batch_row per computed assignment: its value, and whether every attribute it reads
        // is set. Only decimal arithmetic gives NULL for set operands (an inexact result); integer and
        // floating arithmetic give NULL only for a NULL operand, so they pass 0 and spare the test per row.
        var arguments = ["_pk", "_entity", "_version"], argumentBindings: [Value] = []
        let computed = assignments.indices.filter { assignments[$0].isComputed }
        for index in computed {
            arguments.append(terms[index].sql)
            argumentBindings += terms[index].bindings
            let read = assignments[index].term.columns.map { "\(quote($0.columnName)) IS NOT NULL" }
            arguments.append(assignments[index].attribute.type != .decimal ? "0" : read.isEmpty ? "1" : read.joined(separator: " AND "))
        }
        let rows = BatchRows(checks: computed.map { ValueCheck(attribute: assignments[$0].attribute, mapping: mapping) },
                             mapping: mapping, store: self)
        let update = try BatchUpdateStatement(request: request, assignments: assignments, terms: terms,
                                              version: SQLFragment(sql: "amber_batch_row(\(arguments.joined(separator: ", ")))",
                                                                   bindings: argumentBindings),
                                              mapping: mapping, model: model).statement
        return try changing(from: inbox) { () throws(AmberError) -> BatchOutcome in
            do throws(AmberError) {
                try connection.collecting(rows) { () throws(AmberError) in
                    // Prepared once the function exists (its removal expires the statement for the next batch).
                    try connection.run(update)
                }
            } catch {
                // Refused values stop the statement (their problems say why) before SQLite meets a duplicate.
                if !rows.problems.isEmpty { throw .saveFailed(rows.problems) }
                if case .sqlite(let code, let message) = error, code == SQLITE_CONSTRAINT | (8 << 8) {
                    throw .saveFailed([SaveProblem.batchUniqueness(entity, constraint: Self.violatedConstraint(of: entity, sqliteMessage: message))])
                }
                throw error
            }
            guard rows.problems.isEmpty else { throw .saveFailed(rows.problems) }
            var outcome = BatchOutcome()
            guard !rows.keys.isEmpty else { return outcome }
            let table = entity.rootIndex, keys = assignments.map(\.attribute.name)
            var record = HistoryRecord(model: model)
            outcome.rows.reserveCapacity(rows.keys.count)
            outcome.record.updated.reserveCapacity(rows.keys.count)
            for ((key, entity), version) in zip(zip(rows.keys, rows.entities), rows.versions) {
                outcome.rows.append((entity, key))
                outcome.record.updated.append(SavedChanges.Row(table: table, key: key, version: version))
                record.updated(entity, key, version: version, keys: keys)
            }
            try finish(&outcome, &record, origin: origin)
            return outcome
        }
    }

    package func batchDelete(_ entity: Entity, matching request: FetchRequest, origin: WriteOrigin, from inbox: ChangeInbox?)
        throws(AmberError) -> BatchOutcome
    {
        try refusingCoreData("batch deletes")
        let mapping = mapping(for: entity)
        let query = try FetchQuery(request: request, mapping: mapping, model: model, columns: "_pk, _version, _entity")
        return try changing(from: inbox) { () throws(AmberError) -> BatchOutcome in
            var outcome = BatchOutcome(), versions: [Int64] = []
            let select = try query.prepare(on: connection)
            defer { select.reset() }
            while try select.step() {
                outcome.rows.append((mapping.entityIndex(code: select.int64(2)), select.int64(0)))
                versions.append(select.int64(1))
            }
            guard !outcome.rows.isEmpty else { return outcome }
            let keys = outcome.rows.map(\.key)
            var record = HistoryRecord(model: model)
            try BatchDeletion(keys: keys, model: model, mappings: mappings, dialect: dialect)
                .unlink(entity, into: &outcome, record: &record, on: connection)
            let delete = try connection.statement("DELETE FROM \(mapping.table) WHERE _pk IN (\(dialect.keyListSubquery))")
            TableMapping.bind(dialect.keyList(keys), at: 0, in: delete)
            try delete.run()
            try keepDeletedKey(outcome.rows.map(\.key).max() ?? 0, ofTable: mapping.table)
            let table = entity.rootIndex
            for (row, version) in zip(outcome.rows, versions) {
                outcome.record.deleted.append(SavedChanges.Row(table: table, key: row.key, version: version))
                record.deleted(row.entity, row.key, version: version)
            }
            try finish(&outcome, &record, origin: origin)
            return outcome
        }
    }

    /// Runs `body` in a write transaction, committed if it returns, and
    /// posts what it changed to every inbox but `inbox`; on any error nothing changed.
    private func changing(from inbox: ChangeInbox?, _ body: () throws(AmberError) -> BatchOutcome) throws(AmberError) -> BatchOutcome {
        try refusingReadOnly("batch changes")
        return try serialized { () throws(AmberError) -> BatchOutcome in
            try connection.execute("BEGIN IMMEDIATE")
            do throws(AmberError) {
                let outcome = try body()
                try connection.execute("COMMIT")
                if !outcome.rows.isEmpty { inboxes.post(outcome.record, skipping: inbox) }
                return outcome
            } catch {
                if connection.isInTransaction { try? connection.execute("ROLLBACK") }
                throw error.storageFailure(of: place, "nothing was changed") ?? error
            }
        }
    }

    /// Completes a batch inside its transaction: the rows whose derived
    /// values the triggers computed, and the transaction in the history.
    private func finish(_ outcome: inout BatchOutcome, _ record: inout HistoryRecord, origin: WriteOrigin) throws(AmberError) {
        if hasDerivedAttributes {
            var written = WrittenKeys()
            (written.derived, written.derivedEntities) = try takeDerivedLog()
            outcome.record.updated += written.derived
            record.derived(written)
        }
        let text = options.recordsHistory ? record.finished() : HistoryTable.unrecorded
        try history.record(text, origin: origin, relinked: outcome.record.relinked, on: connection)
    }
}

/// How a batch update checks one computed value as SQLite writes it: the
/// attribute's column in the fetch layout, and whether the attribute has
/// rules (looked up once, not per row).
struct ValueCheck {
    let attribute: Attribute
    let layoutColumn: Int?
    let hasRules: Bool
    /// For an integer or Boolean attribute without rules, the range a stored value must be in.
    private let plainRange: ClosedRange<Int64>?

    init(attribute: Attribute, mapping: TableMapping) {
        self.attribute = attribute
        layoutColumn = mapping.fetchNames.firstIndex(of: attribute.columnName)
        hasRules = attribute.hasRules
        plainRange = hasRules || layoutColumn == nil ? nil : attribute.type == .boolean ? 0...1 : attribute.type.integerRange
    }

    /// Whether `value` is an integer the attribute holds with no rule to
    /// try: the common case, decided without reading the value generically.
    /// False means only "look closer" (``problem(_:operandsSet:mapping:object:)``).
    func plainlyFits(_ value: OpaquePointer) -> Bool {
        guard let plainRange, sqlite3_value_type(value) == SQLITE_INTEGER else { return false }
        return plainRange.contains(sqlite3_value_int64(value))
    }

    /// What is wrong with the row's new `value`, if anything: not stored
    /// exactly as the attribute's type (as a fetch checks it), nil where the
    /// attribute is required or where its operands were set (`operandsSet`:
    /// a number SQLite could not represent), or outside its rules.
    func problem(_ value: SQLiteValue, operandsSet: Bool, mapping: TableMapping, object: @autoclosure () -> ObjectID)
        throws(AmberError) -> SaveProblem?
    {
        func problem(_ rule: SaveProblem.Rule, _ message: String) -> SaveProblem {
            SaveProblem.batchValue(attribute, of: object(), rule, message)
        }
        if value.storageClass == SQLITE_NULL {
            if operandsSet { return problem(.store, "not a number the attribute can hold exactly (an overflow, or an inexact decimal)") }
            return attribute.isOptional ? nil : problem(.required, "nil, for a required attribute (an attribute it reads is nil)")
        }
        guard let index = layoutColumn else { return nil }
        var cell = FetchedRows.Cell(), boxes: [Value] = []
        let arena = ByteArena()
        do throws(AmberError) {
            try mapping.copy(column: index, from: value, into: &cell, arena: arena, boxes: &boxes)
        } catch .invalidValue(_, _, let given) {
            // SQLite turns an integer overflow into a REAL.
            let what = value.storageClass == SQLITE_FLOAT && attribute.type.integerRange != nil ? "an overflow" : given
            return problem(.store, "\(what), which \(attribute.type.coreDataName) cannot hold")
        }
        guard hasRules else { return nil }
        return attribute.violations(of: mapping.value(of: cell, column: index, arena: arena, boxes: boxes)).first.map { problem($0.0, $0.1) }
    }
}

extension Connection: SQLStatements {
    @discardableResult
    func run(_ statement: SQLFragment) throws(AmberError) -> Int {
        try prepared(statement).run()
        return changes
    }

    func integers(_ statement: SQLFragment, width: Int) throws(AmberError) -> [[Int64]] {
        let query = try prepared(statement)
        defer { query.reset() }
        var rows: [[Int64]] = []
        while try query.step() { rows.append((0..<width).map { query.int64(Int32($0)) }) }
        return rows
    }

    func texts(_ statement: SQLFragment) throws(AmberError) -> [String] {
        let query = try prepared(statement)
        defer { query.reset() }
        var rows: [String] = []
        while try query.step() { rows.append(try query.string(0)) }
        return rows
    }

    /// The cached statement for `statement`'s text with its values bound.
    private func prepared(_ statement: SQLFragment) throws(AmberError) -> Statement {
        let prepared = try self.statement(statement.sql)
        for (index, value) in statement.bindings.enumerated() { TableMapping.bind(value, at: Int32(index), in: prepared) }
        return prepared
    }
}
