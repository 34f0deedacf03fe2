import AmberModel
import AmberSQL
import AmberStore
import AmberValues

/// Derived attributes on SQLite: the ``DerivedTriggerPlan`` as temporary
/// triggers, made on every connection when a store opens. Being temporary,
/// they live in no store file: another SQLite tool writing the store does
/// not need Amber's SQL functions (and does not keep derived values either).
enum DerivedTriggers {
    /// Rows whose derived values a save changed: (root entity index, key).
    static let log = "temp.\(DerivedTriggerPlan.logTable)"

    /// The statements that make the log and every trigger; empty for a model without derived attributes.
    static func sql(model: Model, mappings: [TableMapping]) throws(AmberError) -> [String] {
        let plan = try DerivedTriggerPlan(model: model, mappings: mappings, dialect: SQLiteDialect())
        guard !plan.isEmpty else { return [] }
        var all = ["CREATE TEMP TABLE IF NOT EXISTS \(log) (tbl INTEGER NOT NULL, pk INTEGER NOT NULL, PRIMARY KEY (tbl, pk)) WITHOUT ROWID"]
        // Trigger bodies may not qualify the tables they write, so the log goes by its bare name.
        for logged in plan.logged {
            all.append("CREATE TEMP TRIGGER IF NOT EXISTS amber_derived_log_\(logged.tableIndex) AFTER UPDATE OF \(logged.columns.joined(separator: ", ")) "
                + "ON main.\(logged.table) BEGIN INSERT OR IGNORE INTO \(DerivedTriggerPlan.logTable) VALUES (\(logged.tableIndex), NEW._pk); END")
        }
        // SQLite's triggers do not fire themselves (recursive triggers are off), so a now() trigger needs no guard.
        for trigger in plan.triggers {
            all.append("CREATE TEMP TRIGGER IF NOT EXISTS \(trigger.name) AFTER \(trigger.event.sql) ON main.\(trigger.table) BEGIN \(trigger.body); END")
        }
        return all
    }
}
