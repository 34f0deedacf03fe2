import AmberModel
import AmberSQL
import AmberStore
import AmberValues
import CSQLite
import Foundation

/// SQLite's side of a table mapping: values bound to parameters and read from columns.
extension TableMapping {
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
    static var largeValueBytes: Int { RowLayout.largeValueBytes }

    /// Copies column `index` of the current row into `cell` (text and blob
    /// bytes appended to `arena`, or from ``largeValueBytes`` on boxed as
    /// values, decimals and URIs parsed into `boxes`),
    /// checking that it is a stored value of the column's type: a value of
    /// the wrong storage class, out of range or malformed (written by another
    /// tool) is an error naming the attribute.
    func copy(column: Int, at index: Int32, from statement: Statement, into cell: inout FetchedRows.Cell,
              arena: ByteArena, boxes: inout [Value]) throws(AmberError)
    {
        try copy(column: column, from: try statement.value(index), into: &cell, arena: arena, boxes: &boxes)
    }

    /// What SQLite holds, in words: "text", "a blob", "an integer", "a real".
    static func storageName(_ storage: Int32) -> String {
        switch storage {
        case SQLITE_INTEGER: "an integer"
        case SQLITE_FLOAT: "a real number"
        case SQLITE_TEXT: "text"
        case SQLITE_BLOB: "a blob"
        default: "a value of SQLite storage class \(storage)"
        }
    }

    /// ``copy(column:at:from:into:arena:boxes:)`` from any SQLite value: a
    /// column of a row, or an SQL function's argument.
    func copy(column: Int, from source: SQLiteValue, into cell: inout FetchedRows.Cell, arena: ByteArena,
              boxes: inout [Value]) throws(AmberError)
    {
        let storage = source.storageClass
        if storage == SQLITE_NULL { return }
        let type = types[column]
        func corrupt(_ what: String) -> AmberError {
            .invalidValue(place: "\(entity.name).\(fetchNames[column])", expected: "a stored \(type)", given: what)
        }
        // Two storage classes at most, not a variadic list: an array per cell read costs the fetch.
        func require(_ storage1: Int32, or storage2: Int32 = SQLITE_NULL) throws(AmberError) {
            guard storage == storage1 || storage == storage2 else { throw corrupt(Self.storageName(storage)) }
        }
        switch type {
        case .integer16, .integer32, .integer64, .boolean:
            try require(SQLITE_INTEGER)
            let value = source.int64
            let range = type == .boolean ? 0...1 : type.integerRange ?? 0...0
            if !range.contains(value) { throw corrupt("\(value), out of range") }
            cell.payload = UInt64(bitPattern: value)
            cell.kind = .scalar
        case .double, .float, .date:
            try require(SQLITE_FLOAT, or: SQLITE_INTEGER)
            let value = source.double
            // Exact or refused: an integer beyond 2^53, or a Double no Float equals, would read back changed.
            if storage == SQLITE_INTEGER, Int64(exactly: value) != source.int64 { throw corrupt("\(source.int64), not exact as a Double") }
            if type == .float, !value.isNaN, Double(Float(value)) != value { throw corrupt("\(value), not exact as a Float") }
            cell.payload = value.bitPattern
            cell.kind = .scalar
        case .string, .binary, .uuid:
            try require(type == .string ? SQLITE_TEXT : SQLITE_BLOB)
            let bytes = try source.bytes()
            if type == .uuid, bytes.count != 16 { throw corrupt("\(bytes.count) bytes") }
            if type == .string, !String.isValidUTF8(bytes) { throw corrupt("text that is not valid UTF-8") }
            if bytes.count >= Self.largeValueBytes {
                // Its own value at once: read later, it is handed out without another copy.
                cell.payload = UInt64(boxes.count)
                cell.kind = .boxed
                boxes.append(type == .string ? .string(String(decoding: bytes, as: UTF8.self)) : .binary(Data(bytes)))
                return
            }
            cell.payload = UInt64(arena.append(bytes))
            cell.length = UInt32(bytes.count)
            cell.kind = .bytes
        case .decimal, .uri:
            let text = String(decoding: try source.bytes(), as: UTF8.self)
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

/// A value SQLite holds, read through its `sqlite3_value`: a column of the
/// current row (`sqlite3_column_value`'s unprotected value, read only while
/// the store holds the connection, as every statement it runs is: a cell
/// then costs one column lookup instead of one per call), or an SQL
/// function's argument.
struct SQLiteValue {
    let value: OpaquePointer
    /// The column it was read from, or nil for a function's argument (for an out-of-memory error).
    let column: Int32?

    /// SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB or SQLITE_NULL.
    var storageClass: Int32 { sqlite3_value_type(value) }
    var int64: Int64 { sqlite3_value_int64(value) }
    var double: Double { sqlite3_value_double(value) }

    /// The bytes of text or a blob (empty for NULL), SQLite's own: valid
    /// until the row moves on or the function returns.
    ///
    /// - Throws: SQLite's out-of-memory error if it could not produce them.
    func bytes() throws(AmberError) -> UnsafeRawBufferPointer {
        // The type before the call: a number is converted to text, which is never empty.
        let storage = storageClass
        let number = storage == SQLITE_INTEGER || storage == SQLITE_FLOAT
        let blob = sqlite3_value_blob(value)
        let count = Int(sqlite3_value_bytes(value))
        if blob == nil, count > 0 || number {
            throw .sqlite(code: SQLITE_NOMEM, message: "out of memory reading "
                + (column.map { "column \($0 + 1) of a row" } ?? "an SQL function's argument"))
        }
        return UnsafeRawBufferPointer(start: blob, count: count)
    }
}

extension FetchQuery {
    /// The prepared statement with every parameter bound; `keys`, if given,
    /// replace those the query was compiled with.
    func prepare(on connection: Connection, keys: [Int64]? = nil) throws(AmberError) -> Statement {
        let statement = try connection.statement(sql)
        for (i, value) in bindings.enumerated() { TableMapping.bind(value, at: Int32(i), in: statement) }
        if let keys, let keysIndex {
            TableMapping.bind(singleKey ? .int(keys.first ?? 0) : .string(SQLiteStore.jsonArray(keys)), at: keysIndex, in: statement)
        }
        return statement
    }
}
