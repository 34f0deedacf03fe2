import AmberModel
import AmberValues
import Foundation

/// The columns a fetch of one entity reads, whatever the store: the
/// entity's stored attributes and to-one keys, then those only its
/// sub-entities have, with their stored types and, per entity of the
/// subtree, which column fills each object slot. Every store reads rows into
/// ``FetchedRows`` in this order, so contexts read any store's rows alike.
package struct RowLayout: Sendable {
    /// The fetched entity (its sub-entities' rows come with it).
    package let entity: Entity
    /// The column names, in fetch order.
    package let names: [String]
    /// Each column's stored type.
    package let types: [AttributeType]
    /// By entity index (this entity and those below it), by object slot, the
    /// column that stores it (-1 for slots not stored); empty for other entities.
    package let columnOfSlot: [[Int]]

    /// Text and blobs from this size on are kept as values of their own, not
    /// in a fetch's byte arena: reading one then hands out that value, so a
    /// large value is in memory at most twice (the store's buffer and the
    /// value) while it is fetched and once after.
    package static var largeValueBytes: Int { 64 * 1024 }

    /// The layout of `entity`'s rows in `model`.
    package init(entity: Entity, model: Model) {
        self.entity = entity
        let subtree = entity.subentityIndices.map { model.entities[$0] }
        var names = entity.columns.map(\.name), types = entity.columns.map(\.type)
        for column in subtree.flatMap(\.columns) where !names.contains(column.name) {
            names.append(column.name)
            types.append(column.type)
        }
        (self.names, self.types) = (names, types)
        var columnOfSlot = [[Int]](repeating: [], count: model.entities.count)
        for member in subtree {
            var map = [Int](repeating: -1, count: member.slotCount)
            for column in member.columns { map[column.slot] = names.firstIndex(of: column.name) ?? -1 }
            columnOfSlot[member.index] = map
        }
        self.columnOfSlot = columnOfSlot
    }

    /// The value of a cell of column `column` that a store filled with a
    /// scalar or bytes (already checked): integers and Booleans as `Int64`
    /// bit patterns, Doubles, Floats (as the Double of a Float) and dates
    /// (seconds since 2001) as Double bit patterns; strings, binaries and
    /// UUIDs (16 bytes) as bytes.
    package func value(column: Int, scalar: UInt64, bytes: UnsafeRawBufferPointer) -> Value {
        switch types[column] {
        case .integer16, .integer32, .integer64: .int(Int64(bitPattern: scalar))
        case .boolean: .bool(scalar != 0)
        case .double: .double(Double(bitPattern: scalar))
        // Floats were stored as the Double of a Float, so this is exact.
        case .float: .float(Float(Double(bitPattern: scalar)))
        case .date: .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: scalar)))
        case .string: bytes.withMemoryRebound(to: UInt8.self) { .string(String(decoding: $0, as: UTF8.self)) }
        case .binary: .binary(Data(bytes))
        case .uuid: .uuid(UUID(uuid: bytes.loadUnaligned(as: uuid_t.self)))
        case .decimal, .uri, .transformable, .undefined, .objectID: .null  // never stored as scalars or bytes
        }
    }
}
