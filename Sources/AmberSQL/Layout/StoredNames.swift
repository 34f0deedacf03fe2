/// What the tables and columns of Amber's layout are called in a database
/// that keeps them under other names: a store Core Data wrote keeps entity
/// `Car`'s rows in table `ZCAR`, its key in `Z_PK`, its version in `Z_OPT`.
/// Statements that write rows are made with these names; reads go through
/// views of Amber's names (the store's own concern), so the compiler never
/// sees them. Amber's own stores use ``amber``, which renames nothing.
package struct StoredNames: Sendable {
    /// The layout as Amber names it.
    package static let amber = StoredNames()

    /// The schema the stored tables are in (`main`), or nil for the default.
    private let schema: String?
    /// Amber's table name → the stored table's.
    private let tables: [String: String]
    /// Amber's table name → its column names → the stored columns'.
    private let columns: [String: [String: String]]
    /// By entity index, the number a row's entity column holds; nil for Amber's (the index plus one).
    private let entityCodes: [Int64]?

    /// Whether a new row's version column is written (Amber's own tables default it to 1).
    package var writesFirstVersion: Bool { entityCodes != nil }

    private init() {
        (schema, tables, columns, entityCodes) = (nil, [:], [:], nil)
    }

    /// Names for a database that keeps Amber's tables (by Amber's name) as
    /// `tables`, their columns as `columns`, in `schema`, with entity numbers `entityCodes`.
    package init(schema: String, tables: [String: String], columns: [String: [String: String]], entityCodes: [Int64]) {
        (self.schema, self.tables, self.columns, self.entityCodes) = (schema, tables, columns, entityCodes)
    }

    /// The stored table Amber calls `table` (unquoted), quoted and in its schema.
    package func table(_ table: String) -> String {
        let stored = quote(tables[table] ?? table)
        return schema.map { "\($0).\(stored)" } ?? stored
    }

    /// The stored column Amber calls `column` in `table` (both unquoted), quoted.
    package func column(_ column: String, of table: String) -> String {
        quote(columns[table]?[column] ?? column)
    }

    /// The number the entity at model index `index` is stored under.
    package func entityCode(_ index: Int) -> Int64 {
        entityCodes.map { $0[index] } ?? Int64(index + 1)
    }
}
