import AmberModel
import AmberSQL
import AmberStore
import AmberValues

/// Derived attributes are kept by temporary triggers, made on every
/// connection when a store opens: after any write to a row a derivation
/// reads (the object's own columns, a to-one destination's, a to-many
/// member's or link's), the rows that depend on it are computed again in
/// the same transaction, and their version moves when a value changed, so
/// other contexts merge it like any other write. Each table with derived
/// columns logs the rows whose derived values changed in a temporary table,
/// which the save reads and clears. Being temporary, the triggers live in
/// no store file: another SQLite tool writing the store does not need
/// Amber's SQL functions (and does not keep derived values either).
enum DerivedTriggers {
    /// Rows whose derived values a save changed: (root entity index, key).
    /// Trigger bodies may not qualify the tables they write, so they use the bare name.
    static let log = "temp.\(logName)"
    private static let logName = "amber_derived_log"

    /// The statements that make the log and every trigger; empty for a model without derived attributes.
    static func sql(model: Model, mappings: [TableMapping]) throws(AmberError) -> [String] {
        var statements: [String] = [], logged: [Int: [String]] = [:]
        for (entity, attribute, derivation) in model.declaredDerivations {
            let triggers = try Triggers(entity: entity, attribute: attribute, derivation: derivation, model: model,
                                        mapping: mappings[entity.index])
            statements += triggers.statements
            logged[entity.rootIndex, default: []].append(quote(attribute.name))
        }
        guard !logged.isEmpty else { return [] }
        var all = ["CREATE TEMP TABLE IF NOT EXISTS \(log) (tbl INTEGER NOT NULL, pk INTEGER NOT NULL, PRIMARY KEY (tbl, pk)) WITHOUT ROWID"]
        for (table, columns) in logged.sorted(by: { $0.key < $1.key }) {
            all.append("CREATE TEMP TRIGGER IF NOT EXISTS amber_derived_log_\(table) AFTER UPDATE OF \(columns.joined(separator: ", ")) "
                + "ON main.\(mappings[table].table) BEGIN INSERT OR IGNORE INTO \(logName) VALUES (\(table), NEW._pk); END")
        }
        return all + statements
    }

    /// One derived attribute's triggers.
    private struct Triggers {
        private(set) var statements: [String] = []
        private let name: String
        private let update: (String) -> String

        init(entity: Entity, attribute: Attribute, derivation: Derivation, model: Model, mapping: TableMapping) throws(AmberError) {
            let table = mapping.table, column = quote(attribute.name)
            let value = try PredicateCompiler(entity: entity, model: model, dialect: SQLiteDialect()).derivedValue(derivation, as: attribute.type)
            let filter = mapping.entityFilter.map { " AND \($0)" } ?? ""
            name = "amber_derived_\(entity.index)_\(attribute.slot)"
            // The version moves only when the value does: a recount that finds the same number is no change.
            update = { rows in
                "UPDATE \(table) SET \(column) = \(value), _version = _version + 1 WHERE (\(rows))\(filter) AND \(column) IS NOT \(value);"
            }
            func tableOf(_ entity: Entity) -> String { quote(model.root(of: entity).name) }
            add("AFTER INSERT ON main.\(table)", rows: "_pk = NEW._pk")
            switch derivation.form {
            case .now:
                add("AFTER UPDATE ON main.\(table)", rows: "_pk = NEW._pk")
            case .value, .function:
                guard let (hops, source) = model.source(of: derivation, in: entity) else { return }
                // A change at hop i reaches the rows whose path leads to it: `r1 IN (SELECT _pk FROM T1 WHERE r2 = …)`.
                var owner = entity
                for index in 0...hops.count {
                    let column = index < hops.count ? hops[index].name : source.name
                    var rows = index == 0 ? "_pk = NEW._pk" : "\(quote(hops[index - 1].name)) = NEW._pk"
                    if index >= 2 {
                        var current = model.destination(of: hops[index - 2])
                        for hop in stride(from: index - 2, through: 0, by: -1) {
                            rows = "\(quote(hops[hop].name)) IN (SELECT _pk FROM \(tableOf(current)) WHERE \(rows))"
                            if hop > 0 { current = model.destination(of: hops[hop - 1]) }
                        }
                    }
                    add("AFTER UPDATE OF \(quote(column)) ON main.\(tableOf(owner))", rows: rows)
                    // A destination inserted after the rows pointing at it (in the same save) is found when it arrives.
                    if index > 0 { add("AFTER INSERT ON main.\(tableOf(owner))", rows: rows) }
                    if index < hops.count { owner = model.destination(of: hops[index]) }
                }
            case .aggregate(let name, _, let key):
                guard let relationship = entity.relationships.first(where: { $0.name == name }) else { return }
                let members = tableOf(model.destination(of: relationship))
                switch relationship.storage {
                case .joinTable(let links, let mine, let theirs, _):
                    add("AFTER INSERT ON main.\(quote(links))", rows: "_pk = NEW.\(mine)")
                    add("AFTER DELETE ON main.\(quote(links))", rows: "_pk = OLD.\(mine)")
                    if let key {
                        add("AFTER UPDATE OF \(quote(key)) ON main.\(members)",
                            rows: "_pk IN (SELECT \(mine) FROM \(quote(links)) WHERE \(theirs) = NEW._pk)")
                    }
                default:
                    guard let inverse = model.inverse(of: relationship).map({ quote($0.name) }) else { return }
                    add("AFTER INSERT ON main.\(members)", rows: "_pk = NEW.\(inverse)")
                    add("AFTER DELETE ON main.\(members)", rows: "_pk = OLD.\(inverse)")
                    let columns = [inverse] + (key.map { [quote($0)] } ?? [])
                    add("AFTER UPDATE OF \(columns.joined(separator: ", ")) ON main.\(members)",
                        rows: "_pk IN (OLD.\(inverse), NEW.\(inverse))")
                }
            }
        }

        private mutating func add(_ event: String, rows: String) {
            statements.append("CREATE TEMP TRIGGER IF NOT EXISTS \(name)_\(statements.count) \(event) BEGIN \(update(rows)) END")
        }
    }
}
