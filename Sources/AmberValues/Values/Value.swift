import Foundation

/// A single attribute value: a tagged union over every kind of data Amber
/// stores or passes around.
///
/// Values are plain data (`Sendable`, `Hashable`). Each case corresponds to a
/// built-in value class (see ``ValueClass``); an attribute accepts only the
/// classes its type allows, and setting anything else is an error.
public enum Value: Sendable, Hashable {
    /// No value (SQL NULL, Core Data `nil`).
    case null
    /// A Boolean.
    case bool(Bool)
    /// A signed integer; attributes of the narrower integer types check its range.
    case int(Int64)
    /// A double-precision floating-point number.
    case double(Double)
    /// A single-precision floating-point number.
    case float(Float)
    /// A Unicode string.
    case string(String)
    /// Raw bytes.
    case binary(Data)
    /// A point in time, kept with the full precision of `Date`.
    case date(Date)
    /// A base-10 number with the exponent it was written with (`12.30` stays
    /// `12.30`); never converted through `Double`, so no digit is lost.
    // Indirect: keeps every Value 17 bytes, so slot arrays stay compact and cheap to copy.
    indirect case decimal(ScaledDecimal)
    /// A 128-bit UUID (stored as its 16 bytes).
    case uuid(UUID)
    /// A URI.
    case uri(URL)
    /// A reference to another object.
    indirect case objectID(ObjectID)
    /// An ordered list of values (plist-like; stored through transformers).
    case array([Value])
    /// A string-keyed dictionary of values (plist-like; stored through transformers).
    case dictionary([String: Value])
    /// A value of a custom value class (a struct class or an opaque class):
    /// its class name and its bytes.
    indirect case custom(CustomValue)

    /// The value class of this value.
    public var valueClass: ValueClass {
        switch self {
        case .null: .null
        case .bool: .boolean
        case .int: .integer
        case .double: .double
        case .float: .float
        case .string: .string
        case .binary: .binary
        case .date: .date
        case .decimal: .decimal
        case .uuid: .uuid
        case .uri: .uri
        case .objectID: .objectID
        case .array: .array
        case .dictionary: .dictionary
        case .custom: .custom
        }
    }

    /// The name of this value's class: a built-in name (`String`, `Integer`,
    /// …) or a custom class's name.
    public var className: String {
        if case .custom(let custom) = self { return custom.className }
        return valueClass.rawValue
    }

    /// Whether this value is plist-like (null, Boolean, numbers, string,
    /// binary, date, UUID, and arrays and dictionaries of these): what the
    /// default archive and the JSON transformer accept.
    public var isPropertyList: Bool {
        switch self {
        case .null, .bool, .int, .double, .float, .string, .binary, .date, .uuid: true
        case .array(let items): items.allSatisfy(\.isPropertyList)
        case .dictionary(let items): items.values.allSatisfy(\.isPropertyList)
        case .decimal, .uri, .objectID, .custom: false
        }
    }

    /// Whether the two values are the same value bit for bit, in arrays and
    /// dictionaries too: a NaN is itself (`==` says it differs), -0.0 is not 0.0.
    package func isIdentical(to other: Value) -> Bool {
        switch (self, other) {
        case (.double(let a), .double(let b)): a.bitPattern == b.bitPattern
        case (.float(let a), .float(let b)): a.bitPattern == b.bitPattern
        case (.date(let a), .date(let b)): a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
        case (.array(let a), .array(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.isIdentical(to: $1) }
        case (.dictionary(let a), .dictionary(let b)):
            a.count == b.count && a.allSatisfy { key, value in b[key].map(value.isIdentical) ?? false }
        default: self == other
        }
    }

    /// A decimal value of `number` as `Decimal` keeps it (trailing zeros
    /// dropped); use ``decimal(_:)-swift.enum.case`` with a ``ScaledDecimal`` to keep a scale.
    public static func decimal(_ number: Decimal) -> Value { .decimal(ScaledDecimal(number)) }

    /// Whether this is ``null``.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}

/// The class of a ``Value``: what kind of data it holds. Custom value classes
/// (structs, opaque bytes) are declared by name and join these built-in ones.
public enum ValueClass: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case null = "Null"
    case boolean = "Boolean"
    case integer = "Integer"
    case double = "Double"
    case float = "Float"
    case string = "String"
    case binary = "Binary"
    case date = "Date"
    case decimal = "Decimal"
    case uuid = "UUID"
    case uri = "URI"
    case objectID = "ObjectID"
    case array = "Array"
    case dictionary = "Dictionary"
    /// Any custom class; ``Value/className`` names which.
    case custom = "Custom"

    /// The pseudo-class of plist-like values (see ``Value/isPropertyList``):
    /// the input of the default archive and of the JSON transformer.
    public static let propertyListName = "PropertyList"

    public var description: String { rawValue }
}

extension Value: CustomStringConvertible {
    /// A short, human-readable rendering used in error messages and the CLI.
    public var description: String {
        switch self {
        case .null: "nil"
        case .bool(let b): b ? "true" : "false"
        case .int(let i): String(i)
        case .double(let d): String(d)
        case .float(let f): String(f)
        case .string(let s): "\"\(s)\""
        case .binary(let d): "<\(d.count) bytes>"
        case .date(let d): ValueFormat.iso8601(d)
        case .decimal(let d): d.description
        case .uuid(let u): u.uuidString
        case .uri(let u): u.absoluteString
        case .objectID(let id): id.description
        case .array(let a): "[" + a.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(let d):
            "{" + d.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        case .custom(let c): "\(c.className)<\(c.count) bytes>"
        }
    }
}

// Literal conformances keep Swift call sites short: `try book.setValue("Dune", forKey: "title")`.
extension Value: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: Value...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, Value)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

/// Text forms shared by JSON model files, error messages and the CLI.
package enum ValueFormat {
    /// ISO 8601 in UTC with the fractional digits the date needs to read back exactly (see ``DateText``).
    package static func iso8601(_ date: Date) -> String {
        DateText.format(date) ?? "\(date.timeIntervalSince1970) seconds since 1970"
    }

    /// Parses ISO 8601 as ``DateText/parse(_:)`` does: a date, optionally a time, fraction and offset.
    package static func parseISO8601(_ text: String) -> Date? {
        DateText.parse(text)
    }
}
