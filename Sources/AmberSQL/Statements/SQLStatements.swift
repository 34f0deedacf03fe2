import AmberValues

/// Runs the statements of the work every SQL store shares (batch changes,
/// migrations): each store binds and steps through its own driver.
package protocol SQLStatements {
    /// Runs `statement`; returns how many rows it changed.
    @discardableResult
    func run(_ statement: SQLFragment) throws(AmberError) -> Int
    /// The first `width` columns, as integers, of every row `statement` returns.
    func integers(_ statement: SQLFragment, width: Int) throws(AmberError) -> [[Int64]]
    /// The first column, as text, of every row `statement` returns.
    func texts(_ statement: SQLFragment) throws(AmberError) -> [String]
}

extension SQLStatements {
    /// The first column of the first row `sql` returns, as an integer (0 for none).
    package func integer(_ sql: String, _ bindings: [Value] = []) throws(AmberError) -> Int64 {
        try integers(SQLFragment(sql: sql, bindings: bindings), width: 1).first?.first ?? 0
    }
}
