import AmberModel
import AmberSQL
import AmberStore
import AmberValues
import CSQLite
import Foundation

/// Batch changes by predicate: one statement per entity inside one
/// transaction, without reading objects. The rows are found first (keys,
/// versions, entities and each computed value, checked as a fetch checks a
/// stored value and against the attribute's rules), so nothing is written
/// unless every row can take its new value.
extension SQLiteStore {
    package func batchUpdate(_ entity: Entity, matching request: FetchRequest, setting assignments: [BatchAssignment], origin: WriteOrigin,
                             from inbox: ChangeInbox?) throws(AmberError) -> BatchOutcome
    {
        let mapping = mapping(for: entity)
        let terms = assignments.map { $0.term.sql(as: $0.attribute.type, dialect: dialect) }
        // Selected per computed assignment: its value, and whether every attribute it reads is set.
        var columns = ["_pk", "_version", "_entity"], columnBindings: [Value] = []
        let computed = assignments.indices.filter { assignments[$0].isComputed }
        for index in computed {
            columns.append(terms[index].sql)
            columnBindings += terms[index].bindings
            let read = assignments[index].term.columns.map { "\(quote($0.name)) IS NOT NULL" }
            columns.append(read.isEmpty ? "1" : read.joined(separator: " AND "))
        }
        let query = try FetchQuery(request: request, mapping: mapping, model: model, columns: columns.joined(separator: ", "),
                                   columnBindings: columnBindings)
        let checks = computed.enumerated().map { offset, index in
            ValueCheck(attribute: assignments[index].attribute, column: Int32(3 + 2 * offset), mapping: mapping)
        }
        return try changing(from: inbox) { () throws(AmberError) -> BatchOutcome in
            var outcome = BatchOutcome(), versions: [Int64] = [], problems: [SaveProblem] = []
            let select = try query.prepare(on: connection)
            defer { select.reset() }
            while try select.step() {
                let key = select.int64(0), row = (entity: entityIndex(code: select.int64(2), in: mapping), key: key)
                for check in checks where problems.count < Self.problemLimit {
                    if let problem = try check.problem(in: select, mapping: mapping, object: objectID(row)) { problems.append(problem) }
                }
                outcome.rows.append(row)
                versions.append(select.int64(1) &+ 1)
            }
            guard problems.isEmpty else { throw .saveFailed(problems) }
            guard !outcome.rows.isEmpty else { return outcome }
            // Without a limit or an offset the predicate picks the same rows again (the write lock is held);
            // with one, the keys do.
            let setList = (zip(assignments, terms).map { "\(quote($0.attribute.name)) = \($1.sql)" } + ["_version = _version + 1"])
                .joined(separator: ", ")
            let update: Statement
            let keyed = request.limit != nil || request.offset != 0
            if keyed {
                update = try connection.statement("UPDATE \(mapping.table) SET \(setList) WHERE _pk IN (SELECT value FROM json_each(?))")
            } else {
                update = try connection.statement("UPDATE \(mapping.table) SET \(setList)" + (query.condition.map { " WHERE \($0)" } ?? ""))
            }
            var bindings = terms.flatMap(\.bindings)
            bindings += keyed ? [.string(Self.jsonArray(outcome.rows.map(\.key)))] : query.conditionBindings
            for (index, value) in bindings.enumerated() { TableMapping.bind(value, at: Int32(index), in: update) }
            do throws(AmberError) {
                try update.run()
            } catch .sqlite(let code, let message) where code == SQLITE_CONSTRAINT | (8 << 8) {
                throw .saveFailed([uniquenessProblem(entity, sqliteMessage: message)])
            }
            let table = entity.rootIndex, keys = assignments.map(\.attribute.name)
            var record = HistoryRecord(model: model)
            for (row, version) in zip(outcome.rows, versions) {
                outcome.record.updated.append(SavedChanges.Row(table: table, key: row.key, version: version))
                record.updated(row.entity, row.key, version: version, keys: keys)
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
            try keepDeletedKey(outcome.rows.map(\.key).max() ?? 0, of: mapping)
            let table = entity.rootIndex
            for (row, version) in zip(outcome.rows, versions) {
                outcome.record.deleted.append(SavedChanges.Row(table: table, key: row.key, version: version))
                record.deleted(row.entity, row.key, version: version)
            }
            try finish(&outcome, &record, origin: origin)
            return outcome
        }
    }

    /// At most this many problems are listed from one batch.
    private static let problemLimit = 100

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

    /// The ID of a row.
    private func objectID(_ row: (entity: Int, key: Int64)) -> ObjectID {
        ObjectID(entityName: model.entities[row.entity].name, store: identifier, key: .permanent(row.key))
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

    /// Records `key` as deleted from `mapping`'s table, so no new row takes it again.
    private func keepDeletedKey(_ key: Int64, of mapping: TableMapping) throws(AmberError) {
        let statement = try connection.statement("INSERT INTO \(Self.metadataTable) (key, value) VALUES (?, ?) "
            + "ON CONFLICT(key) DO UPDATE SET value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))")
        statement.bind(0, Self.deletedKeyName(table: mapping.table))
        statement.bind(1, String(key))
        try statement.run()
    }

    /// Names the constraint a batch update broke, from SQLite's "UNIQUE constraint failed: Book.title, Book.author".
    private func uniquenessProblem(_ entity: Entity, sqliteMessage: String) -> SaveProblem {
        let columns = Set(sqliteMessage.split(separator: ":").last?.split(separator: ",").map {
            String($0.split(separator: ".").last ?? "").trimmingCharacters(in: .whitespaces)
        } ?? [])
        let constraint = entity.uniquenessConstraints.first { Set($0.map(\.name)) == columns }
            ?? entity.persistentAttributes.filter { columns.contains($0.name) }
        // SQLite checks the constraint row by row as the UPDATE goes, so a shift of unique values
        // (rank = rank + 1) is refused even where the final values would all differ.
        return SaveProblem(objectID: nil, place: TableMapping.constraintName(entity: entity, constraint), rule: .uniqueness,
                           message: "uniqueness constraint violated: as the batch update changed the objects one by one, two held "
                               + "the same values (nothing was written; values that only collide midway, such as a shift of unique "
                               + "values, need a save through a context)")
    }
}

/// How a batch update checks one computed value as each row is read: the
/// select's column, the attribute's column in the fetch layout, and whether
/// the attribute has rules (looked up once, not per row).
private struct ValueCheck {
    let attribute: Attribute
    /// The value's column in the select; the next one says whether every attribute it reads was set.
    let column: Int32
    let layoutColumn: Int?
    let hasRules: Bool

    init(attribute: Attribute, column: Int32, mapping: TableMapping) {
        (self.attribute, self.column) = (attribute, column)
        layoutColumn = mapping.fetchNames.firstIndex(of: attribute.name)
        hasRules = attribute.validation != AttributeDescription.Validation() || attribute.pattern != nil
    }

    /// What is wrong with the row's value, if anything: not stored exactly as
    /// the attribute's type (as a fetch checks it), nil where the attribute
    /// is required or where its operands were set (a number SQLite could not
    /// represent), or outside its rules.
    func problem(in statement: Statement, mapping: TableMapping, object: @autoclosure () -> ObjectID) throws(AmberError) -> SaveProblem? {
        func problem(_ rule: SaveProblem.Rule, _ message: String) -> SaveProblem {
            SaveProblem(objectID: object(), place: attribute.description, rule: rule, message: "the batch update's value: \(message)")
        }
        if statement.columnType(column) == SQLITE_NULL {
            if statement.int64(column + 1) != 0 {
                return problem(.store, "not a number the attribute can hold exactly (an overflow, or an inexact decimal)")
            }
            return attribute.isOptional ? nil : problem(.required, "nil, for a required attribute (an attribute it reads is nil)")
        }
        guard let index = layoutColumn else { return nil }
        var cell = FetchedRows.Cell(), arena: [UInt8] = [], boxes: [Value] = []
        do throws(AmberError) {
            try mapping.copy(column: index, at: column, from: statement, into: &cell, arena: &arena, boxes: &boxes)
        } catch .invalidValue(_, _, let given) {
            // SQLite turns an integer overflow into a REAL.
            let what = statement.columnType(column) == SQLITE_FLOAT && attribute.type.integerRange != nil ? "an overflow" : given
            return problem(.store, "\(what), which \(attribute.type.coreDataName) cannot hold")
        }
        guard hasRules else { return nil }
        let value: Value
        switch cell.kind {
        case .null: return nil
        case .boxed: value = boxes[Int(cell.payload)]
        case .scalar: value = mapping.layout.value(column: index, scalar: cell.payload, bytes: UnsafeBufferPointer(start: nil, count: 0))
        case .bytes: value = arena.withUnsafeBufferPointer { mapping.layout.value(column: index, scalar: 0, bytes: $0) }
        }
        return attribute.violations(of: value).first.map { problem($0.0, $0.1) }
    }
}
