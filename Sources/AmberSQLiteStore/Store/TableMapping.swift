import AmberModel
import AmberStore
import AmberTransformers
import AmberValues
import CSQLite
import Foundation

/// How one entity lives in SQLite: its table, columns, SQL statements and the
/// conversion of each attribute's values to and from columns. All store
/// layout decisions are here, so another layout can be added beside it.
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
final class TableMapping {
    let entity: Entity
    /// Position columns other entities' ordered to-many relationships keep in the rows this mapping reads.
    let orderColumns: [String]
    /// The hierarchy's table (the root entity's name).
    let table: String
    /// `_pk, _version, _entity, "a", "b", …`: the select list for fetching
    /// this entity's objects (and its sub-entities').
    let selectColumns: String
    let insertSQL: String
    /// ``insertSQL`` for ``batchRows`` rows at once. A save inserts an
    /// entity's new rows this many to a statement: SQLite's work per
    /// statement run (starting the program, ending it) is then spread over
    /// them, which makes a large save's inserts about a quarter faster.
    let batchInsertSQL: String
    /// Rows per ``batchInsertSQL``: 32, fewer for an entity whose rows would
    /// bind more than 999 parameters (the lowest limit a SQLite build has).
    let batchRows: Int
    let deleteSQL: String
    /// The columns this entity's rows write, in order.
    let columns: [Column]
    /// Each written column's object slot, in column order: the hot loops read
    /// this plain array rather than copying `Column`s (whose name would be
    /// retained and released per row).
    let slots: [Int]
    /// By written column, for a to-one relationship's destination key, the
    /// table it points into (the destination's root entity index); nil for
    /// other columns.
    let foreignKeys: [Int?]
    /// The to-one columns, of any table, that point at rows of this table.
    let referrers: [Referrer]
    /// By written column, whether it is derived: the store's triggers write it, an update never does.
    let derived: [Bool]
    /// The columns a fetch reads, the store-neutral ``RowLayout``: this
    /// entity's, then those only its sub-entities have; their names and stored types.
    let layout: RowLayout
    let fetchNames: [String]
    let types: [AttributeType]
    /// By entity index (this entity and those below it), by object slot, the
    /// fetched column that stores it (-1 for slots not stored); empty for others.
    let columnOfSlot: [[Int]]
    /// The condition that keeps a fetch to this entity and those below it
    /// (nil when they fill the whole table).
    let entityFilter: String?
    /// The join-table columns (table quoted) that can hold this entity's
    /// keys, from either end of their relationships.
    let joinColumns: [JoinColumn]
    /// DELETEs (one `?`: the key) of every join-table row that can hold one
    /// of this entity's objects, from either end: run when one is deleted.
    let joinRowDeletes: [String]
    /// The model, for the tables relationships point at.
    private let model: Model

    /// Bookkeeping columns come first in every select: pk, version, entity.
    static let bookkeepingCount: Int32 = 3

