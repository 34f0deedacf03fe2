import AmberValues
import CSQLite
import Foundation

/// A row's primary key and the values a fetch request orders it by.
package struct SortedKey: Sendable {
    package let key: Int64
    /// One per sort key, as the query computed it.
    package let values: [SQLiteValue]

    package init(key: Int64, values: [SQLiteValue]) {
        (self.key, self.values) = (key, values)
    }
}

/// A value as SQLite holds it in a result column, compared as SQLite's
/// ORDER BY compares with the BINARY collation: NULL first, then numbers
/// (integers and reals by value), then text (by bytes), then blobs (by bytes).
package enum SQLiteValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text([UInt8])
    case blob([UInt8])

    init(_ statement: Statement, column: Int32) throws(AmberError) {
        switch statement.columnType(column) {
        case SQLITE_INTEGER: self = .integer(statement.int64(column))
        case SQLITE_FLOAT: self = .real(statement.double(column))
        case SQLITE_TEXT: self = .text(try statement.withBytes(column) { Array($0) })
        case SQLITE_BLOB: self = .blob(try statement.withBytes(column) { Array($0) })
        default: self = .null
        }
    }

    private var rank: Int {
        switch self {
        case .null: 0
        case .integer, .real: 1
        case .text: 2
        case .blob: 3
        }
    }

    /// -1, 0 or 1 as `self` sorts before, with or after `other` in ascending order.
    package func compare(_ other: SQLiteValue) -> Int {
        switch (self, other) {
        case (.integer(let a), .integer(let b)): return a < b ? -1 : (a == b ? 0 : 1)
        case (.real(let a), .real(let b)): return a < b ? -1 : (a == b ? 0 : 1)
        case (.integer(let a), .real(let b)): return -Self.compare(b, a)
        case (.real(let a), .integer(let b)): return Self.compare(a, b)
        case (.text(let a), .text(let b)), (.blob(let a), .blob(let b)):
            return a.lexicographicallyPrecedes(b) ? -1 : (a == b ? 0 : 1)
        default: return rank < other.rank ? -1 : (rank == other.rank ? 0 : 1)
        }
    }

    /// A real against an integer, exactly (not through a rounded conversion).
    private static func compare(_ real: Double, _ integer: Int64) -> Int {
        if real.isNaN { return -1 }
        if real < -9.223372036854775808e18 { return -1 }
        if real >= 9.223372036854775808e18 { return 1 }
        let truncated = Int64(real.rounded(.towardZero))
        if truncated != integer { return truncated < integer ? -1 : 1 }
        let fraction = real - Double(truncated)
        return fraction < 0 ? -1 : (fraction > 0 ? 1 : 0)
    }
}
