import AmberModel
import AmberSQL
import AmberTransformers
import AmberValues
import CSQLite
import Foundation

/// A store Core Data wrote, read through Amber's own layout: the tables
/// Core Data keeps (one per inheritance root, `Z`-prefixed capitals, `Z_PK`,
/// `Z_ENT`, `Z_OPT`) checked against the model, and a temporary view per
/// hierarchy that presents them as ``TableMapping`` expects its tables
/// (`"Car"` with `_pk`, `_version`, `_entity` and a column per attribute).
/// The views live in the connection's `temp` schema, so the file itself is
/// not changed, and SQLite flattens them into each query: the compiler,
/// fetches and relationships run on them unchanged.
///
/// What is verified is what the fixtures in `../shared/coredata` show:
/// entity numbers from `Z_PRIMARYKEY` (looked up by name), hierarchies in
/// one table, dates as seconds since 2001, Booleans as 0/1, UUIDs as 16
/// bytes, decimals as SQLite numbers, to-ones as the destination's `Z_PK`
/// (with a `Z<n>_<NAME>` entity column when the destination has
/// sub-entities), and Core Data's own history entities (numbers from
/// 16000), which the model does not describe.
struct CoreDataLayout {
    /// The store's UUID (`Z_METADATA.Z_UUID`).
    let identifier: UUID
    /// By model entity index, the entity's number in the store (`Z_ENT`).
    let entityNumbers: [Int64]
    /// The `CREATE TEMP VIEW` statements that present the store in Amber's layout.
    let views: [String]
    /// What the store calls Amber's tables and columns, for the statements that write rows.
    let names: StoredNames
    /// By root entity index, the stored table (quoted, in `main`) and the
    /// columns that keep a to-one's destination entity beside its key.
    let entityColumns: [Int: [EntityColumn]]
    /// By entity index, the stored columns whose values Amber's archive
    /// transformer makes, written as Core Data's keyed archives.
    let archivedColumns: [Set<String>]
    /// By entity index, the stored columns of attributes that allow external storage (written with a marker byte).
    let externalColumns: [Set<String>]
    /// Whether the store keeps Core Data's persistent history (`ATRANSACTION`), which Amber does not write.
    let tracksHistory: Bool
    /// By entity index, the entity's name (a root's names its table in ``names``).
    let entityNames: [String]
    /// Stored table name (`ZBOOK`) → its root entity's index.
    let tableRoots: [String: Int]

    /// A `Z<n>_<NAME>` column: the entity number of the row to-one `foreignKey` points at, in `destination`.
    struct EntityColumn {
        let column, foreignKey, destination: String
    }

    /// What the layout pass collects besides the views.
    private struct Naming {
        var tables: [String: String] = [:], columns: [String: [String: String]] = [:]
        var entityColumns: [Int: [EntityColumn]] = [:]
    }

    /// Entity numbers from here on are Core Data's own (persistent history), not the model's.
    static let ownEntities: Int64 = 16000

    /// Whether the database `connection` opened is one Core Data wrote:
    /// its bookkeeping tables, and no Amber metadata.
    static func describes(_ connection: Connection) throws(AmberError) -> Bool {
        let tables = try tableNames(connection)
        return tables.contains("Z_PRIMARYKEY") && tables.contains("Z_METADATA") && !tables.contains(SQLiteStore.metadataTable)
    }

    private static func tableNames(_ connection: Connection) throws(AmberError) -> Set<String> {
        let statement = try connection.statement("SELECT name FROM main.sqlite_schema WHERE type = 'table'")
        defer { statement.reset() }
        var names: Set<String> = []
        while try statement.step() { names.insert(try statement.string(0)) }
        return names
    }

