import AmberModel
import AmberValues
import Foundation

/// The values of one attribute for a column-wise batch insert
/// (``Context/insert(_:setting:columns:relating:)``): one element per row, all of
/// one kind, and an optional null mask.
///
/// A column only says which ``/AmberValues/Value`` each row holds; the insert sets it
/// through ``ManagedObject/setValue(_:for:)``, so a column is checked exactly
/// as a value set one at a time would be (an integer column into an
/// Integer 16 attribute is range-checked row by row, a double column into an
/// Integer attribute is refused, a float column into a Double attribute is
/// widened exactly).
///
/// ```swift
/// try context.insert(book, setting: [title, price, published],
///                    columns: [.strings(titles), .doubles(prices), .dates(days, nulls: unknown)])
/// ```
public struct ColumnValues: Sendable {
    /// The elements of a column, one per row.
    public enum Elements: Sendable {
        /// Booleans (``/AmberValues/Value/bool(_:)``).
        case booleans([Bool])
        /// Signed integers (``/AmberValues/Value/int(_:)``).
        case integers([Int64])
        /// Double-precision numbers (``/AmberValues/Value/double(_:)``).
        case doubles([Double])
        /// Single-precision numbers (``/AmberValues/Value/float(_:)``).
        case floats([Float])
        /// Points in time (``/AmberValues/Value/date(_:)``). C and Python give seconds
        /// since 1970-01-01 00:00 UTC, as `AMBER_VALUE_DATE` does.
        case dates([Date])
        /// Strings (``/AmberValues/Value/string(_:)``).
        case strings([String])
        /// Blobs (``/AmberValues/Value/binary(_:)``).
        case binary([Data])
        /// UUIDs (``/AmberValues/Value/uuid(_:)``).
        case uuids([UUID])
        /// Values of a custom class of fixed size (a struct class, or an
        /// opaque class of fixed size): `stride` bytes per row, row after row
        /// in `bytes`. `className` nil means the attribute's value class. The
        /// stride should be the class's size: a value of another size is
        /// refused by the attribute, naming the row.
        case custom(className: String?, stride: Int, bytes: Data)
        /// Values of a custom class, each with its own bytes (an opaque
        /// class of any size). `className` nil means the attribute's value class.
        case customValues(className: String?, [Data])
        /// Values of any kind, each as given (what ``Context/insert(_:setting:to:relating:)`` takes).
        case values([Value])
    }

    /// The column's elements.
    public var elements: Elements
    /// nil, or one flag per row: `true` sets that row's attribute to nil
    /// (the row's element is ignored, but still takes its place).
    public var nulls: [Bool]?

    /// A column of `elements`, with `nulls` marking the rows that are nil.
    public init(_ elements: Elements, nulls: [Bool]? = nil) {
        self.elements = elements
        self.nulls = nulls
    }

    /// A column of Booleans.
    public static func booleans(_ values: [Bool], nulls: [Bool]? = nil) -> ColumnValues { .init(.booleans(values), nulls: nulls) }
    /// A column of integers.
    public static func integers(_ values: [Int64], nulls: [Bool]? = nil) -> ColumnValues { .init(.integers(values), nulls: nulls) }
    /// A column of doubles.
    public static func doubles(_ values: [Double], nulls: [Bool]? = nil) -> ColumnValues { .init(.doubles(values), nulls: nulls) }
    /// A column of floats.
    public static func floats(_ values: [Float], nulls: [Bool]? = nil) -> ColumnValues { .init(.floats(values), nulls: nulls) }
    /// A column of dates.
    public static func dates(_ values: [Date], nulls: [Bool]? = nil) -> ColumnValues { .init(.dates(values), nulls: nulls) }
    /// A column of strings.
    public static func strings(_ values: [String], nulls: [Bool]? = nil) -> ColumnValues { .init(.strings(values), nulls: nulls) }
    /// A column of blobs.
    public static func binary(_ values: [Data], nulls: [Bool]? = nil) -> ColumnValues { .init(.binary(values), nulls: nulls) }
    /// A column of UUIDs.
    public static func uuids(_ values: [UUID], nulls: [Bool]? = nil) -> ColumnValues { .init(.uuids(values), nulls: nulls) }
    /// A column of custom values of `stride` bytes each (see ``Elements/custom(className:stride:bytes:)``).
    public static func custom(_ className: String? = nil, stride: Int, bytes: Data, nulls: [Bool]? = nil) -> ColumnValues {
        .init(.custom(className: className, stride: stride, bytes: bytes), nulls: nulls)
    }
    /// A column of custom values, each with its own bytes (see ``Elements/customValues(className:_:)``).
    public static func customValues(_ className: String? = nil, _ values: [Data], nulls: [Bool]? = nil) -> ColumnValues {
        .init(.customValues(className: className, values), nulls: nulls)
    }
    /// A column of values of any kind.
    public static func values(_ values: [Value], nulls: [Bool]? = nil) -> ColumnValues { .init(.values(values), nulls: nulls) }

