import AmberModel
import AmberStore
import AmberValues
import Foundation

/// A value as a predicate compares it in memory: in the form a store keeps
/// it (a date as seconds, a Boolean as 0 or 1, a UUID as its 16 bytes, text
/// and URIs as UTF-8 bytes), ordered as SQL orders with a binary collation
/// (``/AmberStore/SortValue``), except that decimals compare exactly.
enum ComparedValue: Hashable {
    /// A value in its stored form.
    case stored(SortValue)
    /// A decimal's number (`12.30` and `12.3` are equal).
    case decimal(Decimal)
    /// A NaN (only transient attributes hold one): equal to nothing, ordered with nothing.
    case unordered

    init(_ value: Value) {
        switch value {
        case .null: self = .stored(.null)
        case .bool(let flag): self = .stored(.integer(flag ? 1 : 0))
        case .int(let number): self = .stored(.integer(number))
        case .double(let number): self = number.isNaN ? .unordered : .stored(.real(number))
        case .float(let number): self = number.isNaN ? .unordered : .stored(.real(Double(number)))
        case .date(let date): self = .stored(.real(date.timeIntervalSinceReferenceDate))
        case .string(let text): self = .stored(.text(Array(text.utf8)))
        case .uri(let uri): self = .stored(.text(Array(uri.absoluteString.utf8)))
        case .binary(let bytes): self = .stored(.blob(Array(bytes)))
        case .uuid(let uuid): self = .stored(.blob(withUnsafeBytes(of: uuid.uuid) { Array($0) }))
        case .decimal(let decimal): self = .decimal(decimal.number)
        // Compared through their own rules (objects by ID, transformed values by value), never here.
        case .objectID, .custom, .array, .dictionary: self = .unordered
        }
    }

    var isNull: Bool {
        if case .stored(.null) = self { return true }
        return false
    }

    /// -1, 0 or 1 as `self` orders before, with or after `other`; nil when
    /// either is null or NaN (SQL's unknown, which no comparison satisfies).
    func compare(_ other: ComparedValue) -> Int? {
        switch (self, other) {
        case (.unordered, _), (_, .unordered), (.stored(.null), _), (_, .stored(.null)): return nil
        case (.decimal(let a), .decimal(let b)): return a < b ? -1 : (a == b ? 0 : 1)
        case (.decimal(let a), .stored(let b)): return SortValue.real(Self.approximate(a)).compare(b)
        case (.stored(let a), .decimal(let b)): return a.compare(.real(Self.approximate(b)))
        case (.stored(let a), .stored(let b)): return a.compare(b)
        }
    }

    /// The order of a sort key: as ``compare(_:)``, with nulls (and NaN) first.
    func sortOrder(_ other: ComparedValue) -> Int {
        if let order = compare(other) { return order }
        let mine = isNull || isUnordered, theirs = other.isNull || other.isUnordered
        return mine == theirs ? 0 : (mine ? -1 : 1)
    }

    private var isUnordered: Bool {
        if case .unordered = self { return true }
        return false
    }

    /// SQL's `a IS DISTINCT FROM b` (`!=` in a predicate): one null and the other not, or both values and different.
    func isDistinct(from other: ComparedValue) -> Bool {
        if isNull || other.isNull { return isNull != other.isNull }
        return compare(other) != 0
    }

    /// A decimal as a double, as SQL approximates one beside another number.
    static func approximate(_ number: Decimal) -> Double { Double(number.description) ?? .nan }

    /// The UTF-8 bytes of a text value, or nil.
    var text: [UInt8]? {
        if case .stored(.text(let bytes)) = self { return bytes }
        return nil
    }
}
