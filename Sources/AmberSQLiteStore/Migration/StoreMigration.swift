import AmberModel
import AmberSQL
import AmberStore
import AmberTransformers
import AmberValues
import CSQLite
import Foundation

/// Carries out a ``ModelMapping`` on a store's connection in one
/// transaction: the old tables are renamed aside, the destination model's
/// tables made, every row and link copied through the mapping (renamed
/// columns, defaults, widened integers, entity numbers), transformed values
/// decoded with the old chain and encoded with the new one, derived values
/// computed, the old tables dropped, links checked, and the model recorded.
/// Any failure rolls everything back.
struct StoreMigration {
    let mapping: ModelMapping
    let connection: Connection
    let storeIdentifier: UUID
    let progress: (@Sendable (MigrationProgress) throws -> Void)?

    /// Moves transformed values to their new chain as rows are copied (`amber_reencode`).
    private let reencoder: Reencoder

    /// The version hash the store's metadata records for the source model.
    let storedHash: String
    /// The store's file, and where to copy it once this connection holds the write lock (nil: no copy).
    let storePath: String
    let backupPath: String?

    init(mapping: ModelMapping, connection: Connection, storeIdentifier: UUID, storedHash: String, storePath: String,
         backupPath: String?, progress: (@Sendable (MigrationProgress) throws -> Void)?)
    {
        self.mapping = mapping
        self.storedHash = storedHash
        self.storePath = storePath
        self.backupPath = backupPath
        self.connection = connection
        self.storeIdentifier = storeIdentifier
        self.progress = progress
        self.reencoder = Reencoder(mapping.reencoded.map { entity, encoder, oldEncoder in
            Reencoder.Column(entity: entity, encoder: encoder, oldEncoder: oldEncoder)
        }, store: storeIdentifier, progress: progress)
    }

    private var source: Model { mapping.source }
    private var destination: Model { mapping.destination }
    private static let oldPrefix = "_amber_old_"

