import AmberModel
import AmberStore
import AmberValues

extension BatchAssignment.Term {
    /// The SQL of this new value for an attribute of `type`, with its
    /// parameters. Decimal arithmetic is the dialect's, exact or NULL.
    package func sql(as type: AttributeType, dialect: any SQLDialect) -> SQLFragment {
        func binary(_ op: String, _ a: Self, _ b: Self) -> SQLFragment {
            let (left, right) = (a.sql(as: type, dialect: dialect), b.sql(as: type, dialect: dialect))
            let sql = type == .decimal ? dialect.decimalArithmetic(op, left.sql, right.sql) : "(\(left.sql) \(op) \(right.sql))"
            return SQLFragment(sql: sql, bindings: left.bindings + right.bindings)
        }
        switch self {
        case .constant(let value): return SQLFragment(sql: "?", bindings: [value])
        case .column(let attribute): return SQLFragment(sql: quote(attribute.columnName))
        case .add(let a, let b): return binary("+", a, b)
        case .subtract(let a, let b): return binary("-", a, b)
        case .multiply(let a, let b): return binary("*", a, b)
        }
    }
}
