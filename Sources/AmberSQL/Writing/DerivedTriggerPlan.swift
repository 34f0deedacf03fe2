import AmberModel
import AmberStore
import AmberValues

/// The triggers that keep derived attributes, as every SQL store needs
/// them: after any write to a row a derivation reads (the object's own
/// columns, a to-one destination's, a to-many member's or link's), the
/// rows that depend on it are computed again in the same transaction (an
/// `@count` steps by one per link instead), and their version moves when a
/// value changed (for a count, with every link), so other contexts merge it
/// like any other write. A log trigger on each table with derived columns
/// records the rows whose derived values changed, which the save reads
/// (``DerivedTriggerPlan/logTable``) and reports to contexts. Each store
/// writes these in its own trigger syntax.
package struct DerivedTriggerPlan {
    /// One trigger: after `event` on `table` (quoted), run `body`, an
    /// UPDATE referring to the written row as `NEW` (or `OLD`, after a delete).
    package struct Trigger {
        package enum Event: Equatable {
            case insert, delete
            /// An update of these columns (quoted).
            case update([String])

            /// The event in SQL's words, which SQLite and PostgreSQL share (`UPDATE OF "a", "b"`).
            package var sql: String {
                switch self {
                case .insert: "INSERT"
                case .delete: "DELETE"
                case .update(let columns): "UPDATE OF \(columns.joined(separator: ", "))"
                }
            }
        }

        package let name: String
        package let event: Event
        package let table: String
        package let body: String
    }

    /// A table whose derived columns are logged when they change.
    package struct Logged {
        /// The table's root entity index (the log's `tbl`) and quoted name.
        package let tableIndex: Int
        package let table: String
        package let columns: [String]
    }

    /// The log's name, unqualified (each store puts it in its session's temporary space).
    package static let logTable = "amber_derived_log"

    package private(set) var triggers: [Trigger] = []
    package private(set) var logged: [Logged] = []
    package var isEmpty: Bool { triggers.isEmpty }

    package init(model: Model, mappings: [TableMapping], dialect: any SQLDialect) throws(AmberError) {
        var columns: [Int: [String]] = [:]
        for (entity, attribute, derivation) in model.declaredDerivations {
            try add(entity: entity, attribute: attribute, derivation: derivation, model: model, mapping: mappings[entity.index], dialect: dialect)
            columns[entity.rootIndex, default: []].append(quote(attribute.columnName))
        }
        logged = columns.sorted { $0.key < $1.key }.map { Logged(tableIndex: $0.key, table: mappings[$0.key].table, columns: $0.value) }
    }

    /// One derived attribute's triggers.
    private mutating func add(entity: Entity, attribute: Attribute, derivation: Derivation, model: Model, mapping: TableMapping,
                              dialect: any SQLDialect) throws(AmberError)
    {
        let table = mapping.table, column = quote(attribute.columnName)
        let value = try PredicateCompiler(entity: entity, model: model, dialect: dialect).derivedValue(derivation, as: attribute.type)
        let filter = mapping.entityFilter.map { " AND \($0)" } ?? ""
        let name = "amber_derived_\(entity.index)_\(attribute.slot)"
        var count = 0
        func add(_ event: Trigger.Event, on owner: String, rows: String) {
            // The version moves only when the value does: a recount that finds the same number is no change.
            let body = "UPDATE \(table) SET \(column) = \(value), _version = _version + 1 WHERE (\(rows))\(filter) "
                + "AND \(column) \(dialect.distinctFrom) \(value)"
            triggers.append(Trigger(name: "\(name)_\(count)", event: event, table: owner, body: body))
            count += 1
        }
        // A count moves by one per link added or removed, as Core Data's own triggers keep it: recounting
        // every member per link would make a save linear in the members for each one. A count not yet
        // computed (NULL) is counted in full.
        func step(_ event: Trigger.Event, on owner: String, rows: String, by delta: String) {
            let body = "UPDATE \(table) SET \(column) = COALESCE(\(column) \(delta), \(value)), _version = _version + 1 "
                + "WHERE (\(rows))\(filter)"
            triggers.append(Trigger(name: "\(name)_\(count)", event: event, table: owner, body: body))
            count += 1
        }
        func tableOf(_ entity: Entity) -> String { quote(model.root(of: entity).name) }
        add(.insert, on: table, rows: "_pk = NEW._pk")
        switch derivation.form {
        case .now:
            // After an update of any column but the table's now() ones: a now() trigger's own write fires
            // none of them, so two on one row do not fire each other without end (PostgreSQL's triggers
            // fire again inside a trigger; SQLite's do not, and this changes nothing there).
            let nowColumns = Set(model.declaredDerivations.filter { $0.entity.rootIndex == entity.rootIndex && $0.derivation.form == .now }
                .map { quote($0.attribute.columnName) })
            let others = (mapping.fetchNames + mapping.orderColumns).map(quote).filter { !nowColumns.contains($0) }
            if !others.isEmpty { add(.update(others), on: table, rows: "_pk = NEW._pk") }
        case .value, .function:
            guard let (hops, source) = model.source(of: derivation, in: entity) else { return }
            // A change at hop i reaches the rows whose path leads to it: `r1 IN (SELECT _pk FROM T1 WHERE r2 = …)`.
            var owner = entity
            for index in 0...hops.count {
                let column = index < hops.count ? hops[index].columnName : source.columnName
                var rows = index == 0 ? "_pk = NEW._pk" : "\(quote(hops[index - 1].columnName)) = NEW._pk"
                if index >= 2 {
                    var current = model.destination(of: hops[index - 2])
                    for hop in stride(from: index - 2, through: 0, by: -1) {
                        rows = "\(quote(hops[hop].columnName)) IN (SELECT _pk FROM \(tableOf(current)) WHERE \(rows))"
                        if hop > 0 { current = model.destination(of: hops[hop - 1]) }
                    }
                }
                add(.update([quote(column)]), on: tableOf(owner), rows: rows)
                // A destination inserted after the rows pointing at it (in the same save) is found when it arrives.
                if index > 0 { add(.insert, on: tableOf(owner), rows: rows) }
                if index < hops.count { owner = model.destination(of: hops[index]) }
            }
        case .aggregate(let name, let operation, let key):
            guard let relationship = entity.relationships.first(where: { $0.name == name }) else { return }
            let destination = model.destination(of: relationship), members = tableOf(destination)
            let keyColumn = key.map { quote(destination.existingAttribute(named: $0)?.columnName ?? $0) }
            let counted = operation == .count && model.inverse(of: relationship) !== relationship
            switch relationship.storage {
            case .joinTable(let links, let mine, _, _) where counted:
                step(.insert, on: quote(links), rows: "_pk = NEW.\(mine)", by: "+ 1")
                step(.delete, on: quote(links), rows: "_pk = OLD.\(mine)", by: "- 1")
            case .inverseForeignKey where counted:
                guard let inverse = model.inverse(of: relationship).map({ quote($0.columnName) }) else { return }
                let moved = "NEW.\(inverse) \(dialect.distinctFrom) OLD.\(inverse)"
                step(.insert, on: members, rows: "_pk = NEW.\(inverse)", by: "+ 1")
                step(.delete, on: members, rows: "_pk = OLD.\(inverse)", by: "- 1")
                step(.update([inverse]), on: members, rows: "_pk = OLD.\(inverse) AND \(moved)", by: "- 1")
                step(.update([inverse]), on: members, rows: "_pk = NEW.\(inverse) AND \(moved)", by: "+ 1")
            case .joinTable(let links, let mine, let theirs, _):
                add(.insert, on: quote(links), rows: "_pk = NEW.\(mine)")
                add(.delete, on: quote(links), rows: "_pk = OLD.\(mine)")
                if let keyColumn {
                    add(.update([keyColumn]), on: members, rows: "_pk IN (SELECT \(mine) FROM \(quote(links)) WHERE \(theirs) = NEW._pk)")
                }
            default:
                guard let inverse = model.inverse(of: relationship).map({ quote($0.columnName) }) else { return }
                add(.insert, on: members, rows: "_pk = NEW.\(inverse)")
                add(.delete, on: members, rows: "_pk = OLD.\(inverse)")
                add(.update([inverse] + (keyColumn.map { [$0] } ?? [])), on: members, rows: "_pk IN (OLD.\(inverse), NEW.\(inverse))")
            }
        }
    }
}
