import Foundation

/// The type of an attribute, as Core Data has them.
///
/// `transformable`, `undefined` and `objectID` are part of the vocabulary so
/// models can name them; binding reports them as not yet supported until value
/// transformers and relationships land.
public enum AttributeType: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case integer16, integer32, integer64, decimal, double, float, string, boolean, date, binary, uuid, uri
    case transformable, undefined, objectID

    /// The most bytes a stored string or binary value may have: SQLite's
    /// default length limit (SQLITE_MAX_LENGTH), refused at set rather than at save.
    package static let maximumStoredLength = 1_000_000_000

    public var description: String { rawValue }

    /// Core Data's spelling ("Integer 16", "Boolean", …), accepted in JSON model files too.
    package var coreDataName: String {
        switch self {
        case .integer16: "Integer 16"
        case .integer32: "Integer 32"
        case .integer64: "Integer 64"
        case .decimal: "Decimal"
        case .double: "Double"
        case .float: "Float"
        case .string: "String"
        case .boolean: "Boolean"
        case .date: "Date"
        case .binary: "Binary"
        case .uuid: "UUID"
        case .uri: "URI"
        case .transformable: "Transformable"
        case .undefined: "Undefined"
        case .objectID: "ObjectID"
        }
    }

    /// Looks a type up by its Amber or Core Data name.
    package init?(name: String) {
        if let type = AttributeType(rawValue: name) {
            self = type
        } else if let type = AttributeType.allCases.first(where: { $0.coreDataName == name }) {
            self = type
        } else {
            return nil
        }
    }

    /// The inclusive range of an integer type.
    package var integerRange: ClosedRange<Int64>? {
        switch self {
        case .integer16: Int64(Int16.min)...Int64(Int16.max)
        case .integer32: Int64(Int32.min)...Int64(Int32.max)
        case .integer64: Int64.min...Int64.max
        default: nil
        }
    }

    /// Whether values of this type are ordered numbers (for min/max validation).
    package var isNumeric: Bool {
        switch self {
        case .integer16, .integer32, .integer64, .decimal, .double, .float: true
        default: false
        }
    }

    /// Checks that `value` is of this type, converting where no information
    /// is lost (an integer for a Double or Decimal attribute, a Double for a
    /// Float one within range). Returns the value as stored in memory.
    ///
    /// - Throws: ``AmberError/invalidValue(place:expected:given:)`` naming `place`.
    /// `storing`: the value is to be stored (a set, a default), so a date
    /// must be one every binding reads back; bounds and predicate constants
    /// are only compared, and any date that is not NaN will do.
    package func coerce(_ value: Value, place: @autoclosure () -> String, storing: Bool = true) throws(AmberError) -> Value {
        func tooLong(_ given: String) -> AmberError {
            .invalidValue(place: place(), expected: coreDataName,
                          given: "\(given), more than the \(Self.maximumStoredLength) a stored value may have (SQLite's length limit)")
        }
        func reject(_ note: String = "") -> AmberError {
            .invalidValue(place: place(), expected: coreDataName,
                          given: "\(value.valueClass) \(value)\(note)")
        }
        switch (self, value) {
        case (_, .null):
            return .null
        case (.integer16, .int(let i)), (.integer32, .int(let i)), (.integer64, .int(let i)):
            guard let range = integerRange, range.contains(i) else {
                throw reject(" (out of range \(integerRange.map { "\($0.lowerBound)...\($0.upperBound)" } ?? ""))")
            }
            return value
        case (.decimal, .decimal(let d)):
            // Only a Decimal made in Swift can be NaN; its text would not read back.
            if d.number.isNaN { throw reject(" (NaN)") }
            return value
        case (.decimal, .int(let i)):
            return .decimal(Decimal(i))
        case (.double, .double), (.float, .float):
            return value
        case (.date, .date(let d)):
            if storing, let problem = DateText.problem(d) { throw reject(" (\(problem))") }
            if d.timeIntervalSinceReferenceDate.isNaN { throw reject(" (the date is NaN)") }
            return value
        case (.double, .float(let f)):
            return .double(Double(f))
        case (.double, .int(let i)):
            guard let exact = Double(exactly: i) else { throw reject(" (a Double cannot hold this integer exactly)") }
            return .double(exact)
        case (.float, .double(let d)):
            // A Float attribute keeps the nearest single-precision number, as its type declares; only overflow is refused.
            let f = Float(d)
            guard f.isFinite || !d.isFinite else { throw reject(" (out of range for Float)") }
            return .float(f)
        case (.float, .int(let i)):
            guard let exact = Float(exactly: i) else { throw reject(" (a Float cannot hold this integer exactly)") }
            return .float(exact)
        case (.string, .string(let text)) where storing && text.utf8.count > Self.maximumStoredLength:
            throw tooLong("a String of \(text.utf8.count) bytes")
        case (.binary, .binary(let bytes)) where storing && bytes.count > Self.maximumStoredLength:
            throw tooLong("\(bytes.count) bytes")
        case (.string, .string), (.boolean, .bool), (.binary, .binary), (.uuid, .uuid), (.uri, .uri),
             (.objectID, .objectID):
            return value
        case (.undefined, _), (.transformable, _):
            // Their value class is checked by the attribute, which knows it.
            return value
        default:
            throw reject()
        }
    }
}