    /// Reads the store's bookkeeping and checks its tables against `model`.
    ///
    /// - Throws: ``/AmberValues/AmberError/modelMismatch(store:differences:)``
    ///   naming every entity, table and column that differs;
    ///   ``/AmberValues/AmberError/notAStore(path:reason:)`` when the
    ///   bookkeeping itself is unreadable.
    init(connection: Connection, model: Model, place: String) throws(AmberError) {
        guard let uuidText = try Self.single(connection, "SELECT Z_UUID FROM main.Z_METADATA ORDER BY Z_VERSION DESC LIMIT 1"),
              let uuid = UUID(uuidString: uuidText)
        else { throw .notAStore(path: place, reason: "Z_METADATA holds no store UUID") }
        identifier = uuid
        var stored: [String: (number: Int64, parent: Int64)] = [:]
        let entities = try connection.statement("SELECT Z_ENT, Z_NAME, Z_SUPER FROM main.Z_PRIMARYKEY WHERE Z_ENT < \(Self.ownEntities)")
        defer { entities.reset() }
        var differences: [String] = []
        while try entities.step() {
            guard entities.columnType(1) == SQLITE_TEXT else { continue }
            let name = try entities.string(1)
            if stored.updateValue((entities.int64(0), entities.int64(2)), forKey: name) != nil {
                differences.append("entity \(name) is in Z_PRIMARYKEY twice")
            }
        }
        let tables = try Self.tableNames(connection)
        tracksHistory = tables.contains("ATRANSACTION")
        var numbers: [Int64] = []
        for entity in model.entities {
            guard let found = stored[entity.name] else {
                differences.append("entity \(entity.name) is not in the store (Z_PRIMARYKEY)")
                numbers.append(-1)
                continue
            }
            numbers.append(found.number)
            let parent = entity.parentIndex.map { model.entities[$0].name }
            let storedParent = stored.first { $0.value.number == found.parent }?.key
            if found.parent != 0 || parent != nil, storedParent != parent || (found.parent != 0 && storedParent == nil) {
                differences.append("entity \(entity.name): its parent is \(parent ?? "none") in the model, "
                    + "\(storedParent ?? (found.parent == 0 ? "none" : "entity number \(found.parent)")) in the store")
            }
            if entity.isExtensible { differences.append("entity \(entity.name) is extensible, which a Core Data store cannot hold") }
        }
        for name in stored.keys.sorted() where !model.entities.contains(where: { $0.name == name }) {
            differences.append("entity \(name) is in the store but not in the model")
        }
        for (number, names) in Dictionary(grouping: stored, by: \.value.number) where names.count > 1 {
            differences.append("entity number \(number) names \(names.map(\.key).sorted().joined(separator: " and "))")
        }
        entityNumbers = numbers
        var views: [String] = [], naming = Naming()
        for root in model.entities where root.parentIndex == nil {
            let table = Self.tableName(root.name)
            guard tables.contains(table) else {
                differences.append("entity \(root.name): the store has no table \(table)")
                continue
            }
            let columns = try Self.columns(of: table, connection)
            views.append(Self.view(of: root, table: table, columns: columns, model: model, numbers: numbers, naming: &naming,
                                   differences: &differences))
        }
        views += try Self.joinViews(model: model, numbers: numbers, tables: tables, connection: connection, naming: &naming,
                                    differences: &differences)
        for relationship in Self.declared(model) {
            guard relationship.isToMany, relationship.isOrdered, case .joinTable = relationship.storage else { continue }
            differences.append("\(relationship.description): an ordered many-to-many relationship, which this version does not read")
        }
        guard differences.isEmpty else { throw .modelMismatch(store: place, differences: differences) }
        self.views = views
        names = StoredNames(schema: "main", tables: naming.tables, columns: naming.columns, entityCodes: numbers)
        entityColumns = naming.entityColumns
        entityNames = model.entities.map(\.name)
        tableRoots = Dictionary(model.entities.filter { $0.parentIndex == nil }.map { (Self.tableName($0.name), $0.index) },
                                uniquingKeysWith: { first, _ in first })
        externalColumns = model.entities.map { entity in Set(entity.persistentAttributes.filter(\.allowsExternalStorage).map(\.columnName)) }
        archivedColumns = model.entities.map { entity in
            Set(entity.persistentAttributes.filter { $0.transformerNames.last == Registry.archiveTransformerName }.map(\.columnName))
        }
    }

    /// Every relationship of `model` as the entity declaring it has it (an
    /// inherited copy names the sub-entity, whose number is not the one Core
    /// Data's join tables and columns are named after).
    static func declared(_ model: Model) -> [Relationship] {
        model.entities.flatMap { entity in
            entity.relationships.filter { relationship in
                !(entity.parentIndex.map { model.entities[$0].relationships.contains { $0.name == relationship.name } } ?? false)
            }
        }
    }

    /// `ZCAR` for entity `Car`: how Core Data names a hierarchy's table and a property's column.
    static func tableName(_ name: String) -> String { "Z" + name.uppercased() }

