import AmberModel
import AmberSQL
import AmberStore
import AmberValues
import Foundation

extension FetchedRows {
    /// Reads every row of `rows` (selecting ``TableMapping/selectColumns``), in the server's text form.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidValue(place:expected:given:)`` naming the
    ///   attribute and row, for a stored value that does not fit its
    ///   attribute (a row another program wrote, a column altered behind Amber's back).
    convenience init(reading rows: PGRows, mapping: TableMapping) throws(AmberError) {
        let binary = rows.isBinary(0)
        var primaryKeys: [Int64] = [], versions: [Int64] = [], entities: [Int32] = [], cells: [Cell] = []
        let arena = ByteArena()
        var boxes: [Value] = []
        let width = mapping.types.count
        let mixed = mapping.entity.subentityIndices.count > 1
        primaryKeys.reserveCapacity(rows.count)
        versions.reserveCapacity(rows.count)
        cells.reserveCapacity(rows.count * width)
        for row in 0..<rows.count {
            let key = rows.int64(row, 0)
            primaryKeys.append(key)
            versions.append(rows.int64(row, 1))
            if mixed { entities.append(try mapping.fetchedEntity(code: rows.int64(row, 2), key: key)) }
            for column in 0..<width {
                var cell = Cell()
                let index = column + Int(TableMapping.bookkeepingCount)
                if !rows.isNull(row, index) {
                    do throws(AmberError) {
                        try rows.withBytes(row, index) { (bytes) throws(AmberError) in
                            if binary {
                                try mapping.copy(binary: bytes, column: column, into: &cell, arena: arena, boxes: &boxes)
                            } else {
                                try mapping.copy(text: bytes, column: column, into: &cell, arena: arena, boxes: &boxes)
                            }
                        }
                    } catch .invalidValue(let place, let expected, let given) {
                        throw .invalidValue(place: "\(place) of row \(key)", expected: expected, given: given)
                    }
                }
                cells.append(cell)
            }
        }
        self.init(layout: mapping.layout, primaryKeys: primaryKeys, versions: versions, entities: entities, cells: cells,
                  arena: arena, boxes: boxes)
    }
}

extension TableMapping {
    /// Values this long or longer are kept as their own ``Value`` at once.
    static let largeValueBytes = 256

    /// The error for a stored value of column `column` that does not fit its type.
    private func corruption(column: Int, given what: String) -> AmberError {
        .invalidValue(place: "\(entity.name).\(fetchNames[column])", expected: "a stored \(types[column])", given: what)
    }

    /// Copies a value in PostgreSQL's text form into `cell`, checked against
    /// column `column`'s type: exact or refused, as from SQLite.
    func copy(text: UnsafeBufferPointer<UInt8>, column: Int, into cell: inout FetchedRows.Cell,
              arena: ByteArena, boxes: inout [Value]) throws(AmberError)
    {
        let type = types[column]
        func corrupt(_ what: String) -> AmberError { corruption(column: column, given: what) }
        var string: String { String(decoding: text, as: UTF8.self) }
        func keep(_ bytes: some Collection<UInt8>, boxed: @autoclosure () -> Value) { cell.keep(bytes, boxed: boxed(), arena: arena, boxes: &boxes) }
        switch type {
        case .boolean:
            guard text.count == 1, text[0] == UInt8(ascii: "t") || text[0] == UInt8(ascii: "f") else { throw corrupt("\"\(string)\"") }
            cell.payload = text[0] == UInt8(ascii: "t") ? 1 : 0
            cell.kind = .scalar
        case .integer16, .integer32, .integer64:
            guard let value = Int64(string), (type.integerRange ?? 0...0).contains(value) else { throw corrupt("\"\(string)\"") }
            cell.payload = UInt64(bitPattern: value)
            cell.kind = .scalar
        case .double, .float, .date:
            // A real's text is the shortest that reads back as the same Float, so it is read as one.
            guard let value = type == .float ? Float(string).map(Double.init) : Double(string) else { throw corrupt("\"\(string)\"") }
            cell.payload = value.bitPattern
            cell.kind = .scalar
        case .string:
            keep(text, boxed: .string(string))
        case .uuid:
            guard let uuid = UUID(uuidString: string) else { throw corrupt("\"\(string)\"") }
            keep(withUnsafeBytes(of: uuid.uuid) { Array($0) }, boxed: .uuid(uuid))
        case .binary:
            guard let bytes = Self.bytea(text) else { throw corrupt("bytea text that is not hex") }
            keep(bytes, boxed: .binary(Data(bytes)))
        case .decimal, .uri:
            let parsed = type == .decimal ? ScaledDecimal(string).map(Value.decimal) : Value.exactURI(string).map(Value.uri)
            guard let parsed else { throw corrupt("\"\(string)\"") }
            cell.payload = UInt64(boxes.count)
            cell.kind = .boxed
            boxes.append(parsed)
        case .transformable, .undefined, .objectID:
            throw corrupt("a column of a type this version cannot read")
        }
    }

