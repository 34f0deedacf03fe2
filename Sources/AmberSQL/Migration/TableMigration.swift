import AmberModel
import AmberStore
import AmberTransformers
import AmberValues
import Foundation

/// What a SQL store supplies to carry out a migration: its transaction,
/// where it puts the old tables, and how it makes the new ones.
package protocol MigrationDriver: SQLStatements {
    /// The store's metadata table, quoted.
    var metadataTable: String { get }
    /// Moves the source model's tables (by name) out of the way, so the
    /// destination's can take their names.
    func moveAside(_ tables: [String]) throws(AmberError)
    /// The SQL name of old table `name` once moved aside.
    func oldTable(_ name: String) -> String
    /// Makes the destination model's tables, empty.
    func createTables(_ model: Model) throws(AmberError)
    /// What the new tables need once they hold their rows (PostgreSQL's foreign keys and triggers).
    func finishTables(_ model: Model) throws(AmberError)
    /// Drops the old tables moved aside.
    func dropOld(_ tables: [String]) throws(AmberError)
    /// SQL re-encoding stored `expression` of the current row for
    /// ``Reencoder`` column `column` as rows are copied, or nil when the
    /// store re-encodes after the copy (``reencode(_:rows:into:)``).
    func reencoding(_ expression: String, column: Int) -> String?
    /// Re-encodes the values `rows` selects (key, old stored value) with
    /// `reencoder`'s column `column`, writing each into `into` (`UPDATE … SET col = ? WHERE _pk = ?`).
    /// Returns the problem of the first value that cannot be moved.
    func reencode(_ column: Int, rows: SQLFragment, into update: String, reencoder: Reencoder) throws(AmberError) -> String?
    /// Sets metadata `key` to `value`.
    func setMetadata(_ key: String, _ value: String) throws(AmberError)
    /// Whether `error` is a constraint of the new tables that the copied rows break.
    func isConstraintViolation(_ error: AmberError) -> Bool
}

