import AmberModel
import AmberTransformers
import AmberValues
import Foundation

/// The rows of one entity that a fetch read, kept compactly: one 16-byte
/// cell per stored value with scalars inline, the bytes of every text and
/// blob in one arena, and decimals and URIs (parsed once, at fetch) in a
/// side list. Reading a row costs no allocation per row; a ``Value`` is made
/// only when asked for, and then without allocating for numbers, dates,
/// Booleans and strings of up to 15 UTF-8 bytes.
///
/// Every stored value was checked against its column's type when it was
/// copied here, so reading one back cannot fail. Immutable once read: objects
/// of one or more contexts may share it, from any thread.
package final class FetchedRows: @unchecked Sendable {
    /// One stored value.
    package struct Cell {
        package enum Kind: UInt8 {
            case null
            /// `payload` is an integer, a Boolean (0/1) or a Double's bit pattern.
            case scalar
            /// `length` bytes of the arena from offset `payload`.
            case bytes
            /// `payload` indexes `boxes`.
            case boxed
        }

        package var payload: UInt64 = 0
        package var length: UInt32 = 0
        package var kind = Kind.null

        package init() {}
    }

    package let layout: RowLayout
    /// Each row's primary key.
    package let primaryKeys: [Int64]
    /// Each row's version, for optimistic locking.
    package let versions: [Int64]
    /// Each row's entity index, when the fetch can return sub-entities (else empty: all are the mapping's).
    private let entities: [Int32]
    /// Row after row, one cell per column.
    private let cells: [Cell]
    private let arena: ByteArena
    private let boxes: [Value]
    private let width: Int
    /// By slot, the column of the fetched entity's own rows (`layout.columnOfSlot` of its index).
    private let ownColumns: [Int]

    /// Rows a store read: `cells` row after row, ``RowLayout/types``'s
    /// count to a row, each checked against its column's type as the store
    /// copied it (see ``Cell``); text and blob bytes in `arena`; decimals,
    /// URIs and large values in `boxes`. `entities` holds each row's entity
    /// index when the layout's entity has sub-entities, and is empty otherwise.
    package init(layout: RowLayout, primaryKeys: [Int64], versions: [Int64], entities: [Int32], cells: [Cell], arena: ByteArena,
                 boxes: [Value])
    {
        self.layout = layout
        self.primaryKeys = primaryKeys
        self.versions = versions
        self.entities = entities
        self.cells = cells
        self.arena = arena
        self.boxes = boxes
        self.width = layout.types.count
        self.ownColumns = layout.columnOfSlot[layout.entity.index]
    }

    /// How many rows were read.
    package var count: Int { primaryKeys.count }

    /// The primary key of row `row`.
    package func primaryKey(_ row: Int) -> Int64 { primaryKeys[row] }

    /// The version of row `row`, for optimistic locking.
    package func version(_ row: Int) -> Int64 { versions[row] }

    /// The index in the model of row `row`'s entity (the fetched entity's, or one below it).
    package func entityIndex(_ row: Int) -> Int { entities.isEmpty ? layout.entity.index : Int(entities[row]) }

    /// The stored value in object slot `slot` of row `row`, or nil if the
    /// entity stores nothing in that slot (a transient attribute).
    @inline(__always)
    package func value(_ row: Int, slot: Int) -> Value? {
        let column = column(row, slot: slot)
        guard column >= 0 else { return nil }
        return value(cells[row * width + column], column: column)
    }

    /// Borrows the stored bytes in slot `slot` of row `row` (a text or blob
    /// column), valid while these rows live; nil for any other cell.
    @inline(__always)
    package func storedBytes(_ row: Int, slot: Int) -> UnsafeRawBufferPointer? {
        let column = column(row, slot: slot)
        guard column >= 0 else { return nil }
        let cell = cells[row * width + column]
        guard cell.kind == .bytes else { return nil }
        return arena.bytes(at: Int(cell.payload), count: Int(cell.length))
    }

    /// The column holding slot `slot` of row `row`'s entity (-1: none).
    @inline(__always)
    private func column(_ row: Int, slot: Int) -> Int {
        entities.isEmpty ? ownColumns[slot] : layout.columnOfSlot[Int(entities[row])][slot]
    }

    /// Writes row `row`'s stored values into their slots of `values` (an object's slot array).
    package func read(_ row: Int, into values: inout [Value]) {
        for (slot, column) in layout.columnOfSlot[entityIndex(row)].enumerated() where column >= 0 {
            values[slot] = value(cells[row * width + column], column: column)
        }
    }

    @inline(__always)
    private func value(_ cell: Cell, column: Int) -> Value {
        switch cell.kind {
        case .null: .null
        case .boxed: boxes[Int(cell.payload)]
        case .scalar: layout.value(column: column, scalar: cell.payload, bytes: UnsafeRawBufferPointer(start: nil, count: 0))
        case .bytes: layout.value(column: column, scalar: 0, bytes: arena.bytes(at: Int(cell.payload), count: Int(cell.length)))
        }
    }
}
