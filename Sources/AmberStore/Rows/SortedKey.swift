import AmberValues
import Foundation

/// A row's primary key and the values a fetch request orders it by.
package struct SortedKey: Sendable {
    package let key: Int64
    /// One per sort key, as the query computed it.
    package let values: [SortValue]

    package init(key: Int64, values: [SortValue]) {
        (self.key, self.values) = (key, values)
    }
}

/// A value a store sorted a row by, compared as SQL's ORDER BY compares
/// with a binary collation (SQLite's BINARY, PostgreSQL's "C"): NULL first,
/// then numbers (integers and reals by value), then text (by bytes), then
/// blobs (by bytes). A live query places changed rows among the others with
/// it, without asking the store again.
package enum SortValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text([UInt8])
    case blob([UInt8])

    private var rank: Int {
        switch self {
        case .null: 0
        case .integer, .real: 1
        case .text: 2
        case .blob: 3
        }
    }

    /// -1, 0 or 1 as `self` sorts before, with or after `other` in ascending order.
    package func compare(_ other: SortValue) -> Int {
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