    /// Copies a value in its binary form into `cell`, as ``copy(text:column:into:arena:boxes:)``
    /// does its text; the caller checked that the column is of the type
    /// the attribute's values are stored as (``binaryTypesMatch(_:)``).
    func copy(binary bytes: UnsafeBufferPointer<UInt8>, column: Int, into cell: inout FetchedRows.Cell,
              arena: ByteArena, boxes: inout [Value]) throws(AmberError)
    {
        let type = types[column]
        func corrupt(_ what: String) -> AmberError { corruption(column: column, given: what) }
        func keep(_ bytes: UnsafeBufferPointer<UInt8>, boxed: @autoclosure () -> Value) { cell.keep(bytes, boxed: boxed(), arena: arena, boxes: &boxes) }
        switch type {
        case .boolean:
            guard bytes.count == 1, bytes[0] <= 1 else { throw corrupt("\(bytes.count) bytes of a boolean") }
            cell.payload = UInt64(bytes[0])
            cell.kind = .scalar
        case .integer16, .integer32, .integer64:
            guard let value = PGBinary.integer(bytes), (type.integerRange ?? 0...0).contains(value) else { throw corrupt("\(bytes.count) bytes of an integer") }
            cell.payload = UInt64(bitPattern: value)
            cell.kind = .scalar
        case .double, .float, .date:
            guard let value = PGBinary.real(bytes) else { throw corrupt("\(bytes.count) bytes of a floating-point number") }
            cell.payload = value.bitPattern
            cell.kind = .scalar
        case .string:
            keep(bytes, boxed: .string(String(decoding: bytes, as: UTF8.self)))
        case .uuid:
            guard bytes.count == 16 else { throw corrupt("\(bytes.count) bytes of a UUID") }
            keep(bytes, boxed: .uuid(UUID(uuid: UnsafeRawBufferPointer(bytes).loadUnaligned(as: uuid_t.self))))
        case .binary:
            keep(bytes, boxed: .binary(Data(buffer: bytes)))
        case .decimal, .uri:
            let parsed = type == .decimal ? PGBinary.numericText(bytes).flatMap(ScaledDecimal.init).map(Value.decimal)
                : Value.exactURI(String(decoding: bytes, as: UTF8.self)).map(Value.uri)
            guard let parsed else { throw corrupt(type == .decimal ? "a numeric Amber cannot hold" : "\"\(String(decoding: bytes, as: UTF8.self))\"") }
            cell.payload = UInt64(boxes.count)
            cell.kind = .boxed
            boxes.append(parsed)
        case .transformable, .undefined, .objectID:
            throw corrupt("a column of a type this version cannot read")
        }
    }

    /// Whether the columns of `rows` (selecting ``selectColumns``) are of the
    /// types this mapping stores, so their binary forms are the ones
    /// ``copy(binary:column:into:arena:boxes:)`` reads; a table altered
    /// behind Amber's back is read in text instead, which names what it found.
    func binaryTypesMatch(_ rows: PGRows) -> Bool {
        let bookkeeping = Int(Self.bookkeepingCount)
        return (0..<bookkeeping).allSatisfy { rows.type($0) == PGType.int8 }
            && types.indices.allSatisfy { rows.type($0 + bookkeeping) == PostgreSQLDialect.column(types[$0]).oid }
    }