    init(entity: Entity, model: Model) {
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
        self.table = quote(model.root(of: entity).name)
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
                let found = JoinColumn(table: quote(table), column: column)
                if !joinColumns.contains(found) { joinColumns.append(found) }
            }
        }
        self.joinColumns = joinColumns
        self.joinRowDeletes = joinColumns.map { "DELETE FROM \($0.table) WHERE \($0.column) = ?" }
        let names = columns.map { quote($0.name) }
        selectColumns = (["_pk", "_version", "_entity"] + fetchNames.map(quote)).joined(separator: ", ")
        let row = "(" + Array(repeating: "?", count: names.count + 2).joined(separator: ", ") + ")"
        let insert = "INSERT INTO \(table) (\((["_pk", "_entity"] + names).joined(separator: ", "))) VALUES "
        insertSQL = insert + row
        batchRows = max(1, min(32, 999 / (names.count + 2)))
        batchInsertSQL = insert + Array(repeating: row, count: batchRows).joined(separator: ", ")
        let destinations = Dictionary(entity.relationships.compactMap { relationship in
            relationship.slot.map { ($0, model.destination(of: relationship).rootIndex) }
        }, uniquingKeysWith: { first, _ in first })
        self.foreignKeys = slots.map { destinations[$0] }
        var referrers: [Referrer] = []
        for relationship in model.entities.flatMap(\.relationships) where relationship.slot != nil {
            let owner = model.entities[relationship.entityIndex]
            let referrer = Referrer(table: quote(model.root(of: owner).name), column: quote(relationship.name),
                                    place: "\(owner.name).\(relationship.name)")
            guard model.destination(of: relationship).rootIndex == entity.rootIndex,
                  !referrers.contains(where: { $0.table == referrer.table && $0.column == referrer.column }) else { continue }
            referrers.append(referrer)
        }
        self.referrers = referrers
        let derivedSlots = Set(entity.attributes.filter { $0.derivation != nil }.map(\.slot))
        self.derived = slots.map { derivedSlots.contains($0) }
        deleteSQL = "DELETE FROM \(table) WHERE _pk = ? AND _version = ?"
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
    func updateSQL(columns: [Int]) -> String {
        let make = {
            let assignments = columns.map { "\(quote(self.columns[$0].name)) = ?" } + ["_version = _version + 1"]
            return "UPDATE \(self.table) SET \(assignments.joined(separator: ", ")) WHERE _pk = ? AND _version = ?"
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
    var createSQL: [String] {
        guard entity.parentIndex == nil else { return [] }
        let hierarchy = entity.subentityIndices.map { model.entities[$0] }
        var definitions = ["_pk INTEGER PRIMARY KEY", "_entity INTEGER NOT NULL", "_version INTEGER NOT NULL DEFAULT 1"]
        definitions += zip(fetchNames, types).map { "\(quote($0)) \(Self.columnType($1))" }
        definitions += orderColumns.map { "\(quote($0)) INTEGER" }
        var sql: [String] = []
        for member in hierarchy {
            // What a sub-entity inherits, its parent already declared.
            let inherited = member.parentIndex.map { model.entities[$0] }
            let ownRelationships = member.relationships.filter { relationship in !(inherited?.relationships.contains { $0.name == relationship.name } ?? false) }
            let ownAttributes = member.persistentAttributes.filter { attribute in !(inherited?.attributes.contains { $0.name == attribute.name } ?? false) }
            for constraint in member.uniquenessConstraints {
                definitions.append("CONSTRAINT \(quote(Self.constraintName(entity: member, constraint))) UNIQUE (\(constraint.map { quote($0.name) }.joined(separator: ", ")))")
            }
            // Checked by SQLite at commit: no save leaves a link to a row that is gone.
            for relationship in ownRelationships where relationship.slot != nil {
                definitions.append("FOREIGN KEY (\(quote(relationship.name))) REFERENCES \(quote(model.root(of: model.destination(of: relationship)).name)) (_pk) DEFERRABLE INITIALLY DEFERRED")
                sql.append("CREATE INDEX \(quote("\(member.name)_\(relationship.name)_index")) ON \(table) (\(quote(relationship.name)))")
            }
            for attribute in ownAttributes where attribute.isIndexed {
                sql.append("CREATE INDEX \(quote("\(member.name)_\(attribute.name)_index")) ON \(table) (\(quote(attribute.name)))")
            }
            for (i, index) in member.indexes.enumerated() {
                sql.append("CREATE INDEX \(quote("\(member.name)_index\(i)")) ON \(table) (\(index.map { quote($0.name) }.joined(separator: ", ")))")
            }
        }
        return ["CREATE TABLE \(table) (\(definitions.joined(separator: ", ")))"] + sql
    }

    /// CREATE statements for every join table of `model` (one per
    /// many-to-many pair or one-way to-many): a row per link, `source` the
    /// key of the side that names the table, `target` the other's, indexed
    /// from both ends, with a position column per ordered side.
    static func joinTableSQL(model: Model) -> [String] {
        var positions: [String: Set<String>] = [:]
        for relationship in model.entities.flatMap(\.relationships) {
            guard case .joinTable(let table, _, _, let order) = relationship.storage else { continue }
            positions[table, default: []].formUnion(order.map { [$0] } ?? [])
        }
        return positions.keys.sorted().flatMap { table -> [String] in
            let definitions = ["source INTEGER NOT NULL", "target INTEGER NOT NULL"]
                + (positions[table] ?? []).sorted().map { "\($0) INTEGER" } + ["PRIMARY KEY (source, target)"]
            return ["CREATE TABLE \(quote(table)) (\(definitions.joined(separator: ", "))) WITHOUT ROWID",
                    "CREATE INDEX \(quote("\(table)_target_index")) ON \(quote(table)) (target, source)"]
        }
    }

    /// A join table (quoted) and one of its two key columns.
    struct JoinColumn: Equatable {
        let table, column: String
    }

    /// A to-one relationship's column: `Book.author` in table `"Book"`.
    struct Referrer {
        /// The table holding the column, and the column, both quoted.
        let table, column: String
        /// `Entity.relationship`, for problems.
        let place: String
    }

    /// `Book(title, author)`: how errors name a uniqueness constraint.
    static func constraintName(entity: Entity, _ constraint: [Attribute]) -> String {
        "\(entity.name)(\(constraint.map(\.name).joined(separator: ", ")))"
    }

    /// SQLite's declared type, which gives each column its affinity. Decimals
    /// are TEXT so no digit is lost; dates are REAL seconds since 2001-01-01 UTC
    /// (Core Data's reference date), which round-trips `Date` bit for bit.
    static func columnType(_ type: AttributeType) -> String {
        switch type {
        case .integer16, .integer32, .integer64, .boolean: "INTEGER"
        case .double, .float, .date: "REAL"
        case .string, .decimal, .uri: "TEXT"
        case .binary, .uuid, .transformable, .undefined, .objectID: "BLOB"
        }
    }

    // MARK: Values ↔ columns

    /// Binds `value` (already coerced to `type`) at parameter `index`.
    static func bind(_ value: Value, at index: Int32, in statement: Statement) {
        switch value {
        case .null, .objectID, .array, .dictionary: statement.bindNull(index)
        case .custom(let c): c.withUnsafeBytes { statement.bind(index, bytes: $0) }
        case .bool(let b): statement.bind(index, b ? Int64(1) : 0)
        case .int(let i): statement.bind(index, i)
        case .double(let d): statement.bind(index, d)
        case .float(let f): statement.bind(index, Double(f))
        case .string(let s) where s.utf8.count >= largeValueBytes: statement.bind(index, keeping: value)
        case .string(let s): statement.bind(index, s)
        case .binary(let d) where d.count >= largeValueBytes: statement.bind(index, keeping: value)
        case .binary(let d): d.withUnsafeBytes { statement.bind(index, bytes: $0) }
        case .date(let d): statement.bind(index, d.timeIntervalSinceReferenceDate)
        case .decimal(let d): statement.bind(index, d.description)
        case .uuid(let u): withUnsafeBytes(of: u.uuid) { statement.bind(index, bytes: $0) }
        case .uri(let u): statement.bind(index, u.absoluteString)
        }
    }

    /// From this size on, text and blobs are bound without a copy (``Statement/bind(_:keeping:)``)
    /// and fetched as values of their own (``RowLayout/largeValueBytes``).
    static let largeValueBytes = RowLayout.largeValueBytes

    /// Copies column `index` of the current row into `cell` (text and blob
    /// bytes appended to `arena`, or from ``largeValueBytes`` on boxed as
    /// values, decimals and URIs parsed into `boxes`),
    /// checking that it is a stored value of the column's type: a value of
    /// the wrong storage class, out of range or malformed (written by another
    /// tool) is an error naming the attribute.
    func copy(column: Int, at index: Int32, from statement: Statement, into cell: inout FetchedRows.Cell,
              arena: inout [UInt8], boxes: inout [Value]) throws(AmberError)
    {
        let storage = statement.columnType(index)
        if storage == SQLITE_NULL { return }
        let type = types[column]
        func corrupt(_ what: String) -> AmberError {
            .invalidValue(place: "\(entity.name).\(fetchNames[column])", expected: "a stored \(type)", given: what)
        }
        func require(_ storages: Int32...) throws(AmberError) {
            guard storages.contains(storage) else { throw corrupt("a value of SQLite type \(storage)") }
        }
        switch type {
        case .integer16, .integer32, .integer64, .boolean:
            try require(SQLITE_INTEGER)
            let value = statement.int64(index)
            let range = type == .boolean ? 0...1 : type.integerRange ?? 0...0
            if !range.contains(value) { throw corrupt("\(value), out of range") }
            cell.payload = UInt64(bitPattern: value)
            cell.kind = .scalar
        case .double, .float, .date:
            try require(SQLITE_FLOAT, SQLITE_INTEGER)
            let value = statement.double(index)
            // Exact or refused: an integer beyond 2^53, or a Double no Float equals, would read back changed.
            if storage == SQLITE_INTEGER, Int64(exactly: value) != statement.int64(index) { throw corrupt("\(statement.int64(index)), not exact as a Double") }
            if type == .float, !value.isNaN, Double(Float(value)) != value { throw corrupt("\(value), not exact as a Float") }
            cell.payload = value.bitPattern
            cell.kind = .scalar
        case .string, .binary, .uuid:
            try require(type == .string ? SQLITE_TEXT : SQLITE_BLOB)
            try statement.withBytes(index) { (bytes) throws(AmberError) in
                if type == .uuid, bytes.count != 16 { throw corrupt("\(bytes.count) bytes") }
                if type == .string, !String.isValidUTF8(bytes) { throw corrupt("text that is not valid UTF-8") }
                if bytes.count >= Self.largeValueBytes {
                    // Its own value at once: read later, it is handed out without another copy.
                    cell.payload = UInt64(boxes.count)
                    cell.kind = .boxed
                    boxes.append(type == .string ? .string(String(decoding: bytes, as: UTF8.self)) : .binary(Data(bytes)))
                    return
                }
                cell.payload = UInt64(arena.count)
                cell.length = UInt32(bytes.count)
                cell.kind = .bytes
                arena.append(contentsOf: bytes)
            }
        case .decimal, .uri:
            let text = try statement.string(index)
            let parsed = type == .decimal ? ScaledDecimal(text).map(Value.decimal) : Value.exactURI(text).map(Value.uri)
            guard let parsed else { throw corrupt("\"\(text)\"") }
            cell.payload = UInt64(boxes.count)
            cell.kind = .boxed
            boxes.append(parsed)
        case .transformable, .undefined, .objectID:
            throw corrupt("a column of a type this version cannot read")
        }
    }
}

/// Quotes an SQL identifier. Model names are already restricted to letters,
/// digits and underscores; quoting keeps SQL keywords (`order`, `group`) usable.
func quote(_ identifier: String) -> String {
    guard identifier.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + identifier + "\"" }
    return "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}