/// Carries out a ``ModelMapping`` on a SQL store inside the caller's
/// transaction, as every SQL store does it: the old tables moved aside, the
/// destination model's tables made, every row and link copied through the
/// mapping (renamed columns, defaults, widened integers, entity numbers),
/// transformed values decoded with the old chain and encoded with the new
/// one, derived values computed, the old tables dropped, links checked, and
/// the model recorded. The caller rolls everything back if it fails.
package struct TableMigration {
    package let mapping: ModelMapping
    let driver: any MigrationDriver
    let dialect: any SQLDialect
    let storeIdentifier: UUID
    let progress: (@Sendable (MigrationProgress) throws -> Void)?
    /// Moves transformed values to their new chain as rows are copied.
    package let reencoder: Reencoder
    /// The version hash the store's metadata records for the source model.
    let storedHash: String
    /// Whether the caller consented to removing stored data (``ModelMapping/removals``).
    let allowsDataRemoval: Bool

    package init(mapping: ModelMapping, driver: any MigrationDriver, dialect: any SQLDialect, storeIdentifier: UUID, storedHash: String,
                 allowsDataRemoval: Bool = false, progress: (@Sendable (MigrationProgress) throws -> Void)?)
    {
        (self.mapping, self.driver, self.dialect, self.storeIdentifier) = (mapping, driver, dialect, storeIdentifier)
        (self.storedHash, self.allowsDataRemoval, self.progress) = (storedHash, allowsDataRemoval, progress)
        reencoder = Reencoder(mapping.reencoded.map { entity, encoder, oldEncoder in
            Reencoder.Column(entity: entity, encoder: encoder, oldEncoder: oldEncoder)
        }, store: storeIdentifier, progress: progress)
    }

    private var source: Model { mapping.source }
    private var destination: Model { mapping.destination }

    /// Whether the store still needs this migration, read inside the
    /// caller's transaction: false when another connection migrated it while
    /// this one waited for the write lock.
    ///
    /// - Throws: ``/AmberValues/AmberError/migrationFailed(store:problems:)`` when
    ///   the store's model changed to a third one meanwhile.
    package func isNeeded() throws(AmberError) -> Bool {
        let current = try driver.texts(SQLFragment(sql: "SELECT value FROM \(driver.metadataTable) WHERE key = 'model_hash'")).first
        if current == destination.versionHash { return false }
        guard current == storedHash else {
            throw AmberError.migrationFailed(store: "", problems: ["the store's model changed to \(current ?? "(none)") while waiting to migrate it"])
        }
        return true
    }

    /// Runs the migration's steps; returns the problems that stop it, or
    /// throws ``/AmberValues/AmberError/migrationFailed(store:problems:)`` for
    /// a statement the objects fail (the caller rolls back either way).
    /// (`consentChecked`: the caller already asked ``consentProblems()``.)
    package func run(consentChecked: Bool = false) throws(AmberError) -> [String] {
        let refused = consentChecked ? [] : try consentProblems()
        guard refused.isEmpty else { return refused }
        var problems: [String] = []
        try driver.moveAside(sourceTables)
        try driver.createTables(destination)
        for root in destination.entities where root.parentIndex == nil {
            problems += try copyRows(of: root)
        }
        guard problems.isEmpty else { return problems }
        try copyJoinTables()
        try computeDerivedValues()
        try carryDeletedKeys()
        try driver.dropOld(sourceTables)
        problems += try danglingLinks()
        guard problems.isEmpty else { return problems }
        try driver.finishTables(destination)
        try record()
        return []
    }

    /// What the refusal of a migration that removes data says to do.
    package static let consent = "a migration that removes stored data needs the caller's consent: Store.Options.allowsDataRemoval "
        + "(C: amber_store_options.allow_data_removal; Python: allow_data_removal=True; CLI: --allow-data-removal); "
        + "a file store's backup, unless turned off, keeps what it removes"

    /// A line of a migration plan for `removed`, a line of ``removedData()``.
    package static func plannedRemoval(_ removed: String) -> String {
        "removes stored data: \(removed) (needs consent: data removal allowed)"
    }

    /// Why the migration may not run without the caller's consent (the data
    /// it would remove, and how to consent); empty when it removes nothing
    /// stored, or the caller consented.
    package func consentProblems() throws(AmberError) -> [String] {
        guard !allowsDataRemoval else { return [] }
        let removed = try removedData()
        return removed.isEmpty ? [] : removed.map { "\($0) would be removed" } + [Self.consent]
    }

    /// The stored data the migration removes, one line per removal that
    /// removes something (`Book.shelf: 120 values`), counted in the source
    /// tables (before they are moved aside).
    package func removedData() throws(AmberError) -> [String] {
        var lines: [String] = [], joinTables: Set<String> = []
        func count(_ sql: String) throws(AmberError) -> Int64 { try driver.integer(sql) }
        func plural(_ count: Int64, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }
        for removal in mapping.removals {
            switch removal {
            case .objects(let entity):
                let found = try count("SELECT count(*) FROM \(quote(source.root(of: entity).name)) WHERE _entity = \(entity.index + 1)")
                if found > 0 { lines.append("entity \(entity.name): \(plural(found, "object"))") }
            case .values(let entity, let attribute), .replaced(let entity, let attribute):
                guard let column = entity.columns.first(where: { $0.slot == (attribute.codec?.encodedSlot ?? attribute.slot) }) else { continue }
                let found = try count("SELECT count(*) FROM \(quote(source.root(of: entity).name)) WHERE \(quote(column.name)) IS NOT NULL "
                    + "AND \(sourceRows(of: entity))")
                let replaced = if case .replaced = removal { " (computed instead)" } else { "" }
                if found > 0 { lines.append("\(attribute): \(plural(found, "value"))\(replaced)") }
            case .links(let entity, let relationship):
                let found: Int64
                switch relationship.storage {
                case .foreignKey:
                    found = try count("SELECT count(*) FROM \(quote(source.root(of: entity).name)) "
                        + "WHERE \(quote(relationship.columnName)) IS NOT NULL AND \(sourceRows(of: entity))")
                case .joinTable(let table, _, _, _):
                    guard joinTables.insert(table).inserted else { continue }
                    found = try count("SELECT count(*) FROM \(quote(table))")
                case .inverseForeignKey:
                    continue  // its links are the to-one's column, counted with the inverse
                }
                if found > 0 { lines.append("\(relationship): \(plural(found, "link"))") }
            }
        }
        return lines
    }

    // MARK: Steps

    /// The tables the source model keeps (its roots' and its join tables);
    /// other tables in the store (a program's own) are left alone.
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
    private func carryDeletedKeys() throws(AmberError) {
        for root in destination.entities where root.parentIndex == nil {
            guard let old = mapping.entities[root.index] else { continue }
            let oldName = TableMapping.deletedKeyName(table: quote(source.root(of: old).name))
            let kept = try driver.texts(SQLFragment(sql: "SELECT value FROM \(driver.metadataTable) WHERE key = ?", bindings: [.string(oldName)]))
            let highest = max(try driver.integer("SELECT coalesce(max(_pk), 0) FROM \(oldTable(of: old))"), kept.first.flatMap { Int64($0) } ?? 0)
            try driver.setMetadata(TableMapping.deletedKeyName(table: quote(root.name)), String(highest))
        }
    }

    /// The old table holding `entity`'s (a source entity's) rows.
    private func oldTable(of entity: Entity) -> String { driver.oldTable(source.root(of: entity).name) }

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
        let table = TableMapping(entity: root, model: destination, dialect: dialect)
        let members = root.subentityIndices.map { destination.entities[$0] }
        var problems: [String] = [], cases: [String] = [], kept: [String] = []
        let sourceTable = TableMapping(entity: source.root(of: sourceRoot), model: source, dialect: dialect)
        let sourceColumns = Set(sourceTable.fetchNames + sourceTable.orderColumns)
        for member in members {
            guard let old = mapping.entities[member.index] else { continue }
            cases.append("WHEN \(old.index + 1) THEN \(member.index + 1)")
            kept.append(String(old.index + 1))
            problems += try problemsCopying(member, from: old)
        }
        guard !kept.isEmpty else { return problems }
        var names = ["_pk", "_entity", "_version"], values = ["_pk", "CASE _entity \(cases.joined(separator: " ")) END", "_version"]
        var bindings: [Value] = [], afterwards: [(column: Int, old: String, new: String, rows: String)] = []
        let types = Dictionary(zip(table.fetchNames, table.types), uniquingKeysWith: { first, _ in first })
        for name in table.fetchNames + table.orderColumns {
            guard let expression = try columnExpression(name, type: types[name] ?? .integer64, in: members, sourceColumns: sourceColumns,
                                                        bindings: &bindings, problems: &problems, afterwards: &afterwards) else { continue }
            names.append(quote(name))
            values.append(expression)
        }
        guard problems.isEmpty else { return problems }
        let from = "FROM \(oldTable(of: sourceRoot)) WHERE _entity IN (\(kept.joined(separator: ", ")))"
        let total = Int(try driver.integer("SELECT count(*) \(from)"))
        // The total from the start, so a progress bar knows its length before the copy.
        try report(MigrationProgress(step: "copy \(root.name)", completed: 0, total: total))
        do throws(AmberError) {
            try driver.run(SQLFragment(sql: "INSERT INTO \(table.table) (\(names.joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) \(from)",
                                       bindings: bindings))
        } catch {
            // A failed statement ends the migration at once (PostgreSQL aborts the transaction with it).
            if let failure = reencoder.takeFailure() { throw .migrationFailed(store: "", problems: [failure]) }
            guard driver.isConstraintViolation(error) else { throw error }
            throw .migrationFailed(store: "", problems: ["\(root.name): the existing objects break a constraint of the new model: \(error)"])
        }
        for step in afterwards {
            let rows = SQLFragment(sql: "SELECT _pk, \(step.old) FROM \(oldTable(of: sourceRoot)) WHERE \(step.old) IS NOT NULL AND \(step.rows) ORDER BY _pk")
            if let failure = try driver.reencode(step.column, rows: rows, into: "UPDATE \(table.table) SET \(step.new) = ? WHERE _pk = ?",
                                                 reencoder: reencoder) {
                throw .migrationFailed(store: "", problems: [failure])
            }
        }
        try reencoder.finish()
        for member in members {
            guard let old = mapping.entities[member.index] else { continue }
            try promote(promotedAttributes(of: member, from: old), of: member, in: table, columnTypes: types)
        }
        try report(MigrationProgress(step: "copy \(root.name)", completed: total, total: total))
        return []
    }

    // MARK: Extended attributes that become modelled

    /// The stored attributes destination `member` adds that an extended
    /// attribute of source entity `old` may already hold values for: their
    /// values move into the attribute's column.
    private func promotedAttributes(of member: Entity, from old: Entity) -> [Attribute] {
        guard old.isExtensible, member.isExtensible else { return [] }
        return member.persistentAttributes.filter { attribute in
            mapping.attributes[member.index][attribute.slot] == nil && attribute.derivation == nil
                && old.existingAttribute(named: attribute.name) == nil && !old.relationships.contains { $0.name == attribute.name }
        }
    }

    /// The rows of `entity` in `table` with an extended attribute named like
    /// `attribute`, in key order: each key and the row's extended attributes (stored JSON).
    private func extendedRows(_ attribute: Attribute, in table: String, entity: Entity) throws(AmberError) -> [(key: Int64, text: String)] {
        let extra = quote(ExtendedValues.columnName)
        let rows = "FROM \(table) WHERE _entity = \(entity.index + 1) AND \(dialect.extendedValue(extra, name: attribute.name)) IS NOT NULL ORDER BY _pk"
        let keys = try driver.integers(SQLFragment(sql: "SELECT _pk \(rows)"), width: 1).compactMap(\.first)
        let texts = try driver.texts(SQLFragment(sql: "SELECT \(extra) \(rows)"))
        return Array(zip(keys, texts)).map { (key: $0.0, text: $0.1) }
    }

    /// Extended value `value` as `attribute` stores it: checked as a set
    /// checks it, encoded through its transformer if it has one.
    private func promoted(_ value: Value, to attribute: Attribute, place: String) throws(AmberError) -> Value {
        do throws(AmberError) {
            let checked = try attribute.check(value)
            do throws(TransformerFailure) {
                return try attribute.codec?.encode(checked) ?? checked
            } catch {
                throw error.error(at: place)
            }
        } catch {
            throw .migrationFailed(store: "", problems: ["\(place): its extended value \(value) cannot become the attribute's (\(error)); "
                + "change or remove it first"])
        }
    }

    /// A problem per extended value of an object of source entity `old`
    /// that the attribute of destination `member` taking it cannot hold (at most 20).
    private func promotionProblems(_ attributes: [Attribute], of member: Entity, from old: Entity) throws(AmberError) -> [String] {
        var problems: [String] = []
        for attribute in attributes {
            for row in try extendedRows(attribute, in: oldTable(of: old), entity: old) where problems.count < 20 {
                let place = "\(attribute) of \(objectID(member, row.key))"
                do throws(AmberError) {
                    guard let value = try ExtendedValues.decode(.string(row.text), place: place)[attribute.name] else { continue }
                    _ = try promoted(value, to: attribute, place: place)
                } catch .migrationFailed(_, let found) {
                    problems += found
                } catch {
                    problems.append("\(place): its extended attributes cannot be read (\(error)); mend or remove them first")
                }
            }
        }
        return problems
    }

    /// Moves each object of `member` (in its new `table`) that has an
    /// extended attribute named like one of `attributes` into that
    /// attribute's column and drops the key from the object's extended
    /// attributes (checked before the copy: ``promotionProblems(_:of:from:)``).
    private func promote(_ attributes: [Attribute], of member: Entity, in table: TableMapping, columnTypes: [String: AttributeType])
        throws(AmberError)
    {
        let extra = quote(ExtendedValues.columnName)
        for attribute in attributes {
            guard let column = member.columns.first(where: { $0.slot == (attribute.codec?.encodedSlot ?? attribute.slot) }) else { continue }
            let parameter = dialect.typedParameter(columnType: dialect.columnType(columnTypes[column.name] ?? attribute.type))
            let update = "UPDATE \(table.table) SET \(quote(column.name)) = \(parameter), \(extra) = ? WHERE _pk = ?"
            for row in try extendedRows(attribute, in: table.table, entity: member) {
                let place = "\(attribute) of \(objectID(member, row.key))"
                var values = try ExtendedValues.decode(.string(row.text), place: place)
                guard let value = values.removeValue(forKey: attribute.name) else { continue }
                let stored = try promoted(value, to: attribute, place: place)
                do throws(AmberError) {
                    try driver.run(SQLFragment(sql: update, bindings: [stored, ExtendedValues.encode(values), .int(row.key)]))
                } catch {
                    guard driver.isConstraintViolation(error) else { throw error }
                    throw .migrationFailed(store: "", problems: ["\(place): its extended value breaks a constraint of the new model: \(error)"])
                }
            }
        }
    }

    /// A line of a migration plan per attribute that takes extended
    /// values: how many objects' values it takes, counted in the source tables.
    package func promotedValues() throws(AmberError) -> [String] {
        var lines: [String] = []
        let extra = quote(ExtendedValues.columnName)
        for member in destination.entities {
            guard let old = mapping.entities[member.index] else { continue }
            for attribute in promotedAttributes(of: member, from: old) {
                let found = try driver.integer("SELECT count(*) FROM \(quote(source.root(of: old).name)) WHERE _entity = \(old.index + 1) "
                    + "AND \(dialect.extendedValue(extra, name: attribute.name)) IS NOT NULL")
                if found > 0 {
                    lines.append("\(attribute): takes the extended attribute \(attribute.name) of \(found) object\(found == 1 ? "" : "s") (each value checked)")
                }
            }
        }
        return lines
    }

    /// What copying the objects of source entity `old` into destination
    /// entity `member` would break.
    private func problemsCopying(_ member: Entity, from old: Entity) throws(AmberError) -> [String] {
        var problems: [String] = []
        if member.isAbstract, let pk = try firstRow(of: old, where: "_entity = \(old.index + 1)") {
            problems.append("\(member.name): now abstract, but object \(objectID(member, pk)) is one of its own")
        }
        for relationship in member.relationships where relationship.isToMany && !relationship.isOptional && (relationship.minCount ?? 0) > 0
            && mapping.relationships[member.index][relationship.index] == nil
        {
            guard let pk = try firstRow(of: old, where: "_entity = \(old.index + 1)") else { continue }
            problems.append("\(member.name).\(relationship.name): needs at least \(relationship.minCount ?? 0), but object \(objectID(member, pk)) would have no members")
        }
        let extra = quote(ExtendedValues.columnName)
        if old.isExtensible, !member.isExtensible, let pk = try firstRow(of: old, where: "_entity = \(old.index + 1) AND \(extra) IS NOT NULL") {
            problems.append("\(member.name): no longer extensible, but object \(objectID(member, pk)) has extended attributes")
        }
        // An extended key the new model names would be hidden behind the property (keys are identifiers, safe in SQL text).
        if old.isExtensible, member.isExtensible {
            // A new stored attribute takes the values instead (see promote); other properties would hide them.
            let promoted = Set(promotedAttributes(of: member, from: old).map(\.name))
            let named = member.attributes.map(\.name) + member.relationships.map(\.name)
            problems += try promotionProblems(promotedAttributes(of: member, from: old), of: member, from: old)
            for name in named where old.existingAttribute(named: name) == nil && !old.relationships.contains(where: { $0.name == name })
                && !promoted.contains(name)
            {
                guard let pk = try firstRow(of: old, where: "_entity = \(old.index + 1) AND \(dialect.extendedValue(extra, name: name)) IS NOT NULL")
                else { continue }
                problems.append("\(member.name).\(name): object \(objectID(member, pk)) has an extended attribute of that name, "
                    + "which the new model would hide: cannot be inferred (remove the key first)")
            }
        }
        return problems
    }

    /// The SQL giving destination column `name` of `members`' table from a
    /// source row (nil for a column the copy leaves NULL); records the
    /// problems of values that would be missing, and the columns the store
    /// re-encodes after the copy.
    private func columnExpression(_ name: String, type: AttributeType, in members: [Entity], sourceColumns: Set<String>, bindings: inout [Value],
                                  problems: inout [String], afterwards: inout [(column: Int, old: String, new: String, rows: String)])
        throws(AmberError) -> String?
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
            if let previous, case .foreignKey = previous.storage { expression = quote(previous.columnName) }
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
        var checked = previous.map { quote($0.columnName) }, expression = checked, own: [Value] = []
        if let index = reencoder.columns.firstIndex(where: { $0.entity === member && $0.encoder.codec?.encodedSlot == column.slot }),
           let stored = expression
        {
            if let reencoding = driver.reencoding(stored, column: index) {
                expression = reencoding
            } else {
                // Its stored type may change with the chain: the copy leaves it to its default, the store then moves each value.
                expression = nil
                afterwards.append((index, stored, quote(name), sourceRows(of: old)))
            }
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
            let parameter = dialect.typedParameter(columnType: dialect.columnType(type))
            expression = expression.map { "COALESCE(\($0), \(parameter))" } ?? parameter
            checked = checked.map { "COALESCE(\($0), \(parameter))" } ?? parameter
        }
        if !attribute.isOptional && attribute.derivation == nil {
            // An extended value of the same name becomes the attribute's (see promote): a value too (a default is one already).
            if checked == nil, previous == nil, promotedAttributes(of: member, from: old).contains(where: { $0 === attribute }) {
                checked = dialect.extendedValue(quote(ExtendedValues.columnName), name: attribute.name)
            }
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
        let found = try driver.integers(SQLFragment(
            sql: "SELECT _pk FROM \(oldTable(of: old)) WHERE \(sourceRows(of: old)) AND (\(expression)) IS NULL ORDER BY _pk LIMIT 1",
            bindings: bindings), width: 1)
        if let pk = found.first?.first {
            problems.append("\(place): required, but object \(objectID(member, pk)) would have no value (give the attribute a default)")
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
                try driver.run(SQLFragment(sql: "INSERT INTO \(quote(table)) (\(columns.joined(separator: ", "))) \(select)"))
                // Links to objects the migration removed (their entity went) go with them.
                let ends = [("source", entity), (target, destination.destination(of: relationship))].map { column, end in
                    "\(column) NOT IN (SELECT _pk FROM \(quote(destination.root(of: end).name)))"
                }
                try driver.run(SQLFragment(sql: "DELETE FROM \(quote(table)) WHERE \(ends.joined(separator: " OR "))"))
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
            (mine, theirs, from) = (source, target, driver.oldTable(table))
            positions.0 = order
            if let inverse = self.source.inverse(of: old), case .joinTable(_, _, _, let inverseOrder) = inverse.storage { positions.1 = inverseOrder }
        case .foreignKey:
            let entity = source.entities[old.entityIndex]
            (mine, theirs, from) = ("_pk", quote(old.columnName), "\(oldTable(of: entity)) WHERE \(quote(old.columnName)) IS NOT NULL AND \(sourceRows(of: entity))")
            // The far side's positions, if it was an ordered to-many, are in these rows.
            if let inverse = source.inverse(of: old), case .inverseForeignKey(let order?) = inverse.storage { positions.1 = quote(order) }
        case .inverseForeignKey(let order):
            guard let inverse = source.inverse(of: old) else { return nil }
            let entity = source.entities[inverse.entityIndex]
            (mine, theirs, from) = (quote(inverse.columnName), "_pk", "\(oldTable(of: entity)) WHERE \(quote(inverse.columnName)) IS NOT NULL AND \(sourceRows(of: entity))")
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
            let mapping = TableMapping(entity: entity, model: destination, dialect: dialect)
            let value = try PredicateCompiler(entity: entity, model: destination, dialect: dialect).derivedValue(derivation, as: attribute.type)
            try driver.run(SQLFragment(sql: "UPDATE \(mapping.table) SET \(quote(attribute.columnName)) = \(value)"
                + (mapping.entityFilter.map { " WHERE \($0)" } ?? "")))
            try report(MigrationProgress(step: "compute \(attribute)", completed: 1, total: 1))
        }
    }

    /// Links into rows that are no longer there (their entity was removed):
    /// at most 20, each naming the row and the entity it points at.
    private func danglingLinks() throws(AmberError) -> [String] {
        var problems: [String] = []
        for entity in destination.entities where problems.count < 20 {
            let table = quote(destination.root(of: entity).name)
            let inherited = Set(destination.parent(of: entity)?.relationships.map(\.name) ?? [])
            for relationship in entity.relationships where relationship.slot != nil && !inherited.contains(relationship.name) {
                let target = destination.root(of: destination.destination(of: relationship)).name, column = quote(relationship.columnName)
                let rows = try driver.integers(SQLFragment(sql: "SELECT _pk FROM \(table) WHERE \(column) IS NOT NULL "
                    + "AND \(column) NOT IN (SELECT _pk FROM \(quote(target))) ORDER BY _pk LIMIT 20"), width: 1)
                problems += rows.prefix(20 - problems.count).map { "\(destination.root(of: entity).name) row \($0[0]): links to a \(target) object the migration would remove" }
            }
        }
        return problems
    }

    /// Records the new model, its hash, and the history of the store's versions
    /// (each replaced version's hash, model, when and by which version).
    private func record() throws(AmberError) {
        let history = try driver.texts(SQLFragment(sql: "SELECT value FROM \(driver.metadataTable) WHERE key = 'model_history'")).first ?? "[]"
        var versions = (try? JSONSerialization.jsonObject(with: Data(history.utf8))) as? [[String: String]] ?? []
        versions.append(["hash": storedHash, "replaced": ISO8601DateFormatter().string(from: Date()), "by": destination.versionHash,
                         "model": source.description.jsonText()])
        let text = (try? JSONSerialization.data(withJSONObject: versions, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
        for (key, value) in [("model", destination.description.jsonText()), ("model_hash", destination.versionHash), ("model_history", text)] {
            try driver.setMetadata(key, value)
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
        try driver.integers(SQLFragment(sql: "SELECT _pk FROM \(oldTable(of: entity)) WHERE \(condition) ORDER BY _pk LIMIT 1"), width: 1)
            .first?.first
    }
}
