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
            let read = assignments[index].term.columns.map { "\(quote($0.name)) IS NOT NULL" }
            arguments.append(assignments[index].attribute.type != .decimal ? "0" : read.isEmpty ? "1" : read.joined(separator: " AND "))
        }
        let rows = BatchRows(checks: computed.map { ValueCheck(attribute: assignments[$0].attribute, mapping: mapping) },
                             mapping: mapping, store: self)
        let setList = (zip(assignments, terms).map { "\(quote($0.attribute.name)) = \($1.sql)" }
            + ["_version = amber_batch_row(\(arguments.joined(separator: ", ")))"]).joined(separator: ", ")
        var sql = "UPDATE \(mapping.table) SET \(setList)", bindings = terms.flatMap(\.bindings) + argumentBindings
        if request.limit != nil || request.offset != 0 {
            // The rows the request's order, limit and offset pick, by key.
            let keys = try FetchQuery(request: request, mapping: mapping, model: model, columns: "_pk")
            sql += " WHERE _pk IN (\(keys.sql))"
            bindings += keys.bindings
        } else {
            let query = try FetchQuery(request: request, mapping: mapping, model: model, columns: "_pk")
            sql += query.condition.map { " WHERE \($0)" } ?? ""
            bindings += query.conditionBindings
        }
        return try changing(from: inbox) { () throws(AmberError) -> BatchOutcome in
            do throws(AmberError) {
                try connection.collecting(rows) { () throws(AmberError) in
                    // Prepared once the function exists (its removal expires the statement for the next batch).
                    let update = try connection.statement(sql)
                    for (index, value) in bindings.enumerated() { TableMapping.bind(value, at: Int32(index), in: update) }
                    try update.run()
                }
            } catch {
                // Refused values stop the statement (their problems say why) before SQLite meets a duplicate.
                if !rows.problems.isEmpty { throw .saveFailed(rows.problems) }
                if case .sqlite(let code, let message) = error, code == SQLITE_CONSTRAINT | (8 << 8) {
                    throw .saveFailed([uniquenessProblem(entity, sqliteMessage: message)])
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
        let mapping = mapping(for: entity)
        let query = try FetchQuery(request: request, mapping: mapping, model: model, columns: "_pk, _version, _entity")
        return try changing(from: inbox) { () throws(AmberError) -> BatchOutcome in
            var outcome = BatchOutcome(), versions: [Int64] = []
            let select = try query.prepare(on: connection)
            defer { select.reset() }
            while try select.step() {
                outcome.rows.append((entityIndex(code: select.int64(2), in: mapping), select.int64(0)))
                versions.append(select.int64(1))
            }
            guard !outcome.rows.isEmpty else { return outcome }
            let keys = Self.jsonArray(outcome.rows.map(\.key))
            var record = HistoryRecord(model: model)
            try unlink(deleting: keys, of: entity, into: &outcome, record: &record)
            let delete = try connection.statement("DELETE FROM \(mapping.table) WHERE _pk IN (SELECT value FROM json_each(?))")
            delete.bind(0, keys)
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
        try serialized { () throws(AmberError) -> BatchOutcome in
            try connection.execute("BEGIN IMMEDIATE")
            do throws(AmberError) {
                let outcome = try body()
                try connection.execute("COMMIT")
                if !outcome.rows.isEmpty { inboxes.post(outcome.record, skipping: inbox) }
                return outcome
            } catch {
                if connection.isInTransaction { try? connection.execute("ROLLBACK") }
                throw error
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

    /// Clears or refuses the links to the rows `keys` (a JSON array) of
    /// `entity` that a batch delete removes, by each relationship's delete
    /// rule: nullify clears the inverse to-one columns (a required inverse
    /// refuses) and the join-table rows; deny, cascade and no action refuse
    /// while a deleted row has a destination. To-one links from entities
    /// without an inverse refuse too: they would point at nothing.
    private func unlink(deleting keys: String, of entity: Entity, into outcome: inout BatchOutcome,
                        record: inout HistoryRecord) throws(AmberError)
    {
        var problems: [SaveProblem] = [], handled = Set<String>()
        let relationships = entity.subentityIndices.flatMap { model.entities[$0].relationships }
        var seen = Set<String>()
        for relationship in relationships where seen.insert("\(relationship.entityName).\(relationship.name)").inserted {
            let place = "\(relationship.entityName).\(relationship.name)"
            let inverse = model.inverse(of: relationship)
            if let inverse { handled.insert("\(inverse.entityName).\(inverse.name)") }
            let linked = try linkedCount(relationship, keys: keys)
            guard linked > 0 else { continue }
            switch relationship.deleteRule {
            case .deny, .noAction, .cascade:
                let rule = relationship.deleteRule == .cascade ? "cascades (delete its destinations first, or through a context)"
                    : relationship.deleteRule == .deny ? "denies deleting an object it still points at" : "has no action, so the link would point at nothing"
                problems.append(SaveProblem(objectID: nil, place: place, rule: .deny, message: "\(linked) of the deleted objects still have destinations, and it \(rule)"))
            case .nullify:
                if let inverse, !inverse.isToMany, !inverse.isOptional {
                    problems.append(SaveProblem(objectID: nil, place: "\(inverse.entityName).\(inverse.name)", rule: .required,
                                                message: "\(linked) objects would lose a required link to a deleted \(entity.name)"))
                    continue
                }
                try clear(relationship, inverse: inverse, keys: keys, into: &outcome, record: &record)
            }
        }
        // To-one links of other entities into this table, with no inverse here: refused while they point at a deleted row.
        for referrer in mapping(for: entity).referrers where !handled.contains(referrer.place) {
            let count = try countRows("SELECT count(*) FROM \(referrer.table) WHERE \(referrer.column) IN (SELECT value FROM json_each(?))", keys)
            if count > 0 {
                problems.append(SaveProblem(objectID: nil, place: referrer.place, rule: .relationship,
                                            message: "\(count) objects point at deleted \(entity.name) objects; unlink them first"))
            }
        }
        guard problems.isEmpty else { throw .saveFailed(problems) }
        // Join-table rows holding a deleted object at either end go, as a context's delete removes them
        // (one-way to-many relationships of other entities into this one included).
        var joinColumns: [TableMapping.JoinColumn] = []
        for index in entity.subentityIndices {
            for column in mappings[index].joinColumns where !joinColumns.contains(column) { joinColumns.append(column) }
        }
        for join in joinColumns {
            let delete = try connection.statement("DELETE FROM \(join.table) WHERE \(join.column) IN (SELECT value FROM json_each(?))")
            delete.bind(0, keys)
            try delete.run()
            if connection.changes > 0 { outcome.record.relinked = true }
        }
    }

    /// How many links `relationship` has from the rows `keys`.
    private func linkedCount(_ relationship: Relationship, keys: String) throws(AmberError) -> Int {
        let owner = mapping(for: model.entities[relationship.entityIndex])
        switch relationship.storage {
        case .foreignKey:
            let own = try countRows(
                "SELECT count(*) FROM \(owner.table) WHERE _pk IN (SELECT value FROM json_each(?)) AND \(quote(relationship.name)) IS NOT NULL", keys)
            // A to-one inverse keeps its own column: rows pointing back count too.
            guard let inverse = model.inverse(of: relationship), !inverse.isToMany else { return own }
            let back = mapping(for: model.destination(of: relationship))
            return try own + countRows("SELECT count(*) FROM \(back.table) WHERE \(quote(inverse.name)) IN (SELECT value FROM json_each(?))", keys)
        case .inverseForeignKey:
            guard let inverse = relationship.inverseName else { return 0 }
            let members = mapping(for: model.destination(of: relationship))
            return try countRows("SELECT count(*) FROM \(members.table) WHERE \(quote(inverse)) IN (SELECT value FROM json_each(?))", keys)
        case .joinTable(let table, let mine, let theirs, _):
            // A relationship that is its own inverse (friends) keeps each link once: either end may be a deleted row.
            let ends = model.inverse(of: relationship) === relationship ? [mine, theirs] : [mine]
            let condition = ends.map { "\($0) IN (SELECT value FROM json_each(?1))" }.joined(separator: " OR ")
            return try countRows("SELECT count(*) FROM \(quote(table)) WHERE \(condition)", keys)
        }
    }

    /// Clears `relationship`'s links from the rows `keys`: the members' to-one
    /// column (their versions raised, each recorded as updated) or the join-table rows.
    private func clear(_ relationship: Relationship, inverse: Relationship?, keys: String, into outcome: inout BatchOutcome,
                       record: inout HistoryRecord) throws(AmberError)
    {
        switch relationship.storage {
        case .foreignKey:
            // The column goes with the row, and a to-many inverse reads its members from it; a to-one
            // inverse keeps a column of its own, pointing back here.
            guard let inverse, !inverse.isToMany else { return }
            try nullify(inverse, of: model.destination(of: relationship), orderColumn: nil, keys: keys, into: &outcome, record: &record)
        case .inverseForeignKey(let orderColumn):
            guard let inverse else { return }
            try nullify(inverse, of: model.destination(of: relationship), orderColumn: orderColumn, keys: keys, into: &outcome, record: &record)
        case .joinTable:
            outcome.record.relinked = true  // the rows go with every other join row of the deleted objects (unlink)
        }
    }

    /// Sets to-one `inverse` (a column of `destination`'s table) to NULL where
    /// it points at one of `keys`, with `orderColumn` if the other side is
    /// ordered; each row's version rises and it is recorded as updated.
    private func nullify(_ inverse: Relationship, of destination: Entity, orderColumn: String?, keys: String,
                         into outcome: inout BatchOutcome, record: inout HistoryRecord) throws(AmberError)
    {
        let members = mapping(for: destination)
        do {
            let found = try connection.statement(
                "SELECT _pk, _version + 1, _entity FROM \(members.table) WHERE \(quote(inverse.name)) IN (SELECT value FROM json_each(?))")
            defer { found.reset() }
            found.bind(0, keys)
            while try found.step() {
                let row = (entity: entityIndex(code: found.int64(2), in: members), key: found.int64(0))
                outcome.nullified.append(row)
                outcome.record.updated.append(SavedChanges.Row(table: destination.rootIndex, key: row.key, version: found.int64(1)))
                record.updated(row.entity, row.key, version: found.int64(1), keys: [inverse.name])
            }
        }
        let order = orderColumn.map { ", \(quote($0)) = NULL" } ?? ""
        let update = try connection.statement("UPDATE \(members.table) SET \(quote(inverse.name)) = NULL\(order), _version = _version + 1 "
            + "WHERE \(quote(inverse.name)) IN (SELECT value FROM json_each(?))")
        update.bind(0, keys)
        try update.run()
    }

    /// The count `sql` returns with `keys` (a JSON array) bound.
    private func countRows(_ sql: String, _ keys: String) throws(AmberError) -> Int {
        let statement = try connection.statement(sql)
        defer { statement.reset() }
        statement.bind(0, keys)
        return try statement.step() ? Int(statement.int64(0)) : 0
    }

    /// Names the constraint a batch update broke, from SQLite's "UNIQUE constraint failed: Book.title, Book.author".
    private func uniquenessProblem(_ entity: Entity, sqliteMessage: String) -> SaveProblem {
        let constraint = Self.violatedConstraint(of: entity, sqliteMessage: sqliteMessage)
        // SQLite checks the constraint row by row as the UPDATE goes, so a shift of unique values
        // (rank = rank + 1) is refused even where the final values would all differ.
        return SaveProblem(objectID: nil, place: TableMapping.constraintName(entity: entity, constraint), rule: .uniqueness,
                           message: "uniqueness constraint violated: as the batch update changed the objects one by one, two held "
                               + "the same values (nothing was written; values that only collide midway, such as a shift of unique "
                               + "values, need a save through a context)")
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
        layoutColumn = mapping.fetchNames.firstIndex(of: attribute.name)
        hasRules = attribute.validation != AttributeDescription.Validation() || attribute.pattern != nil
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
    func problem(_ value: ArgumentCell, operandsSet: Bool, mapping: TableMapping, object: @autoclosure () -> ObjectID)
        throws(AmberError) -> SaveProblem?
    {
        func problem(_ rule: SaveProblem.Rule, _ message: String) -> SaveProblem {
            SaveProblem(objectID: object(), place: attribute.description, rule: rule, message: "the batch update's value: \(message)")
        }
        if value.storageClass == SQLITE_NULL {
            if operandsSet { return problem(.store, "not a number the attribute can hold exactly (an overflow, or an inexact decimal)") }
            return attribute.isOptional ? nil : problem(.required, "nil, for a required attribute (an attribute it reads is nil)")
        }
        guard let index = layoutColumn else { return nil }
        var cell = FetchedRows.Cell(), arena: [UInt8] = [], boxes: [Value] = []
        do throws(AmberError) {
            try mapping.copy(column: index, from: value, into: &cell, arena: &arena, boxes: &boxes)
        } catch .invalidValue(_, _, let given) {
            // SQLite turns an integer overflow into a REAL.
            let what = value.storageClass == SQLITE_FLOAT && attribute.type.integerRange != nil ? "an overflow" : given
            return problem(.store, "\(what), which \(attribute.type.coreDataName) cannot hold")
        }
        guard hasRules else { return nil }
        let read: Value
        switch cell.kind {
        case .null: return nil
        case .boxed: read = boxes[Int(cell.payload)]
        case .scalar: read = mapping.layout.value(column: index, scalar: cell.payload, bytes: UnsafeBufferPointer(start: nil, count: 0))
        case .bytes: read = arena.withUnsafeBufferPointer { mapping.layout.value(column: index, scalar: 0, bytes: $0) }
        }
        return attribute.violations(of: read).first.map { problem($0.0, $0.1) }
    }
}
