import AmberModel
import AmberSQL
import AmberTransformers
import AmberValues
import CSQLite
import Foundation

/// Writing a store Core Data made, as Core Data would: new keys above the
/// root entity's `Z_MAX` (raised as they are taken), versions in `Z_OPT`,
/// entity numbers in `Z_ENT` and beside to-one keys, decimals as SQLite
/// numbers (refused where one would not read back exactly), and values of
/// Amber's archive transformer as `NSKeyedArchiver` archives. The rows
/// themselves go through the SQLite store's writer with ``names``.
extension CoreDataLayout {
    /// The largest key table `table` (a root entity's index) has given: its
    /// `Z_MAX`, or a larger key a row holds.
    func largestKey(ofTable table: Int, _ connection: Connection) throws(AmberError) -> Int64 {
        let statement = try connection.statement("SELECT max(coalesce((SELECT max(Z_PK) FROM \(storedTable(table))), 0), "
            + "coalesce((SELECT Z_MAX FROM main.Z_PRIMARYKEY WHERE Z_ENT = ?), 0))")
        defer { statement.reset() }
        statement.bind(0, entityNumbers[table])
        return try statement.step() ? statement.int64(0) : 0
    }

    /// Keeps the bookkeeping of the rows of `table` (a root entity's index)
    /// with `keys`, just inserted or updated: the root's `Z_MAX` covers
    /// every key, and each destination entity column names the entity of
    /// the row its to-one points at (its `Z_ENT`, or NULL with no link).
    func keep(writtenKeys keys: [Int64], ofTable table: Int, _ connection: Connection) throws(AmberError) {
        guard let largest = keys.max() else { return }
        let maximum = try connection.statement("UPDATE main.Z_PRIMARYKEY SET Z_MAX = max(coalesce(Z_MAX, 0), ?) WHERE Z_ENT = ?")
        maximum.bind(0, largest)
        maximum.bind(1, entityNumbers[table])
        try maximum.run()
        let stored = storedTable(table)
        for column in entityColumns[table] ?? [] {
            let statement = try connection.statement(
                "UPDATE \(stored) SET \(column.column) = (SELECT destination.Z_ENT FROM \(column.destination) AS destination "
                    + "WHERE destination.Z_PK = \(stored).\(column.foreignKey)) WHERE Z_PK IN (SELECT value FROM json_each(?))")
            statement.bind(0, SQLiteStore.jsonArray(keys))
            try statement.run()
        }
    }

    /// `value` of `column` of an `entity` row as this store keeps it: a
    /// decimal as an SQLite number, which holds 15 significant digits (or a
    /// whole number within 64 bits) and no scale, so one that would not read
    /// back as it is (`1.23456789012345678`, `9.90`) is refused; an
    /// external-storage value in the row, after its marker byte; an archive of Amber's
    /// archive transformer as an `NSKeyedArchiver` archive of the same value.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidValue(place:expected:given:)``
    ///   naming `Entity.attribute` for a decimal the store cannot hold exactly
    ///   or an archive that cannot be written as Core Data's.
    func stored(_ value: Value, of column: Column, in entity: Entity, _ connection: Connection) throws(AmberError) -> Value {
        switch value {
        case .decimal(let decimal):
            // SQLite's own reading of the number: the column's affinity, then the view's 15 digits.
            let statement = try connection.statement("SELECT CASE typeof(v) WHEN 'real' THEN printf('%.15g', v) ELSE CAST(v AS TEXT) END "
                + "FROM (SELECT CAST(? AS NUMERIC) AS v)")
            defer { statement.reset() }
            statement.bind(0, decimal.description)
            guard try statement.step() else { throw .invalidValue(place: "\(entity.name).\(column.name)", expected: "a decimal", given: decimal.description) }
            let kept = try statement.string(0)
            guard ScaledDecimal(kept) == decimal else {
                throw .invalidValue(place: "\(entity.name).\(column.name)",
                                    expected: "a decimal that reads back as it is from a Core Data store, which keeps an SQLite number: "
                                        + "15 significant digits (a whole number within 64-bit integers exactly) and no trailing zeros after the point",
                                    given: "\(decimal.description), which would read back as \(kept)")
            }
            return value
        case .binary(var bytes) where archivedColumns[entity.index].contains(column.name) || externalColumns[entity.index].contains(column.name):
            if archivedColumns[entity.index].contains(column.name), !KeyedArchive.looksLikeOne(bytes) {
                do {
                    bytes = try KeyedArchive.archive(try PropertyListArchive.decode(bytes))
                } catch {
                    throw .invalidValue(place: "\(entity.name).\(column.name)", expected: "a value a keyed archive holds", given: "\(error)")
                }
            }
            // Kept in the row, after the marker that says so.
            if externalColumns[entity.index].contains(column.name) { bytes.insert(CoreDataExternalData.inline, at: 0) }
            return .binary(bytes)
        case .null:
            return value
        default:
            // A stored form other than bytes has no place for the marker Core Data reads first.
            guard !externalColumns[entity.index].contains(column.name) else {
                throw .invalidValue(place: "\(entity.name).\(column.name)", expected: "bytes (an external-storage value is binary)",
                                    given: value.className)
            }
            return value
        }
    }

    /// The keys of `logged` rows (``CoreDataDerivedLog``) by table (root entity index), each once.
    func derivedKeys(_ logged: [(table: String, key: Int64)]) -> [Int: [Int64]] {
        var keys: [Int: [Int64]] = [:], seen: Set<[Int64]> = []
        for row in logged {
            guard let table = tableRoots[row.table], seen.insert([Int64(table), row.key]).inserted else { continue }
            keys[table, default: []].append(row.key)
        }
        return keys
    }

    /// The stored table of `table` (a root entity's index), quoted, in `main`.
    private func storedTable(_ table: Int) -> String {
        names.table(entityNames[table])
    }
}
