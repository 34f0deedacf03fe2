import AmberModel
import AmberStore
import AmberTransformers
import AmberValues
import Foundation

/// How one entity lives in a SQL database: its table, columns and SQL
/// statements, in the words of a ``SQLDialect``. Every SQL store shares this
/// layout; binding values and reading columns is each store's own
/// (the SQLite store's `ColumnValues.swift`).
///
/// Layout: table `"Entity"` with bookkeeping columns `_pk` (INTEGER PRIMARY
/// KEY), `_entity` (the entity's number in the model, 1-based) and `_version`
/// (raised on every update, for optimistic locking), then one column per
/// persistent attribute, named as the attribute, and one per to-one
/// relationship, named as the relationship, holding the destination's `_pk`
/// (indexed). An ordered to-many whose inverse is a to-one keeps each
/// member's position in the member's table (`_order_<inverse>`); a
/// many-to-many or one-way to-many has a join table (see ``joinTableSQL(model:)``).
/// An entity hierarchy shares its root's table: the columns of every entity
/// in it, `_entity` telling each row's entity.
package final class TableMapping {
    /// How the database spells what differs between SQL databases.
    package let dialect: any SQLDialect
    package let entity: Entity
    /// Position columns other entities' ordered to-many relationships keep in the rows this mapping reads.
    package let orderColumns: [String]
    /// The hierarchy's table (the root entity's name), as reads see it.
    package let table: String
    /// What the database calls the tables and columns rows are written to.
    package let names: StoredNames
    /// The table rows are written to: ``table`` under ``names``.
    package let storedTable: String
    /// The number this entity's rows hold in their entity column.
    package let storedEntityCode: Int64
    /// `_pk, _version, _entity, "a", "b", …`: the select list for fetching
    /// this entity's objects (and its sub-entities').
    package let selectColumns: String
    /// `_pk, _entity, "a", "b", …`: the columns a new row is written with, in ``insertSQL``'s order.
    package let insertColumns: String
    package let insertSQL: String
    /// ``insertSQL`` for ``batchRows`` rows at once. A save inserts an
    /// entity's new rows this many to a statement: SQLite's work per
    /// statement run (starting the program, ending it) is then spread over
    /// them, which makes a large save's inserts about a quarter faster.
    package let batchInsertSQL: String
    /// Rows per ``batchInsertSQL``: 32, fewer for an entity whose rows would
    /// bind more parameters than the dialect allows.
    package let batchRows: Int
    /// DELETE of the row with a given key and version.
    package let deleteSQL: String
    /// DELETE of the row with a given key, whatever its version.
    package let deleteAnyVersionSQL: String
    /// UPDATE setting the version (first parameter) of the row with a given key.
    package let versionSQL: String
    /// The columns this entity's rows write, in order.
    package let columns: [Column]
    /// Each written column's object slot, in column order: the hot loops read
    /// this plain array rather than copying `Column`s (whose name would be
    /// retained and released per row).
    package let slots: [Int]
    /// By written column, for a to-one relationship's destination key, the
    /// table it points into (the destination's root entity index); nil for
    /// other columns.
    package let foreignKeys: [Int?]
    /// The to-one columns, of any table, that point at rows of this table.
    package let referrers: [Referrer]
    /// By written column, whether it is derived: the store's triggers write it, an update never does.
    package let derived: [Bool]
    /// The columns a fetch reads, the store-neutral ``RowLayout``: this
    /// entity's, then those only its sub-entities have; their names and stored types.
    package let layout: RowLayout
    package let fetchNames: [String]
    package let types: [AttributeType]
    /// By entity index (this entity and those below it), by object slot, the
    /// fetched column that stores it (-1 for slots not stored); empty for others.
    package let columnOfSlot: [[Int]]
    /// The condition that keeps a fetch to this entity and those below it
    /// (nil when they fill the whole table).
    package let entityFilter: String?
    /// The join-table columns (table quoted) that can hold this entity's
    /// keys, from either end of their relationships.
    package let joinColumns: [JoinColumn]
    /// DELETEs (one `?`: the key) of every join-table row that can hold one
    /// of this entity's objects, from either end: run when one is deleted.
    package let joinRowDeletes: [String]
    /// The model, for the tables relationships point at.
    private let model: Model

    /// Bookkeeping columns come first in every select: pk, version, entity.
    package static let bookkeepingCount: Int32 = 3

    package init(entity: Entity, model: Model, dialect: any SQLDialect, names: StoredNames = .amber) {
        self.dialect = dialect
        self.names = names
        self.entity = entity
        self.model = model
        let subtree = entity.subentityIndices.map { model.entities[$0] }
        self.orderColumns = Array(Set(model.entities.flatMap { source in
            source.relationships.compactMap { relationship -> String? in
                guard entity.subentityIndices.contains(relationship.destinationIndex),
                      case .inverseForeignKey(let column?) = relationship.storage else { return nil }
                return column
            }
        })).sorted()
        let root = model.root(of: entity).name
        self.table = quote(root)
        self.storedTable = names.table(root)
        self.storedEntityCode = names.entityCode(entity.index)
        let (key, version) = (names.column("_pk", of: root), names.column("_version", of: root))
        self.columns = entity.columns
        self.slots = entity.columns.map(\.slot)
        let layout = RowLayout(entity: entity, model: model)
        (self.layout, self.fetchNames, self.types, self.columnOfSlot) = (layout, layout.names, layout.types, layout.columnOfSlot)
        let hierarchy = model.entities.filter { $0.rootIndex == entity.rootIndex }
        entityFilter = hierarchy.count == subtree.count ? nil
            : "_entity IN (\(entity.subentityIndices.map { String($0 + 1) }.joined(separator: ", ")))"
        var joinColumns: [JoinColumn] = []
        for relationship in model.entities.flatMap(\.relationships) {
            guard case .joinTable(let table, let mine, let theirs, _) = relationship.storage else { continue }
            // A relationship of this entity (its own or inherited), or one pointing at it or at an entity it inherits from.
            for (column, end) in [(mine, relationship.entityIndex), (theirs, relationship.destinationIndex)]
                where entity.isKind(of: model.entities[end])
            {
                let found = JoinColumn(table: names.table(table), column: names.column(column, of: table))
                if !joinColumns.contains(found) { joinColumns.append(found) }
            }
        }
        self.joinColumns = joinColumns
        self.joinRowDeletes = joinColumns.map { "DELETE FROM \($0.table) WHERE \($0.column) = ?" }
        let columnNames = columns.map { quote($0.name) }
        selectColumns = (["_pk", "_version", "_entity"] + fetchNames.map(quote)).joined(separator: ", ")
        insertColumns = (["_pk", "_entity"] + columnNames).joined(separator: ", ")
        // A first version is written only where the table does not default it (the literal binds nothing).
        let firstVersion = names.writesFirstVersion ? [(version, "1")] : []
        let written = [(key, "?"), (names.column("_entity", of: root), "?")] + firstVersion
            + columns.map { (names.column($0.name, of: root), "?") }
        let row = "(" + written.map(\.1).joined(separator: ", ") + ")"
        let insert = "INSERT INTO \(storedTable) (\(written.map(\.0).joined(separator: ", "))) VALUES "
        insertSQL = insert + row
        batchRows = max(1, min(32, dialect.maximumParameters / (columnNames.count + 2)))
        batchInsertSQL = insert + Array(repeating: row, count: batchRows).joined(separator: ", ")
        let destinations = Dictionary(entity.relationships.compactMap { relationship in
            relationship.slot.map { ($0, model.destination(of: relationship).rootIndex) }
        }, uniquingKeysWith: { first, _ in first })
        self.foreignKeys = slots.map { destinations[$0] }
        var referrers: [Referrer] = []
        for relationship in model.entities.flatMap(\.relationships) where relationship.slot != nil {
            let owner = model.entities[relationship.entityIndex]
            let referrer = Referrer(table: quote(model.root(of: owner).name), column: quote(relationship.columnName),
                                    place: "\(owner.name).\(relationship.name)")
            guard model.destination(of: relationship).rootIndex == entity.rootIndex,
                  !referrers.contains(where: { $0.table == referrer.table && $0.column == referrer.column }) else { continue }
            referrers.append(referrer)
        }
        self.referrers = referrers
        let derivedSlots = Set(entity.attributes.filter { $0.derivation != nil }.map(\.slot))
        self.derived = slots.map { derivedSlots.contains($0) }
        deleteSQL = "DELETE FROM \(storedTable) WHERE \(key) = ? AND \(version) = ?"
        deleteAnyVersionSQL = "DELETE FROM \(storedTable) WHERE \(key) = ?"
        versionSQL = "UPDATE \(storedTable) SET \(version) = ? WHERE \(key) = ?"
    }

    /// UPDATE statements by the set of columns they write (bit i: column i),
    /// made on first use. A store is used from one thread at a time.
    private var updates: [UInt64: String] = [:]

    /// The UPDATE writing `columns` (column indices, ascending) and raising
    /// the version, of the row with a given primary key and version (the
    /// last two parameters). Only changed columns are written, so a save
    /// does not rewrite values it did not change (large blobs, encrypted
    /// values) and two programs changing different attributes of one row
    /// write only their own.
    package func updateSQL(columns: [Int]) -> String {
        let make = {
            let root = self.model.root(of: self.entity).name
            let (key, version) = (self.names.column("_pk", of: root), self.names.column("_version", of: root))
            let assignments = columns.map { "\(self.names.column(self.columns[$0].name, of: root)) = ?" } + ["\(version) = \(version) + 1"]
            return "UPDATE \(self.storedTable) SET \(assignments.joined(separator: ", ")) WHERE \(key) = ? AND \(version) = ?"
        }
        // Cached by a column mask, which an entity of more than 64 columns cannot have.
        guard self.columns.count <= 64 else { return make() }
        let mask = columns.reduce(UInt64(0)) { $0 | 1 << UInt64($1) }
        if let known = updates[mask] { return known }
        let sql = make()
        updates[mask] = sql
        return sql
    }

    /// CREATE statements for the table (made by the hierarchy's root, with
    /// every entity's columns), its indexes, unique constraints and foreign
    /// keys; none for an entity below a root.
    package var createSQL: [String] {
        guard entity.parentIndex == nil else { return [] }
        let hierarchy = entity.subentityIndices.map { model.entities[$0] }
        let integer = dialect.columnType(.integer64)
        var definitions = ["_pk \(dialect.primaryKeyDefinition)", "_entity \(integer) NOT NULL", "_version \(integer) NOT NULL DEFAULT 1"]
        definitions += zip(fetchNames, types).map { "\(quote($0)) \(dialect.columnType($1))" }
        definitions += orderColumns.map { "\(quote($0)) \(integer)" }
        var sql: [String] = []
        for member in hierarchy {
            // What a sub-entity inherits, its parent already declared.
            let inherited = member.parentIndex.map { model.entities[$0] }
            let ownRelationships = member.relationships.filter { relationship in !(inherited?.relationships.contains { $0.name == relationship.name } ?? false) }
            let ownAttributes = member.persistentAttributes.filter { attribute in !(inherited?.attributes.contains { $0.name == attribute.name } ?? false) }
            for constraint in member.uniquenessConstraints {
                definitions.append("CONSTRAINT \(quote(Self.constraintName(entity: member, constraint))) UNIQUE (\(constraint.map { quote($0.columnName) }.joined(separator: ", ")))")
            }
            // Declared for `amber check` and migrations; the writer checks links inside each save.
            for relationship in ownRelationships where relationship.slot != nil {
                if dialect.declaresForeignKeysInTable { definitions.append(foreignKey(relationship)) }
                sql.append("CREATE INDEX \(quote("\(member.name)_\(relationship.name)_index")) ON \(table) (\(quote(relationship.columnName)))")
            }
            for attribute in ownAttributes where attribute.isIndexed {
                sql.append("CREATE INDEX \(quote("\(member.name)_\(attribute.name)_index")) ON \(table) (\(quote(attribute.columnName)))")
            }
            for (i, index) in member.indexes.enumerated() {
                sql.append("CREATE INDEX \(quote("\(member.name)_index\(i)")) ON \(table) (\(index.map { quote($0.columnName) }.joined(separator: ", ")))")
            }
        }
        return ["CREATE TABLE \(table) (\(definitions.joined(separator: ", ")))"] + sql
    }

    /// The foreign key of to-one `relationship`'s column, as a table constraint.
    private func foreignKey(_ relationship: Relationship) -> String {
        "FOREIGN KEY (\(quote(relationship.columnName))) REFERENCES \(quote(model.root(of: model.destination(of: relationship)).name)) (_pk) "
            + "DEFERRABLE INITIALLY DEFERRED"
    }

    /// For a dialect that does not declare foreign keys inside CREATE TABLE,
    /// the statements adding them to the hierarchy's table, run once every
    /// table exists; none otherwise, and none for an entity below a root.
    package var foreignKeySQL: [String] {
        guard entity.parentIndex == nil, !dialect.declaresForeignKeysInTable else { return [] }
        var seen: Set<String> = []
        return entity.subentityIndices.flatMap { model.entities[$0].relationships }
            .filter { $0.slot != nil && seen.insert($0.columnName).inserted }
            .map { "ALTER TABLE \(table) ADD \(foreignKey($0))" }
    }

    /// CREATE statements for every join table of `model` (one per
    /// many-to-many pair or one-way to-many): a row per link, `source` the
    /// key of the side that names the table, `target` the other's, indexed
    /// from both ends, with a position column per ordered side.
    package static func joinTableSQL(model: Model, dialect: any SQLDialect) -> [String] {
        var positions: [String: Set<String>] = [:]
        for relationship in model.entities.flatMap(\.relationships) {
            guard case .joinTable(let table, _, _, let order) = relationship.storage else { continue }
            positions[table, default: []].formUnion(order.map { [$0] } ?? [])
        }
        return positions.keys.sorted().flatMap { table -> [String] in
            let integer = dialect.columnType(.integer64)
            let definitions = ["source \(integer) NOT NULL", "target \(integer) NOT NULL"]
                + (positions[table] ?? []).sorted().map { "\($0) \(integer)" } + ["PRIMARY KEY (source, target)"]
            let options = dialect.joinTableOptions.isEmpty ? "" : " " + dialect.joinTableOptions
            return ["CREATE TABLE \(quote(table)) (\(definitions.joined(separator: ", ")))\(options)",
                    "CREATE INDEX \(quote("\(table)_target_index")) ON \(quote(table)) (target, source)"]
        }
    }

    /// The model index of the entity a fetched row's `_entity` `code` names,
    /// for the row with primary key `key`. A row another program wrote with
    /// an entity outside this hierarchy is refused, not guessed.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidValue(place:expected:given:)`` naming the row.
    package func fetchedEntity(code: Int64, key: Int64) throws(AmberError) -> Int32 {
        let index = code &- 1
        guard index >= 0, index < Int64(columnOfSlot.count), !columnOfSlot[Int(index)].isEmpty else {
            throw .invalidValue(place: "\(entity.name) row \(key)", expected: "an entity of this hierarchy", given: "entity number \(code)")
        }
        return Int32(index)
    }

    /// A join table (quoted) and one of its two key columns.
    package struct JoinColumn: Equatable {
        package let table, column: String
    }

    /// A to-one relationship's column: `Book.author` in table `"Book"`.
    package struct Referrer {
        /// The table holding the column, and the column, both quoted.
        package let table, column: String
        /// `Entity.relationship`, for problems.
        package let place: String
    }

    /// The value a fetched `cell` of layout column `column` holds.
    package func value(of cell: FetchedRows.Cell, column: Int, arena: ByteArena, boxes: [Value]) -> Value {
        switch cell.kind {
        case .null: .null
        case .boxed: boxes[Int(cell.payload)]
        case .scalar: layout.value(column: column, scalar: cell.payload, bytes: UnsafeRawBufferPointer(start: nil, count: 0))
        case .bytes: layout.value(column: column, scalar: 0, bytes: arena.bytes(at: Int(cell.payload), count: Int(cell.length)))
        }
    }

    /// The metadata key holding the largest key ever deleted from table `table` (quoted).
    package static func deletedKeyName(table: String) -> String { "deleted-key.\(table)" }

    /// `Book(title, author)`: how errors name a uniqueness constraint.
    package static func constraintName(entity: Entity, _ constraint: [Attribute]) -> String {
        "\(entity.name)(\(constraint.map(\.name).joined(separator: ", ")))"
    }
}