    /// The bytes of `bytea`'s hex text form (`\x0a1b…`), or nil for other text.
    static func bytea(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard text.count >= 2, text.count % 2 == 0, text[0] == UInt8(ascii: "\\"), text[1] == UInt8(ascii: "x") else { return nil }
        func nibble(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count / 2 - 1)
        var index = 2
        while index < text.count {
            guard let high = nibble(text[index]), let low = nibble(text[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}

extension SortValue {
    /// Column `column` of row `row` of `rows`, ordered as PostgreSQL
    /// orders its type: numbers (and dates) by value, text by its bytes
    /// (the store sorts text with the "C" collation), binary values by
    /// theirs; an extended attribute's `amber_value` (type `extendedType`)
    /// as its number or its text.
    init(_ rows: PGRows, row: Int, column: Int, extendedType: UInt32?) {
        guard !rows.isNull(row, column) else {
            self = .null
            return
        }
        let text = rows.text(row, column)
        if let extendedType, rows.type(column) == extendedType {
            self = Self(extendedValue: text)
            return
        }
        switch rows.type(column) {
        case PGType.bool: self = .integer(text == "t" ? 1 : 0)
        case PGType.int2, PGType.int4, PGType.int8: self = .integer(Int64(text) ?? 0)
        case PGType.float4, PGType.float8, PGType.numeric: self = .real(Double(text) ?? .nan)
        case PGType.bytea:
            self = .blob(text.utf8.withContiguousStorageIfAvailable { TableMapping.bytea($0) ?? [] } ?? [])
        case PGType.uuid: self = .blob(UUID(uuidString: text).map { u in withUnsafeBytes(of: u.uuid) { Array($0) } } ?? [])
        default: self = .text(Array(text.utf8))
        }
    }
}

extension SortValue {
    /// An `amber_value` in the server's record text, `(k,n,t)`: kind 1 a
    /// number, kind 2 text (quoted when it holds a comma, quote, backslash,
    /// parenthesis or space, with `""` and `\\` inside the quotes).
    init(extendedValue record: String) {
        let characters = Array(record.dropFirst().dropLast())
        var fields: [String] = [], field = "", quoted = false, index = 0
        while index < characters.count {
            let character = characters[index]
            index += 1
            if quoted {
                switch character {
                case "\\" where index < characters.count:
                    field.append(characters[index])
                    index += 1
                case "\"" where index < characters.count && characters[index] == "\"":
                    field.append("\"")
                    index += 1
                case "\"": quoted = false
                default: field.append(character)
                }
            } else if character == "," {
                fields.append(field)
                field = ""
            } else if character == "\"" {
                quoted = true
            } else {
                field.append(character)
            }
        }
        fields.append(field)
        guard fields.count == 3 else {
            self = .text(Array(record.utf8))
            return
        }
        self = fields[0] == "1" ? .real(Double(fields[1]) ?? .nan) : .text(Array(fields[2].utf8))
    }
}

/// The type OIDs of PostgreSQL's built-in types Amber's columns use (`pg_type.h`).
enum PGType {
    static let bool: UInt32 = 16, bytea: UInt32 = 17, int8: UInt32 = 20, int2: UInt32 = 21, int4: UInt32 = 23
    static let float4: UInt32 = 700, float8: UInt32 = 701, numeric: UInt32 = 1700, uuid: UInt32 = 2950
}

extension FetchedRows.Cell {
    /// Holds `bytes` in `arena`, or, from ``TableMapping/largeValueBytes`` on, as its own value in `boxes`.
    mutating func keep(_ bytes: some Collection<UInt8>, boxed: @autoclosure () -> Value, arena: ByteArena, boxes: inout [Value]) {
        if bytes.count >= TableMapping.largeValueBytes {
            payload = UInt64(boxes.count)
            kind = .boxed
            boxes.append(boxed())
            return
        }
        payload = UInt64(arena.append(contentsOf: bytes))
        length = UInt32(bytes.count)
        kind = .bytes
    }
}
