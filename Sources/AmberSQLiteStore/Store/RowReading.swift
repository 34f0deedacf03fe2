import AmberModel
import AmberSQL
import AmberStore
import AmberValues
import CSQLite

extension FetchedRows {
    /// Reads every row `statement` (selecting ``TableMapping/selectColumns``) returns.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidValue(place:expected:given:)`` naming the
    ///   attribute, for a stored value of the wrong kind (a corrupt or foreign
    ///   row); an SQLite error.
    convenience init(reading statement: Statement, mapping: TableMapping) throws(AmberError) {
        var primaryKeys: [Int64] = [], versions: [Int64] = [], entities: [Int32] = [], cells: [Cell] = []
        let arena = ByteArena()
        var boxes: [Value] = []
        let width = mapping.types.count, first = TableMapping.bookkeepingCount
        let mixed = mapping.entity.subentityIndices.count > 1
        while try statement.step() {
            primaryKeys.append(statement.int64(0))
            versions.append(statement.int64(1))
            if mixed { entities.append(try mapping.fetchedEntity(code: statement.int64(2), key: statement.int64(0))) }
            for column in 0..<width {
                var cell = Cell()
                do throws(AmberError) {
                    try mapping.copy(column: column, at: Int32(column) + first, from: statement, into: &cell, arena: arena, boxes: &boxes)
                } catch .invalidValue(let place, let expected, let given) {
                    // Which row: the one another tool wrote wrongly, to mend or delete.
                    throw .invalidValue(place: "\(place) of row \(statement.int64(0))", expected: expected, given: given)
                }
                cells.append(cell)
            }
        }
        self.init(layout: mapping.layout, primaryKeys: primaryKeys, versions: versions, entities: entities, cells: cells,
                  arena: arena, boxes: boxes)
    }
}

extension SortValue {
    /// Column `column` of `statement`'s current row, as SQLite holds it.
    init(_ statement: Statement, column: Int32) throws(AmberError) {
        switch statement.columnType(column) {
        case SQLITE_INTEGER: self = .integer(statement.int64(column))
        case SQLITE_FLOAT: self = .real(statement.double(column))
        case SQLITE_TEXT: self = .text(try statement.withBytes(column) { Array($0) })
        case SQLITE_BLOB: self = .blob(try statement.withBytes(column) { Array($0) })
        default: self = .null
        }
    }
}
