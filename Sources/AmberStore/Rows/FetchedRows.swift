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
    private let primaryKeys: [Int64]
    private let versions: [Int64]
    /// Each row's entity index, when the fetch can return sub-entities (else empty: all are the mapping's).
    private let entities: [Int32]
    /// Row after row, one cell per column.
    private let cells: [Cell]
    private let arena: [UInt8]
    private let boxes: [Value]
    private let width: Int

    /// Rows a store read: `cells` row after row, ``RowLayout/types``'s
    /// count to a row, each checked against its column's type as the store
    /// copied it (see ``Cell``); text and blob bytes in `arena`; decimals,
    /// URIs and large values in `boxes`. `entities` holds each row's entity
    /// index when the layout's entity has sub-entities, and is empty otherwise.
    package init(layout: RowLayout, primaryKeys: [Int64], versions: [Int64], entities: [Int32], cells: [Cell], arena: [UInt8], boxes: [Value]) {
        self.layout = layout
        self.primaryKeys = primaryKeys
        self.versions = versions
        self.entities = entities
        self.cells = cells
        self.arena = arena
        self.boxes = boxes
        self.width = layout.types.count
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
    package func value(_ row: Int, slot: Int) -> Value? {
        let column = layout.columnOfSlot[entityIndex(row)][slot]
        guard column >= 0 else { return nil }
        return value(cells[row * width + column], column: column)
    }

    /// Decodes the stored bytes in slot `slot` of row `row` (a text or blob
    /// column) with `decode`; nil, without calling it, for any other cell.
    /// Not generic: called once per decoded value from another module, where
    /// a generic call would look up type metadata each time.
    package func decode(_ row: Int, slot: Int, _ decode: (UnsafeRawBufferPointer) throws(TransformerFailure) -> Value?)
        throws(TransformerFailure) -> Value?
    {
        let column = layout.columnOfSlot[entityIndex(row)][slot]
        guard column >= 0 else { return nil }
        let cell = cells[row * width + column]
        guard cell.kind == .bytes else { return nil }
        let start = Int(cell.payload)
        // Array's withUnsafeBytes rethrows untyped errors: carry the typed one out in a Result.
        let result = arena.withUnsafeBytes { arena in
            Result { () throws(TransformerFailure) -> Value? in
                try decode(UnsafeRawBufferPointer(rebasing: arena[start..<start + Int(cell.length)]))
            }
        }
        return try result.get()
    }

    /// Writes row `row`'s stored values into their slots of `values` (an object's slot array).
    package func read(_ row: Int, into values: inout [Value]) {
        for (slot, column) in layout.columnOfSlot[entityIndex(row)].enumerated() where column >= 0 {
            values[slot] = value(cells[row * width + column], column: column)
        }
    }

    private func value(_ cell: Cell, column: Int) -> Value {
        switch cell.kind {
        case .null: return .null
        case .boxed: return boxes[Int(cell.payload)]
        case .scalar: return layout.value(column: column, scalar: cell.payload, bytes: UnsafeBufferPointer(start: nil, count: 0))
        case .bytes:
            let start = Int(cell.payload)
            return arena.withUnsafeBufferPointer { arena in
                layout.value(column: column, scalar: 0, bytes: UnsafeBufferPointer(rebasing: arena[start..<start + Int(cell.length)]))
            }
        }
    }
}