    /// The column Core Data keeps a property in: `ZTITLE`, then `ZTITLE1`,
    /// `ZTITLE2` for entities beside the first in the hierarchy that declare
    /// a property of the same name. Which entity has which number is assumed
    /// to follow the model's order (Amber's own order for its columns): no
    /// fixture shows it.
    static func storedName(_ column: StoredColumn) -> String {
        tableName(column.property) + (column.rank == 0 ? "" : String(column.rank))
    }

    /// The view presenting `root`'s hierarchy, whose rows are in `table`
    /// with `columns` (name → declared type), as ``TableMapping`` reads it;
    /// every column the model does not explain, or explains with another
    /// type, is added to `differences`.
    private static func view(of root: Entity, table: String, columns: [String: String], model: Model, numbers: [Int64],
                             naming: inout Naming, differences: inout [String]) -> String {
        var unexplained = Set(columns.keys)
        func take(_ column: String, for place: String, types: [String]?) -> String? {
            guard let declared = columns[column] else {
                differences.append("\(place): table \(table) has no column \(column)")
                return nil
            }
            unexplained.remove(column)
            if let types, !types.contains(declared.uppercased()) {
                differences.append("\(place): column \(table).\(column) is \(declared), not \(types.joined(separator: " or "))")
            }
            return column
        }
        let hierarchy = root.subentityIndices.map { model.entities[$0] }
        let codes = hierarchy.map { "WHEN \(numbers[$0.index]) THEN \($0.index + 1)" }.joined(separator: " ")
        var select = ["Z_PK AS _pk", "Z_OPT AS _version", "CASE Z_ENT \(codes) END AS _entity"]
        var stored = ["_pk": "Z_PK", "_version": "Z_OPT", "_entity": "Z_ENT"]
        for bookkeeping in ["Z_PK", "Z_ENT", "Z_OPT"] { _ = take(bookkeeping, for: "entity \(root.name)", types: nil) }
        var named: Set<String> = []
        for entity in hierarchy {
            let toOnes = Set(entity.toOneRelationships.map(\.columnName))
            for column in entity.columns where named.insert(column.name).inserted {
                let place = "\(entity.name).\(column.name)"
                guard toOnes.contains(column.name) else {
                    guard let name = take(storedName(column.stored), for: place, types: declaredTypes(column.type)) else { continue }
                    let external = entity.attributes.contains { $0.columnName == column.name && $0.allowsExternalStorage }
                    let read = external ? "amber_coredata_external(\(name), '\(place.replacingOccurrences(of: "'", with: "''"))')"
                        : expression(name, type: column.type)
                    select.append("\(read) AS \(quote(column.name))")
                    stored[column.name] = name
                    continue
                }
                guard let key = take(storedName(column.stored), for: place, types: ["INTEGER"]) else { continue }
                select.append("\(key) AS \(quote(column.name))")
                stored[column.name] = key
                // The destination's entity number, kept beside its key when the destination hierarchy has several entities.
                let suffix = "_" + key.dropFirst()
                let isEntityColumn = { (name: String) in
                    name.hasSuffix(suffix) && name.count > suffix.count + 1 && name.dropFirst().dropLast(suffix.count).allSatisfy(\.isNumber)
                }
                if let found = unexplained.first(where: isEntityColumn),
                   let relationship = entity.toOneRelationships.first(where: { $0.columnName == column.name }) {
                    let destination = tableName(model.root(of: model.destination(of: relationship)).name)
                    naming.entityColumns[root.index, default: []].append(
                        EntityColumn(column: quote(found), foreignKey: quote(key), destination: "main.\(quote(destination))"))
                }
                unexplained = unexplained.filter { !isEntityColumn($0) }
            }
        }
        // Position columns that other entities' ordered relationships keep here.
        for relationship in declared(model) {
            guard root.subentityIndices.contains(relationship.destinationIndex),
                  case .inverseForeignKey(let order?) = relationship.storage, let inverse = relationship.inverseIndex,
                  case let inverseColumn = model.entities[relationship.destinationIndex].relationships[inverse].storedColumn
            else { continue }
            guard let column = take("Z_FOK_" + storedName(inverseColumn).dropFirst(), for: relationship.description, types: ["INTEGER"]) else { continue }
            select.append("\(column) AS \(quote(order))")
            stored[order] = column
        }
        naming.tables[root.name] = table
        naming.columns[root.name] = stored
        for column in unexplained.sorted() {
            differences.append("entity \(root.name): column \(table).\(column) is not in the model")
        }
        return "CREATE TEMP VIEW \(quote(root.name)) AS SELECT \(select.joined(separator: ", ")) FROM main.\(quote(table))"
    }

    /// The views presenting Core Data's join tables as the model's: a
    /// many-to-many pair `E.r` ↔ `D.r'` (entity numbers `e`, `d`) is table
    /// `Z_<e><R>` or `Z_<d><R'>`, holding `E`'s keys in column `Z_<e><R'>`
    /// and `D`'s in `Z_<d><R>`. The layout is what people who read Apple's
    /// stores report (no fixture shows it), so the table is looked for under
    /// both names and its columns are checked: anything else is a difference.
    private static func joinViews(model: Model, numbers: [Int64], tables: Set<String>, connection: Connection,
                                  naming: inout Naming, differences: inout [String]) throws(AmberError) -> [String] {
        var views: [String] = [], seen: Set<String> = []
        for relationship in declared(model) {
            guard case .joinTable(let table, let mine, let theirs, nil) = relationship.storage, seen.insert(table).inserted else { continue }
            guard let inverseIndex = relationship.inverseIndex else {
                differences.append("\(relationship.description): a to-many without an inverse, whose join table this version does not read")
                continue
            }
            let inverse = model.entities[relationship.destinationIndex].relationships[inverseIndex]
            let (e, d) = (numbers[relationship.entityIndex], numbers[relationship.destinationIndex])
            let nearColumn = "Z_\(e)\(inverse.name.uppercased())", farColumn = "Z_\(d)\(relationship.name.uppercased())"
            let names = ["Z_\(e)\(relationship.name.uppercased())", "Z_\(d)\(inverse.name.uppercased())"]
            guard let found = names.first(where: tables.contains) else {
                differences.append("\(relationship.description): the store has no join table \(names.joined(separator: " or "))")
                continue
            }
            let columns = try Self.columns(of: found, connection)
            guard Set(columns.keys) == [nearColumn, farColumn] else {
                differences.append("\(relationship.description): join table \(found) has columns \(columns.keys.sorted().joined(separator: ", ")), "
                    + "not \(nearColumn) and \(farColumn)")
                continue
            }
            views.append("CREATE TEMP VIEW \(quote(table)) AS SELECT \(nearColumn) AS \(quote(mine)), \(farColumn) AS \(quote(theirs)) "
                + "FROM main.\(quote(found))")
            naming.tables[table] = found
            naming.columns[table] = [mine: nearColumn, theirs: farColumn]
        }
        return views
    }

    /// The SQL of a column's value as Amber's layout stores it. Core Data
    /// writes a decimal as an SQLite number (a REAL unless it is whole);
    /// it reads back as the decimal with the REAL's 15 significant digits,
    /// as Core Data's own reading turns the double into a decimal number.
    private static func expression(_ column: String, type: AttributeType) -> String {
        type == .decimal ? "CASE typeof(\(column)) WHEN 'real' THEN printf('%.15g', \(column)) ELSE \(column) END" : column
    }

    /// The column types Core Data declares for a stored type.
    private static func declaredTypes(_ type: AttributeType) -> [String] {
        switch type {
        case .integer16, .integer32, .integer64, .boolean: ["INTEGER"]
        case .double, .float: ["FLOAT"]
        case .date: ["TIMESTAMP"]
        case .decimal: ["DECIMAL"]
        case .string, .uri: ["VARCHAR"]
        case .binary, .uuid, .transformable, .undefined, .objectID: ["BLOB"]
        }
    }

    /// The columns of `table` in the main database, by name, with their declared types.
    private static func columns(of table: String, _ connection: Connection) throws(AmberError) -> [String: String] {
        let statement = try connection.statement("SELECT name, type FROM pragma_table_info(?, 'main')")
        defer { statement.reset() }
        statement.bind(0, table)
        var columns: [String: String] = [:]
        while try statement.step() { columns[try statement.string(0)] = try statement.string(1) }
        return columns
    }

    /// The text of the first column of `sql`'s first row, if it has one.
    private static func single(_ connection: Connection, _ sql: String) throws(AmberError) -> String? {
        let statement = try connection.statement(sql)
        defer { statement.reset() }
        guard try statement.step(), statement.columnType(0) == SQLITE_TEXT else { return nil }
        return try statement.string(0)
    }
}
