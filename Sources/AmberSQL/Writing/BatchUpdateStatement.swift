import AmberModel
import AmberStore
import AmberValues

/// The `UPDATE` of a batch update, as every SQL store writes it: each
/// assignment, the version column's new value, and the rows the request
/// picks (by key through its order, limit and offset when it has them).
package struct BatchUpdateStatement {
    package let statement: SQLFragment
    /// ` WHERE …`: the rows the request picks, to select them again.
    package let rows: SQLFragment

    /// - Parameters:
    ///   - version: what `_version` becomes (the store's way of counting and checking rows).
    ///   - returning: what follows the condition (PostgreSQL's `RETURNING …`), or nothing.
    package init(request: FetchRequest, assignments: [BatchAssignment], terms: [SQLFragment], version: SQLFragment,
                 returning: String = "", mapping: TableMapping, model: Model) throws(AmberError)
    {
        let setList = (zip(assignments, terms).map { "\(quote($0.attribute.columnName)) = \($1.sql)" } + ["_version = \(version.sql)"])
            .joined(separator: ", ")
        let query = try FetchQuery(request: request, mapping: mapping, model: model, columns: "_pk")
        if request.limit != nil || request.offset != 0 {
            rows = SQLFragment(sql: " WHERE _pk IN (\(query.sql))", bindings: query.bindings)
        } else {
            rows = SQLFragment(sql: query.condition.map { " WHERE \($0)" } ?? "", bindings: query.conditionBindings)
        }
        statement = SQLFragment(sql: "UPDATE \(mapping.table) SET \(setList)" + rows.sql + returning,
                                bindings: terms.flatMap(\.bindings) + version.bindings + rows.bindings)
    }
}
