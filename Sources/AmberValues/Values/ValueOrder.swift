import Foundation

/// Orders values of the same comparable class (numbers across classes).
package enum ValueOrder {
    package static func compare(_ a: Value, _ b: Value) -> ComparisonResult? {
        func order<T: Comparable>(_ x: T, _ y: T) -> ComparisonResult {
            x < y ? .orderedAscending : (x == y ? .orderedSame : .orderedDescending)
        }
        switch (a, b) {
        case (.int(let x), .int(let y)): return order(x, y)
        case (.date(let x), .date(let y)): return order(x, y)
        case (.string(let x), .string(let y)): return order(x, y)
        case (.decimal(let x), .decimal(let y)): return order(x.number, y.number)
        case (.decimal(let x), .int(let y)): return order(x.number, Decimal(y))
        case (.int(let x), .decimal(let y)): return order(Decimal(x), y.number)
        default:
            guard let x = a.numericDouble, let y = b.numericDouble else { return nil }
            return order(x, y)
        }
    }
}

extension Value {
    /// The value as a Double, for the numeric classes.
    package var numericDouble: Double? {
        switch self {
        case .int(let i): Double(i)
        case .double(let d): d
        case .float(let f): Double(f)
        case .decimal(let d): NSDecimalNumber(decimal: d.number).doubleValue
        default: nil
        }
    }
}
