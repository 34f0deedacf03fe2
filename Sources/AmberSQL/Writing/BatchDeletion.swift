import AmberModel
import AmberStore
import AmberValues

/// The part of a batch delete every SQL store shares: what happens to the
/// links of the rows it removes, by each relationship's delete rule.
/// Nullify clears the inverse to-one columns (a required inverse refuses)
/// and the join-table rows; deny, cascade and no action refuse while a
/// deleted row has a destination. To-one links from entities without an
/// inverse refuse too: they would point at nothing.
package struct BatchDeletion {
    private let model: Model
    private let mappings: [TableMapping]
    private let dialect: any SQLDialect
    /// The deleted rows' keys, as the one parameter of the dialect's key list.
    private let keys: Value

    package init(keys: [Int64], model: Model, mappings: [TableMapping], dialect: any SQLDialect) {
        (self.model, self.mappings, self.dialect) = (model, mappings, dialect)
        self.keys = dialect.keyList(keys)
    }

    /// `column IN (the deleted keys)`.
    private func among(_ column: String) -> String { "\(column) IN (\(dialect.keyListSubquery))" }

    /// Clears or refuses the links to the deleted rows of `entity`, then
    /// removes their join-table rows; the rows it updated go into `outcome`
    /// and `record`.
    ///
    /// - Throws: ``/AmberValues/AmberError/saveFailed(_:)`` listing every
    ///   rule that refuses (nothing is changed then).
    package func unlink(_ entity: Entity, into outcome: inout BatchOutcome, record: inout HistoryRecord,
                        on statements: some SQLStatements) throws(AmberError)
    {
        var problems: [SaveProblem] = [], handled = Set<String>(), seen = Set<String>()
        let relationships = entity.subentityIndices.flatMap { model.entities[$0].relationships }
        for relationship in relationships where seen.insert("\(relationship.entityName).\(relationship.name)").inserted {
            let place = "\(relationship.entityName).\(relationship.name)"
            let inverse = model.inverse(of: relationship)
            if let inverse { handled.insert("\(inverse.entityName).\(inverse.name)") }
            let linked = try linkedCount(relationship, on: statements)
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
                try clear(relationship, inverse: inverse, into: &outcome, record: &record, on: statements)
            }
        }
        // To-one links of other entities into this table, with no inverse here: refused while they point at a deleted row.
        for referrer in mappings[entity.index].referrers where !handled.contains(referrer.place) {
            let count = try count("SELECT count(*) FROM \(referrer.table) WHERE \(among(referrer.column))", on: statements)
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
            let removed = try statements.run(SQLFragment(sql: "DELETE FROM \(join.table) WHERE \(among(join.column))", bindings: [keys]))
            if removed > 0 { outcome.record.relinked = true }
        }
    }

    /// How many links `relationship` has from the deleted rows.
    private func linkedCount(_ relationship: Relationship, on statements: some SQLStatements) throws(AmberError) -> Int {
        let owner = mappings[relationship.entityIndex]
        switch relationship.storage {
        case .foreignKey:
            let own = try count("SELECT count(*) FROM \(owner.table) WHERE \(among("_pk")) AND \(quote(relationship.columnName)) IS NOT NULL",
                                on: statements)
            // A to-one inverse keeps its own column: rows pointing back count too.
            guard let inverse = model.inverse(of: relationship), !inverse.isToMany else { return own }
            let back = mappings[model.destination(of: relationship).index]
            return try own + count("SELECT count(*) FROM \(back.table) WHERE \(among(quote(inverse.columnName)))", on: statements)
        case .inverseForeignKey:
            guard let inverse = model.inverse(of: relationship) else { return 0 }
            let members = mappings[model.destination(of: relationship).index]
            return try count("SELECT count(*) FROM \(members.table) WHERE \(among(quote(inverse.columnName)))", on: statements)
        case .joinTable(let table, let mine, let theirs, _):
            // A relationship that is its own inverse (friends) keeps each link once: either end may be a deleted row.
            let ends = model.inverse(of: relationship) === relationship ? [mine, theirs] : [mine]
            return try count("SELECT count(*) FROM \(quote(table)) WHERE \(ends.map(among).joined(separator: " OR "))",
                             repeating: ends.count, on: statements)
        }
    }

    /// Clears `relationship`'s links from the deleted rows: the members'
    /// to-one column (their versions raised, each recorded as updated);
    /// join-table rows go with every other join row of the deleted objects.
    private func clear(_ relationship: Relationship, inverse: Relationship?, into outcome: inout BatchOutcome,
                       record: inout HistoryRecord, on statements: some SQLStatements) throws(AmberError)
    {
        switch relationship.storage {
        case .foreignKey:
            // The column goes with the row, and a to-many inverse reads its members from it; a to-one
            // inverse keeps a column of its own, pointing back here.
            guard let inverse, !inverse.isToMany else { return }
            try nullify(inverse, of: model.destination(of: relationship), orderColumn: nil, into: &outcome, record: &record, on: statements)
        case .inverseForeignKey(let orderColumn):
            guard let inverse else { return }
            try nullify(inverse, of: model.destination(of: relationship), orderColumn: orderColumn, into: &outcome, record: &record,
                        on: statements)
        case .joinTable:
            outcome.record.relinked = true
        }
    }

    /// Sets to-one `inverse` (a column of `destination`'s table) to NULL where
    /// it points at a deleted row, with `orderColumn` if the other side is
    /// ordered; each row's version rises and it is recorded as updated.
    private func nullify(_ inverse: Relationship, of destination: Entity, orderColumn: String?, into outcome: inout BatchOutcome,
                         record: inout HistoryRecord, on statements: some SQLStatements) throws(AmberError)
    {
        let members = mappings[destination.index], column = quote(inverse.columnName)
        let found = try statements.integers(SQLFragment(sql: "SELECT _pk, _version + 1, _entity FROM \(members.table) WHERE \(among(column))",
                                                        bindings: [keys]), width: 3)
        for row in found {
            let entity = members.entityIndex(code: row[2])
            outcome.nullified.append((entity, row[0]))
            outcome.record.updated.append(SavedChanges.Row(table: destination.rootIndex, key: row[0], version: row[1]))
            record.updated(entity, row[0], version: row[1], keys: [inverse.name])
        }
        let order = orderColumn.map { ", \(quote($0)) = NULL" } ?? ""
        try statements.run(SQLFragment(sql: "UPDATE \(members.table) SET \(column) = NULL\(order), _version = _version + 1 WHERE \(among(column))",
                                       bindings: [keys]))
    }

    /// The count `sql` returns with the keys bound to each of its `repeating` key lists.
    private func count(_ sql: String, repeating: Int = 1, on statements: some SQLStatements) throws(AmberError) -> Int {
        let rows = try statements.integers(SQLFragment(sql: sql, bindings: Array(repeating: keys, count: repeating)), width: 1)
        return Int(rows.first?.first ?? 0)
    }
}

extension TableMapping {
    /// The entity index `_entity` value `code` names in this table; the
    /// table's root for a code no entity of it has (a row's problem then
    /// still names an object of the hierarchy).
    package func entityIndex(code: Int64) -> Int {
        let index = code &- 1
        guard index >= 0, index < Int64(columnOfSlot.count), !columnOfSlot[Int(index)].isEmpty else { return entity.rootIndex }
        return Int(index)
    }
}