    /// How many rows the column has (for a custom column, whole strides in its bytes).
    public var count: Int {
        switch elements {
        case .booleans(let items): items.count
        case .integers(let items): items.count
        case .doubles(let items): items.count
        case .floats(let items): items.count
        case .dates(let items): items.count
        case .strings(let items): items.count
        case .binary(let items): items.count
        case .uuids(let items): items.count
        case .custom(_, let stride, let bytes): stride > 0 ? bytes.count / stride : 0
        case .customValues(_, let items): items.count
        case .values(let items): items.count
        }
    }

    /// Checks the column against `attribute` and the batch's `rows`: a count
    /// other than `rows`, a null mask of another length, custom bytes that
    /// are not whole strides, custom values with no class to name are
    /// refused, naming the attribute and the column. Returns the class name
    /// a custom column's values get (nil for other columns).
    func resolvedClassName(for attribute: Attribute, rows: Int, column: Int) throws(AmberError) -> String? {
        let place = "\(attribute) (column \(column))"
        var className: String?
        switch elements {
        case .custom(let name, let stride, let bytes):
            guard stride > 0, bytes.count % stride == 0 else {
                throw .invalidValue(place: place, expected: "custom bytes in whole strides of a positive size",
                                    given: "\(bytes.count) bytes with a stride of \(stride)")
            }
            className = name
        case .customValues(let name, _):
            className = name
        default:
            break
        }
        guard count == rows else { throw .invalidValue(place: place, expected: "\(rows) rows", given: "\(count) rows") }
        if let nulls, nulls.count != rows {
            throw .invalidValue(place: place, expected: "a null mask of \(rows) flags", given: "\(nulls.count) flags")
        }
        switch elements {
        case .custom, .customValues:
            guard let name = className ?? attribute.valueClassName else {
                throw .invalidValue(place: place, expected: "a class name for custom values (the attribute declares no value class)",
                                    given: "none")
            }
            return name
        default:
            return nil
        }
    }

    /// The value of row `row` (in range: checked by the caller); `className`
    /// is what ``resolvedClassName(for:rows:column:)`` returned.
    @inline(__always)
    func value(at row: Int, className: String?) -> Value {
        if let nulls, nulls[row] { return .null }
        switch elements {
        case .booleans(let items): return .bool(items[row])
        case .integers(let items): return .int(items[row])
        case .doubles(let items): return .double(items[row])
        case .floats(let items): return .float(items[row])
        case .dates(let items): return .date(items[row])
        case .strings(let items): return .string(items[row])
        case .binary(let items): return .binary(items[row])
        case .uuids(let items): return .uuid(items[row])
        case .custom(_, let stride, let bytes):
            return bytes.withUnsafeBytes { raw in
                .custom(CustomValue(className: className ?? "", copying: UnsafeRawBufferPointer(rebasing: raw[row * stride..<(row + 1) * stride])))
            }
        case .customValues(_, let items): return .custom(CustomValue(className: className ?? "", bytes: items[row]))
        case .values(let items): return items[row]
        }
    }
}