    /// Runs the migration. SQLite does not enforce foreign keys on a store's
    /// connection (saves check their links themselves), so tables can be
    /// rebuilt; the links are checked as a whole before the commit.
    func run(metadataTable: String) throws(AmberError) -> [String] {
        var problems: [String] = []
        try connection.execute("PRAGMA legacy_alter_table = ON")
        defer { try? connection.execute("PRAGMA legacy_alter_table = OFF") }
        try connection.registerReencoding(reencoder)
        // Removal failing only keeps the function (and its reencoder) until the connection closes.
        defer { try? connection.registerReencoding(nil) }
        try connection.execute("BEGIN IMMEDIATE")
        do throws(AmberError) {
            // Another connection may have migrated the store while this one waited for the write lock.
            let current = try strings("SELECT value FROM \(metadataTable) WHERE key = 'model_hash'").first
            if current == destination.versionHash {
                try connection.execute("ROLLBACK")
                return []
            }
            guard current == storedHash else {
                throw AmberError.migrationFailed(store: "", problems: ["the store's model changed to \(current ?? "(none)") while waiting to migrate it"])
            }
            // Copied under the write lock: a store another connection migrated meanwhile is never copied as the old one.
            if let backupPath {
                do throws(AmberError) {
                    try Connection.backup(of: storePath, to: backupPath, busyTimeout: connection.busyTimeout)
                } catch {
                    throw AmberError.migrationFailed(store: "", problems: ["the backup \(backupPath) cannot be written: \(error)"])
                }
            }
            try moveOldTablesAside()
            for mapping in destination.entities.map({ TableMapping(entity: $0, model: destination, dialect: SQLiteDialect()) }) {
                for sql in mapping.createSQL { try connection.execute(sql) }
            }
            for sql in TableMapping.joinTableSQL(model: destination, dialect: SQLiteDialect()) { try connection.execute(sql) }
            for root in destination.entities where root.parentIndex == nil {
                problems += try copyRows(of: root)
            }
            guard problems.isEmpty else { throw AmberError.migrationFailed(store: "", problems: problems) }
            try copyJoinTables()
            try computeDerivedValues()
            try carryDeletedKeys(metadataTable: metadataTable)
            for table in sourceTables { try connection.execute("DROP TABLE \(quote(Self.oldPrefix + table))") }
            problems += try danglingLinks()
            guard problems.isEmpty else { throw AmberError.migrationFailed(store: "", problems: problems) }
            try record(metadataTable: metadataTable)
            try connection.execute("COMMIT")
            return []
        } catch .migrationFailed(_, let found) {
            try? connection.execute("ROLLBACK")
            return found
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    // MARK: Steps

    /// Drops the old indexes (their names are the new tables' to take) and
    /// renames every old table aside; legacy renaming leaves the links other
    /// tables declare pointing at the name, which the new table takes.
    private func moveOldTablesAside() throws(AmberError) {
        for table in sourceTables {
            let indexes = try connection.uncachedStatement("SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL AND tbl_name = ?")
            indexes.bind(0, table)
            var names: [String] = []
            while try indexes.step() { names.append(try indexes.string(0)) }
            for index in names { try connection.execute("DROP INDEX \(quote(index))") }
            try connection.execute("ALTER TABLE \(quote(table)) RENAME TO \(quote(Self.oldPrefix + table))")
        }
    }

    /// The tables the source model keeps (its roots' and its join tables), as
    /// named in SQLite; other tables in the file (a program's own) are left alone.
    private var sourceTables: [String] {
        var tables = source.entities.filter { $0.parentIndex == nil }.map(\.name)
        for relationship in source.entities.flatMap(\.relationships) {
            if case .joinTable(let table, _, _, _) = relationship.storage, !tables.contains(table) { tables.append(table) }
        }
        return tables
    }

    /// Keeps the highest key each table ever gave (`deleted-key` rows): under
    /// the table's new name, and past the rows the migration removed, so no
    /// key of a deleted or removed object is given again.
    private func carryDeletedKeys(metadataTable: String) throws(AmberError) {
        for root in destination.entities where root.parentIndex == nil {
            guard let old = mapping.entities[root.index] else { continue }
            let name = SQLiteStore.deletedKeyName(table: quote(root.name))
            let oldName = SQLiteStore.deletedKeyName(table: quote(source.root(of: old).name))
            let highest = try connection.uncachedStatement(
                "SELECT max(coalesce((SELECT max(_pk) FROM \(oldTable(of: old))), 0), "
                    + "coalesce((SELECT CAST(value AS INTEGER) FROM \(metadataTable) WHERE key = ?), 0))")
            highest.bind(0, oldName)
            let key = try highest.step() ? highest.int64(0) : 0
            let write = try connection.uncachedStatement("INSERT OR REPLACE INTO \(metadataTable) (key, value) VALUES (?, ?)")
            write.bind(0, name)
            write.bind(1, String(key))
            try write.run()
        }
    }

    /// The old table holding `entity`'s (a source entity's) rows.
    private func oldTable(of entity: Entity) -> String { quote(Self.oldPrefix + source.root(of: entity).name) }

    /// `_entity IN (…)`: the rows of a source entity and those below it.
    private func sourceRows(of entity: Entity) -> String {
        "_entity IN (\(entity.subentityIndices.map { String($0 + 1) }.joined(separator: ", ")))"
    }

    /// Copies the rows of the hierarchy under destination root `root` from
    /// the old table of the source entities it maps, column by column through
    /// the mapping; first checks what the copy would break (values required
    /// with none to give, objects of an entity that became abstract, extended
    /// attributes of an entity that no longer takes them).
    private func copyRows(of root: Entity) throws(AmberError) -> [String] {
        guard let sourceRoot = mapping.entities[root.index] else { return [] }
        let table = TableMapping(entity: root, model: destination, dialect: SQLiteDialect())
        let members = root.subentityIndices.map { destination.entities[$0] }
        var problems: [String] = [], cases: [String] = [], kept: [String] = []
        let sourceTable = TableMapping(entity: source.root(of: sourceRoot), model: source, dialect: SQLiteDialect())
        let sourceColumns = Set(sourceTable.fetchNames + sourceTable.orderColumns)
        for member in members {
            guard let old = mapping.entities[member.index] else { continue }
            cases.append("WHEN \(old.index + 1) THEN \(member.index + 1)")
            kept.append(String(old.index + 1))
            if member.isAbstract, let pk = try firstRow(of: old, where: "_entity = \(old.index + 1)") {
                problems.append("\(member.name): now abstract, but object \(objectID(member, pk)) is one of its own")
            }
            for relationship in member.relationships where relationship.isToMany && !relationship.isOptional
                && mapping.relationships[member.index][relationship.index] == nil
            {
                guard let pk = try firstRow(of: old, where: "_entity = \(old.index + 1)") else { continue }
                problems.append("\(member.name).\(relationship.name): required, but object \(objectID(member, pk)) would have no members")
            }
            if old.isExtensible, !member.isExtensible,
               let pk = try firstRow(of: old, where: "_entity = \(old.index + 1) AND \(quote(ExtendedValues.columnName)) IS NOT NULL")
            {
                problems.append("\(member.name): no longer extensible, but object \(objectID(member, pk)) has extended attributes")
            }
            // An extended key the new model names would be hidden behind the property (keys are identifiers, safe in SQL text).
            if old.isExtensible, member.isExtensible {
                let named = member.attributes.map(\.name) + member.relationships.map(\.name)
                for name in named where old.existingAttribute(named: name) == nil && !old.relationships.contains(where: { $0.name == name }) {
                    guard let pk = try firstRow(of: old, where: "_entity = \(old.index + 1) AND amber_extended(\(quote(ExtendedValues.columnName)), '\(name)') IS NOT NULL")
                    else { continue }
                    problems.append("\(member.name).\(name): object \(objectID(member, pk)) has an extended attribute of that name, "
                        + "which the new model would hide: cannot be inferred (remove the key first)")
                }
            }
        }
        guard !kept.isEmpty else { return problems }
        var names = ["_pk", "_entity", "_version"], values = ["_pk", "CASE _entity \(cases.joined(separator: " ")) END", "_version"]
        var bindings: [Value] = []
        for name in table.fetchNames + table.orderColumns {
            guard let expression = try columnExpression(name, in: members, sourceColumns: sourceColumns,
                                                        bindings: &bindings, problems: &problems) else { continue }
            names.append(quote(name))
            values.append(expression)
        }
        guard problems.isEmpty else { return problems }
        let from = "FROM \(oldTable(of: sourceRoot)) WHERE _entity IN (\(kept.joined(separator: ", ")))"
        let total = try count("SELECT count(*) \(from)")
        let insert = try connection.uncachedStatement("INSERT INTO \(table.table) (\(names.joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) \(from)")
        for (i, value) in bindings.enumerated() { TableMapping.bind(value, at: Int32(i), in: insert) }
        do throws(AmberError) {
            try insert.run()
        } catch .sqlite(let code, let message) {
            if let failure = reencoder.takeFailure() { return [failure] }
            guard code & 0xff == SQLITE_CONSTRAINT else { throw .sqlite(code: code, message: message) }
            return ["\(root.name): the existing objects break a constraint of the new model: \(message)"]
        }
        try reencoder.finish()
        try report(MigrationProgress(step: "copy \(root.name)", completed: total, total: total))
        return []
    }

    /// The SQL giving destination column `name` of `members`' table from a
    /// source row (nil for a column the copy leaves NULL); records the
    /// problems of values that would be missing.
    private func columnExpression(_ name: String, in members: [Entity], sourceColumns: Set<String>,
                                  bindings: inout [Value], problems: inout [String]) throws(AmberError) -> String?
    {
        if name == ExtendedValues.columnName { return sourceColumns.contains(name) ? quote(name) : nil }
        // Order columns of ordered to-many relationships whose members are these rows (the name alone can
        // recur in other hierarchies, so only relationships into this one count).
        for entity in destination.entities {
            for relationship in entity.relationships where members.contains(where: { $0.index == relationship.destinationIndex }) {
                guard case .inverseForeignKey(let column?) = relationship.storage, column == name,
                      let old = mapping.relationships[entity.index][relationship.index],
                      case .inverseForeignKey(let oldColumn?) = old.storage, sourceColumns.contains(oldColumn) else { continue }
                return quote(oldColumn)
            }
        }
        if name.hasPrefix("_order_") { return nil }
        // The shallowest entity having the column declares it; those below share its mapping.
        guard let member = members.filter({ member in member.columns.contains { $0.name == name } })
                .min(by: { $0.ancestors.count < $1.ancestors.count }),
              let column = member.columns.first(where: { $0.name == name }),
              let old = mapping.entities[member.index]
        else { return nil }
        if let relationship = member.relationships.first(where: { $0.slot == column.slot }) {
            let previous = mapping.relationships[member.index][relationship.index]
            var expression: String?
            if let previous, case .foreignKey = previous.storage { expression = quote(previous.name) }
            if !relationship.isOptional {
                try requireValues(of: member, old: old, expression: expression ?? "NULL", bindings: [],
                                  place: "\(member.name).\(relationship.name)", problems: &problems)
            }
            return expression
        }
        guard let attribute = member.persistentAttributes.first(where: { ($0.codec?.encodedSlot ?? $0.slot) == column.slot }) else { return nil }
        // A sub-entity's column holds nothing in other entities' rows (a default there could break a constraint).
        let scope = { (expression: String?) in
            member.parentIndex == nil ? expression : expression.map { "CASE WHEN \(self.sourceRows(of: old)) THEN \($0) END" }
        }
        let previous = mapping.attributes[member.index][attribute.slot]
        // Checked as stored (re-encoding keeps NULL as NULL), copied through the new chain.
        var checked = previous.map { quote($0.name) }, expression = checked, own: [Value] = []
        if let index = reencoder.columns.firstIndex(where: { $0.entity === member && $0.encoder.codec?.encodedSlot == column.slot }) {
            expression = expression.map { "amber_reencode(\($0), _pk, \(index))" }
        }
        // Defaults go to the objects an added attribute is new to, and to those without a value of one now required.
        if attribute.derivation == nil, !attribute.defaultValue.isNull, previous == nil || (!attribute.isOptional && previous?.isOptional == true) {
            let stored: Value
            do throws(TransformerFailure) {
                stored = try attribute.codec?.encode(attribute.defaultValue) ?? attribute.defaultValue
            } catch {
                problems.append("\(attribute): its default cannot be encoded: \(error.error(at: attribute.description))")
                return expression
            }
            own = [stored]
            expression = expression.map { "COALESCE(\($0), ?)" } ?? "?"
            checked = checked.map { "COALESCE(\($0), ?)" } ?? "?"
        }
        if !attribute.isOptional && attribute.derivation == nil {
            try requireValues(of: member, old: old, expression: checked ?? "NULL", bindings: own,
                              place: attribute.description, problems: &problems)
        }
        bindings += own
        return scope(expression)
    }

    /// Records a problem when some object of `member` (source entity `old`)
    /// would have no value in a required column.
    private func requireValues(of member: Entity, old: Entity, expression: String, bindings: [Value], place: String,
                               problems: inout [String]) throws(AmberError)
    {
        let check = try connection.uncachedStatement("SELECT _pk FROM \(oldTable(of: old)) WHERE \(sourceRows(of: old)) AND (\(expression)) IS NULL LIMIT 1")
        for (i, value) in bindings.enumerated() { TableMapping.bind(value, at: Int32(i), in: check) }
        if try check.step() {
            problems.append("\(place): required, but object \(objectID(member, check.int64(0))) would have no value (give the attribute a default)")
        }
    }

    /// Fills every join table of the destination model from where the source
    /// model kept those links: a join table, or a to-one's column.
    private func copyJoinTables() throws(AmberError) {
        var done: Set<String> = []
        for entity in destination.entities {
            // From the entity that declares the relationship, whose source rows include those of the entities below it.
            let inherited = Set(destination.parent(of: entity)?.relationships.map(\.name) ?? [])
            for relationship in entity.relationships where !inherited.contains(relationship.name) {
                guard case .joinTable(let table, "source", let target, let order) = relationship.storage, !done.contains(table) else { continue }
                done.insert(table)
                let inverse = destination.inverse(of: relationship)
                var inverseOrder: String?
                if let inverse, case .joinTable(_, _, _, let column) = inverse.storage { inverseOrder = column }
                var select: String?
                if let old = mapping.relationships[entity.index][relationship.index] {
                    select = links(of: old, orders: (order, inverseOrder), reversed: false)
                } else if let inverse, let old = mapping.relationships[inverse.entityIndex][inverse.index] {
                    select = links(of: old, orders: (inverseOrder, order), reversed: true)
                }
                guard let select else { continue }
                let columns = ["source", target] + [order, inverseOrder].compactMap { $0 }
                try connection.execute("INSERT INTO \(quote(table)) (\(columns.joined(separator: ", "))) \(select)")
                // Links to objects the migration removed (their entity went) go with them.
                let ends = [("source", entity), (target, destination.destination(of: relationship))].map { column, end in
                    "\(column) NOT IN (SELECT _pk FROM \(quote(destination.root(of: end).name)))"
                }
                try connection.execute("DELETE FROM \(quote(table)) WHERE \(ends.joined(separator: " OR "))")
            }
        }
    }

    /// A SELECT of (this end, far end, this end's position, far end's
    /// position) pairs of source relationship `old`, in its old storage;
    /// `reversed` swaps the ends (the links were recorded from the other side).
    private func links(of old: Relationship, orders: (String?, String?), reversed: Bool) -> String? {
        let mine: String, theirs: String, from: String
        var positions: (String?, String?) = (nil, nil)
        switch old.storage {
        case .joinTable(let table, let source, let target, let order):
            (mine, theirs, from) = (source, target, quote(Self.oldPrefix + table))
            positions.0 = order
            if let inverse = self.source.inverse(of: old), case .joinTable(_, _, _, let inverseOrder) = inverse.storage { positions.1 = inverseOrder }
        case .foreignKey:
            let entity = source.entities[old.entityIndex]
            (mine, theirs, from) = ("_pk", quote(old.name), "\(oldTable(of: entity)) WHERE \(quote(old.name)) IS NOT NULL AND \(sourceRows(of: entity))")
            // The far side's positions, if it was an ordered to-many, are in these rows.
            if let inverse = source.inverse(of: old), case .inverseForeignKey(let order?) = inverse.storage { positions.1 = quote(order) }
        case .inverseForeignKey(let order):
            guard let inverse = source.inverse(of: old) else { return nil }
            let entity = source.entities[inverse.entityIndex]
            (mine, theirs, from) = (quote(inverse.name), "_pk", "\(oldTable(of: entity)) WHERE \(quote(inverse.name)) IS NOT NULL AND \(sourceRows(of: entity))")
            positions.0 = order.map(quote)
        }
        // A position is kept only where both the old and the new side are ordered; the caller's columns
        // are the naming side's position, then the other's.
        var pairs = [(orders.0, positions.0), (orders.1, positions.1)]
        if reversed { pairs.reverse() }
        let kept = pairs.compactMap { new, old -> String? in
            guard new != nil else { return nil }
            return old ?? "NULL"
        }
        let ends = reversed ? [theirs, mine] : [mine, theirs]
        return "SELECT \((ends + kept).joined(separator: ", ")) FROM \(from)"
    }

    /// Computes every derived attribute for every row (links and sources may have
    /// moved or gone), except the `now()` ones that keep their time of writing.
    private func computeDerivedValues() throws(AmberError) {
        for (entity, attribute, derivation) in destination.declaredDerivations {
            let old = mapping.attributes[entity.index][attribute.slot]
            if case .now = derivation.form, old?.derivation?.expression == derivation.expression { continue }
            let mapping = TableMapping(entity: entity, model: destination, dialect: SQLiteDialect())
            let value = try PredicateCompiler(entity: entity, model: destination, dialect: SQLiteDialect()).derivedValue(derivation, as: attribute.type)
            try connection.execute("UPDATE \(mapping.table) SET \(quote(attribute.name)) = \(value)"
                + (mapping.entityFilter.map { " WHERE \($0)" } ?? ""))
            try report(MigrationProgress(step: "compute \(attribute)", completed: 1, total: 1))
        }
    }

    /// Links into rows that are no longer there (their entity was removed).
    private func danglingLinks() throws(AmberError) -> [String] {
        let check = try connection.uncachedStatement("PRAGMA foreign_key_check")
        var problems: [String] = []
        while try check.step(), problems.count < 20 {
            problems.append("\(try check.string(0)) row \(check.int64(1)): links to a \(try check.string(2)) object the migration would remove")
        }
        return problems
    }

    /// Records the new model, its hash, and the history of the store's versions
    /// (each replaced version's hash, model, when and by which version).
    private func record(metadataTable: String) throws(AmberError) {
        let history = try strings("SELECT value FROM \(metadataTable) WHERE key = 'model_history'").first ?? "[]"
        var versions = (try? JSONSerialization.jsonObject(with: Data(history.utf8))) as? [[String: String]] ?? []
        versions.append(["hash": storedHash, "replaced": ISO8601DateFormatter().string(from: Date()), "by": destination.versionHash,
                         "model": source.description.jsonText()])
        let text = (try? JSONSerialization.data(withJSONObject: versions, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
        let update = try connection.uncachedStatement("INSERT OR REPLACE INTO \(metadataTable) (key, value) VALUES (?, ?)")
        for (key, value) in [("model", destination.description.jsonText()), ("model_hash", destination.versionHash), ("model_history", text)] {
            update.bind(0, key)
            update.bind(1, value)
            try update.run()
        }
    }

    // MARK: Helpers

    /// Tells the progress handler; an error it throws cancels the migration.
    private func report(_ step: MigrationProgress) throws(AmberError) { try MigrationProgress.report(step, to: progress) }

    private func objectID(_ entity: Entity, _ pk: Int64) -> ObjectID {
        ObjectID(entityName: entity.name, store: storeIdentifier, key: .permanent(pk))
    }

    /// The key of the first row of source entity `entity`'s table matching `condition`.
    private func firstRow(of entity: Entity, where condition: String) throws(AmberError) -> Int64? {
        let query = try connection.uncachedStatement("SELECT _pk FROM \(oldTable(of: entity)) WHERE \(condition) ORDER BY _pk LIMIT 1")
        return try query.step() ? query.int64(0) : nil
    }

    private func count(_ sql: String) throws(AmberError) -> Int {
        let query = try connection.uncachedStatement(sql)
        return try query.step() ? Int(query.int64(0)) : 0
    }

    private func strings(_ sql: String) throws(AmberError) -> [String] {
        let query = try connection.uncachedStatement(sql)
        var result: [String] = []
        while try query.step() { result.append(try query.string(0)) }
        return result
    }
}

/// The re-encoding of transformed columns as the copy reads them: SQL
/// function `amber_reencode(value, key, column)` decodes a stored value
/// with the source chain, checks it against the destination's value class,
/// and encodes it with the destination chain. The first value that cannot be
/// moved fails the statement, and ``takeFailure()`` names its object.
final class Reencoder {
    struct Column {
        let entity: Entity
        let encoder: Attribute
        let oldEncoder: Attribute
    }

    let columns: [Column]
    private let store: UUID
    private let progress: (@Sendable (MigrationProgress) throws -> Void)?
    private var failure: String?
    /// Values moved per column, for progress.
    private var moved: [Int]

    init(_ columns: [Column], store: UUID, progress: (@Sendable (MigrationProgress) throws -> Void)?) {
        self.columns = columns
        self.store = store
        self.progress = progress
        self.moved = Array(repeating: 0, count: columns.count)
    }

    /// The stored value for `stored` of row `key` in column `index`, or nil after recording why not.
    func move(_ stored: Value, key: Int64, column index: Int) -> Value? {
        guard columns.indices.contains(index) else {
            failure = "amber_reencode was called for column \(index), which this migration does not re-encode"
            return nil
        }
        let column = columns[index]
        func place() -> String { "\(column.encoder) of \(ObjectID(entityName: column.entity.name, store: store, key: .permanent(key)))" }
        do throws(AmberError) {
            guard let codec = column.encoder.codec, let oldCodec = column.oldEncoder.codec else { return stored }
            let value: Value
            do throws(TransformerFailure) { value = try oldCodec.decode(stored) } catch { throw error.error(at: place() + " (decoding with the old chain)") }
            let checked = try column.encoder.check(value)
            let encoded: Value
            do throws(TransformerFailure) { encoded = try codec.encode(checked) } catch { throw error.error(at: place() + " (encoding with the new chain)") }
            moved[index] += 1
            if moved[index] % 10_000 == 0 { try report(index) }
            return encoded
        } catch .migrationFailed(_, let problems) {
            failure = problems.first
        } catch {
            failure = "\(place()): cannot be moved to the new chain: \(error)"
        }
        return nil
    }

    /// Reports the columns' final counts (once their table is copied).
    func finish() throws(AmberError) {
        for index in columns.indices where moved[index] % 10_000 != 0 || moved[index] == 0 { try report(index) }
    }

    private func report(_ index: Int) throws(AmberError) {
        try MigrationProgress.report(MigrationProgress(step: "re-encode \(columns[index].entity.name).\(columns[index].encoder.name)",
                                                       completed: moved[index], total: moved[index]), to: progress)
    }

    /// Why the last statement failed, if a value could not be moved; cleared.
    func takeFailure() -> String? {
        defer { failure = nil }
        return failure
    }
}
