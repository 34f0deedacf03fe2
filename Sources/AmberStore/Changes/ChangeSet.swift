import AmberModel
import AmberValues
import Foundation

/// Provisional keys → the primary keys a save gave their new rows. A large
/// save looks one up per link to a new object, twice (to write the row, then
/// to rewrite the object's slot). Provisional keys come from one counter, so
/// a save's are usually close together: then they index an array down from
/// the highest, which costs a subtraction where a dictionary's seeded hash
/// cost a twentieth of the save; keys spread wider than four slots per key
/// fall back to a dictionary.
package struct ProvisionalKeys {
    /// By `highest - key`: the primary key, 0 for none (primary keys start at 1).
    private var dense: [Int64] = []
    /// The highest provisional key, where `dense` starts.
    private var highest: Int64 = 0
    private var sparse: [Int64: Int64] = [:]

    package init() {}

    /// The map of `pairs` (provisional key, primary key).
    package init(_ pairs: [(key: Int64, primaryKey: Int64)]) {
        guard let high = pairs.map(\.key).max(), let low = pairs.map(\.key).min() else { return }
        let span = high.subtractingReportingOverflow(low)
        guard !span.overflow, span.partialValue < Int64(pairs.count) * 4 + 64 else {
            sparse = Dictionary(pairs.map { ($0.key, $0.primaryKey) }, uniquingKeysWith: { _, last in last })
            return
        }
        highest = high
        dense = [Int64](repeating: 0, count: Int(span.partialValue) + 1)
        for (key, primaryKey) in pairs { dense[Int(high - key)] = primaryKey }
    }

    package var isEmpty: Bool { dense.isEmpty && sparse.isEmpty }

    /// The primary key of provisional `key`, if this save gave it one.
    package subscript(key: Int64) -> Int64? {
        guard !dense.isEmpty else { return sparse[key] }
        let (offset, overflow) = highest.subtractingReportingOverflow(key)
        guard !overflow, offset >= 0, offset < Int64(dense.count), dense[Int(offset)] != 0 else { return nil }
        return dense[Int(offset)]
    }
}


/// The primary keys a save gave its new rows.
package struct WrittenKeys {
    /// By position in ``ChangeSet/inserts``.
    package var keys: [Int64] = []
    /// Provisional key → primary key, for the ``ChangeSet/linkTargets``.
    package var provisional = ProvisionalKeys()
    /// The updated objects whose conflicts a merge policy settled, by object identity.
    package var resolved: [ObjectIdentifier: Resolution] = [:]
    /// The rows whose derived attributes the save computed anew (saved or
    /// not: an author whose book count moved), with their new versions.
    package var derived: [SavedChanges.Row] = []
    /// The entity index of each row of ``derived`` (a sub-entity's, where the row is one).
    package var derivedEntities: [Int] = []

    package init() {}
}

/// One row of a join table: `source` and `target` as the table names them.
package struct JoinRow: Hashable, Sendable {
    package let table: String
    package let source: Int64
    package let target: Int64

    package init(table: String, source: Int64, target: Int64) {
        (self.table, self.source, self.target) = (table, source, target)
    }
}

/// A member's position in an ordered to-many relationship: in a join table
/// (the row `keyColumn` = `key`, `otherColumn` = `other`), or in the
/// member's own table (`otherColumn` nil: the row `_pk` = `key`).
package struct Position: Sendable {
    package let table: String
    package let keyColumn: String
    package let key: Int64
    package let otherColumn: String?
    package let other: Int64
    package let orderColumn: String
    package let position: Int64

    package init(table: String, keyColumn: String, key: Int64, otherColumn: String?, other: Int64, orderColumn: String, position: Int64) {
        (self.table, self.keyColumn, self.key, self.otherColumn, self.other) = (table, keyColumn, key, otherColumn, other)
        (self.orderColumn, self.position) = (orderColumn, position)
    }
}

/// What the store needs of an object to write its row: the context's objects
/// conform, so a save binds values straight from their slots.
package protocol RowSource: AnyObject {
    /// The row's entity.
    var entity: Entity { get }
    /// The object's ID (its primary key once saved); problems name it.
    var objectID: ObjectID { get }
    /// The object's slots, with every encoded form current (``Entity/columns`` say which slot each column reads).
    var slotValues: [Value] { get }
    /// The slots as last saved or fetched, if the object keeps them (nil:
    /// every column is written).
    var savedSlotValues: [Value]? { get }
    /// The row version last read or written, checked by updates and deletes.
    var rowVersion: Int64 { get }
    /// Whether the stored value in `slot` (a column's slot) was set here
    /// since the row was read: a merge policy decides per key on it.
    func isSetHere(slot: Int) -> Bool
}

/// The rows one save writes.
package struct ChangeSet<Row: RowSource> {
    /// New rows, in the order they are inserted (``add(insert:table:provisionalKey:)``).
    package private(set) var inserts: [Row] = []
    package var updates: [Row] = []
    package var deletes: [Row] = []
    /// Rows of join tables to add (true) or remove (false); keys may be provisional.
    package var links: [JoinRow: Bool] = [:]
    /// Positions of the members of ordered to-many relationships.
    package var positions: [Position] = []
    /// The new rows other rows point at by a provisional key: their table (a
    /// root entity's index) and their place among that table's inserts, so the
    /// writer knows every such key before writing the first row.
    package private(set) var linkTargets: [(key: Int64, table: Int, rank: Int)] = []
    /// Inserts so far per table (root entity index).
    private var insertsPerTable: [Int] = []
    /// Per table, the largest key of a new row that keeps its own (an
    /// object whose deleted row is written again): keys handed out start above it.
    package private(set) var ownKeys: [Int: Int64] = [:]
    /// The saving context merges automatically: under ``MergePolicy/error`` a
    /// row another writer changed between that merge and this write is
    /// settled as the merge would have settled it (per key, values set here
    /// over the stored row; a deletion here stands), under the write lock.
    /// A row deleted elsewhere is still a conflict, as after a merge.
    package var settlesAsAMerge = false

    /// Whether the change set writes nothing: no rows, links or positions.
    package var writesNothing: Bool {
        inserts.isEmpty && updates.isEmpty && deletes.isEmpty && links.isEmpty && positions.isEmpty
    }

    package init() {}

    /// Adds a new row for the table of root entity `table`; `provisionalKey`
    /// is the negative key other rows' slots and join rows hold for it, if any do.
    package mutating func add(insert row: Row, table: Int, provisionalKey: Int64?) {
        inserts.append(row)
        if let key = row.objectID.primaryKey {
            ownKeys[table] = max(ownKeys[table] ?? key, key)
            return
        }
        if table >= insertsPerTable.count { insertsPerTable += repeatElement(0, count: table + 1 - insertsPerTable.count) }
        if let provisionalKey { linkTargets.append((provisionalKey, table, insertsPerTable[table])) }
        insertsPerTable[table] += 1
    }

    /// Lists the link targets again, after more new rows became ones.
    package mutating func findLinkTargets(_ provisionalKey: (Row) -> Int64?) {
        let rows = inserts
        (inserts, linkTargets, insertsPerTable) = ([], [], [])
        for row in rows { add(insert: row, table: row.entity.rootIndex, provisionalKey: provisionalKey(row)) }
    }
}
