import AmberModel
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
/// persistent attribute, named as the attribute.
final class TableMapping {
    let entity: Entity
    let table: String
    /// `_pk, _version, "a", "b", …` — the select list for fetching objects.
    let selectColumns: String
    let insertSQL: String
    let updateSQL: String
    let deleteSQL: String
    /// The stored columns, in order.
    let columns: [Column]
    /// Each column's object slot and stored type, in column order: the hot
    /// loops read these plain arrays rather than copying `Column`s (whose
    /// name would be retained and released per row).
    let slots: [Int]
    let types: [AttributeType]

    /// Bookkeeping columns come first in every select: pk, then version.
    static let bookkeepingCount: Int32 = 2

    init(entity: Entity) {
        self.entity = entity
        self.table = quote(entity.name)
        self.columns = entity.columns
        self.slots = entity.columns.map(\.slot)
        self.types = entity.columns.map(\.type)
        let names = columns.map { quote($0.name) }
        selectColumns = (["_pk", "_version"] + names).joined(separator: ", ")
        let placeholders = Array(repeating: "?", count: names.count + 1).joined(separator: ", ")
        insertSQL = "INSERT INTO \(table) (_entity, \(names.joined(separator: ", "))) VALUES (\(placeholders))"
        let assignments = names.map { "\($0) = ?" } + ["_version = _version + 1"]
        updateSQL = "UPDATE \(table) SET \(assignments.joined(separator: ", ")) WHERE _pk = ? AND _version = ?"
        deleteSQL = "DELETE FROM \(table) WHERE _pk = ? AND _version = ?"
    }

    /// CREATE statements for the table, its indexes and unique constraints.
    var createSQL: [String] {
        var definitions = ["_pk INTEGER PRIMARY KEY", "_entity INTEGER NOT NULL", "_version INTEGER NOT NULL DEFAULT 1"]
        definitions += columns.map { "\(quote($0.name)) \(Self.columnType($0.type))" }
        for constraint in entity.uniquenessConstraints {
            definitions.append("CONSTRAINT \(quote(Self.constraintName(entity: entity, constraint))) UNIQUE (\(constraint.map { quote($0.name) }.joined(separator: ", ")))")
        }
        var sql = ["CREATE TABLE \(table) (\(definitions.joined(separator: ", ")))"]
        for attribute in entity.persistentAttributes where attribute.isIndexed {
            sql.append("CREATE INDEX \(quote("\(entity.name)_\(attribute.name)_index")) ON \(table) (\(quote(attribute.name)))")
        }
        for (i, index) in entity.indexes.enumerated() {
            sql.append("CREATE INDEX \(quote("\(entity.name)_index\(i)")) ON \(table) (\(index.map { quote($0.name) }.joined(separator: ", ")))")
        }
        return sql
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
        case .custom(let c): c.bytes.withUnsafeBytes { statement.bind(index, bytes: $0) }
        case .bool(let b): statement.bind(index, b ? Int64(1) : 0)
        case .int(let i): statement.bind(index, i)
        case .double(let d): statement.bind(index, d)
        case .float(let f): statement.bind(index, Double(f))
        case .string(let s): statement.bind(index, s)
        case .binary(let d): d.withUnsafeBytes { statement.bind(index, bytes: $0) }
        case .date(let d): statement.bind(index, d.timeIntervalSinceReferenceDate)
        case .decimal(let d): statement.bind(index, d.description)
        case .uuid(let u): withUnsafeBytes(of: u.uuid) { statement.bind(index, bytes: $0) }
        case .uri(let u): statement.bind(index, u.absoluteString)
        }
    }

    /// Reads column `index` as a value of `attribute`'s type; a stored value
    /// of the wrong storage class (written by another tool) is an error naming
    /// the attribute.
    func read(column: Int, at index: Int32, from statement: Statement) throws(AmberError) -> Value {
        let storage = statement.columnType(index)
        if storage == SQLITE_NULL { return .null }
        let type = types[column]
        func corrupt(_ what: String) -> AmberError {
            .invalidValue(place: "\(entity.name).\(columns[column].name)", expected: "a stored \(type)", given: what)
        }
        switch type {
        case .integer16, .integer32, .integer64:
            guard storage == SQLITE_INTEGER else { throw corrupt("a value of SQLite type \(storage)") }
            let value = statement.int64(index)
            guard type.integerRange?.contains(value) ?? false else { throw corrupt("\(value), out of range") }
            return .int(value)
        case .boolean:
            guard storage == SQLITE_INTEGER else { throw corrupt("a value of SQLite type \(storage)") }
            return .bool(statement.int64(index) != 0)
        case .double, .float, .date:
            guard storage == SQLITE_FLOAT || storage == SQLITE_INTEGER else { throw corrupt("a value of SQLite type \(storage)") }
            let d = statement.double(index)
            switch type {
            case .float: return .float(Float(d))
            case .date: return .date(Date(timeIntervalSinceReferenceDate: d))
            default: return .double(d)
            }
        case .string:
            guard storage == SQLITE_TEXT else { throw corrupt("a value of SQLite type \(storage)") }
            return .string(statement.string(index))
        case .decimal:
            let text = statement.string(index)
            guard let decimal = ValueFormat.parseDecimal(text) else { throw corrupt("\"\(text)\"") }
            return .decimal(decimal)
        case .uri:
            let text = statement.string(index)
            guard let url = Value.exactURI(text) else { throw corrupt("\"\(text)\"") }
            return .uri(url)
        case .binary:
            guard storage == SQLITE_BLOB else { throw corrupt("a value of SQLite type \(storage)") }
            return .binary(statement.data(index))
        case .uuid:
            guard storage == SQLITE_BLOB else { throw corrupt("a value of SQLite type \(storage)") }
            return try statement.withBytes(index) { (bytes) throws(AmberError) -> Value in
                guard bytes.count == 16 else { throw corrupt("\(bytes.count) bytes") }
                var uuid = UUID().uuid
                withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: bytes) }
                return .uuid(UUID(uuid: uuid))
            }
        case .transformable, .undefined, .objectID:
            throw corrupt("a column of a type this version cannot read")
        }
    }
}

/// Quotes an SQL identifier. Model names are already restricted to letters,
/// digits and underscores; quoting keeps SQL keywords (`order`, `group`) usable.
func quote(_ identifier: String) -> String {
    "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}
