import AmberModel
import AmberValues
import Foundation

/// A Swift type a generated class reads and writes an attribute as: each
/// conversion is exact, and a stored value of another type is an error
/// naming the attribute, never a value changed to fit.
public protocol StoredValue {
    /// The value as Amber keeps it.
    var storedValue: Value { get }
    /// `value` as this type.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidValue(place:expected:given:)``
    ///   naming `attribute` when `value` is not of this type (a model that
    ///   does not match the generated code, or a required value not set yet).
    static func read(_ value: Value, of attribute: Attribute) throws(AmberError) -> Self
}

extension StoredValue {
    /// The error for a value that is not of this type.
    @usableFromInline
    static func mismatch(_ value: Value, of attribute: Attribute) -> AmberError {
        if value.isNull {
            return .invalidValue(place: attribute.description, expected: "a \(Self.self) value (it has none yet, and it is required)",
                                 given: "nil")
        }
        return .invalidValue(place: attribute.description, expected: "a \(Self.self) value", given: "\(value.valueClass) \(value)")
    }
}

extension Optional: StoredValue where Wrapped: StoredValue {
    @inlinable
    public var storedValue: Value { map(\.storedValue) ?? .null }
    @inlinable
    public static func read(_ value: Value, of attribute: Attribute) throws(AmberError) -> Self {
        if value.isNull { return nil }
        return try Wrapped.read(value, of: attribute)
    }
}

extension String: StoredValue {
    @inlinable
    public var storedValue: Value { .string(self) }
    @inlinable
    public static func read(_ value: Value, of attribute: Attribute) throws(AmberError) -> Self {
        guard case .string(let text) = value else { throw mismatch(value, of: attribute) }
        return text
    }
}

extension Bool: StoredValue {
    @inlinable
    public var storedValue: Value { .bool(self) }
    @inlinable
    public static func read(_ value: Value, of attribute: Attribute) throws(AmberError) -> Self {
        guard case .bool(let flag) = value else { throw mismatch(value, of: attribute) }
        return flag
    }
}

/// The integer widths: kept as `Int64`, read back only when the value fits.
public protocol StoredInteger: StoredValue, FixedWidthInteger {}

extension StoredInteger {
    @inlinable
    public var storedValue: Value { .int(Int64(self)) }
    @inlinable
    public static func read(_ value: Value, of attribute: Attribute) throws(AmberError) -> Self {
        guard case .int(let number) = value, let exact = Self(exactly: number) else { throw mismatch(value, of: attribute) }
        return exact
    }
}

extension Int64: StoredInteger {}
extension Int32: StoredInteger {}
extension Int16: StoredInteger {}

extension Double: StoredValue {
    @inlinable
    public var storedValue: Value { .double(self) }
    @inlinable
    public static func read(_ value: Value, of attribute: Attribute) throws(AmberError) -> Self {
        guard case .double(let number) = value else { throw mismatch(value, of: attribute) }
        return number
    }
}

extension Float: StoredValue {
    @inlinable
    public var storedValue: Value { .float(self) }
    @inlinable
    public static func read(_ value: Value, of attribute: Attribute) throws(AmberError) -> Self {
        guard case .float(let number) = value else { throw mismatch(value, of: attribute) }
        return number
    }
}

extension ScaledDecimal: StoredValue {
    @inlinable
    public var storedValue: Value { .decimal(self) }
    @inlinable
    public static func read(_ value: Value, of attribute: Attribute) throws(AmberError) -> Self {
        guard case .decimal(let number) = value else { throw mismatch(value, of: attribute) }
        return number
    }
}

extension Date: StoredValue {
    @inlinable
    public var storedValue: Value { .date(self) }
    @inlinable
    public static func read(_ value: Value, of attribute: Attribute) throws(AmberError) -> Self {
        guard case .date(let date) = value else { throw mismatch(value, of: attribute) }
        return date
    }
}

extension Data: StoredValue {
    @inlinable
    public var storedValue: Value { .binary(self) }
    @inlinable
    public static func read(_ value: Value, of attribute: Attribute) throws(AmberError) -> Self {
        guard case .binary(let data) = value else { throw mismatch(value, of: attribute) }
        return data
    }
}

extension UUID: StoredValue {
    @inlinable
    public var storedValue: Value { .uuid(self) }
    @inlinable
    public static func read(_ value: Value, of attribute: Attribute) throws(AmberError) -> Self {
        guard case .uuid(let uuid) = value else { throw mismatch(value, of: attribute) }
        return uuid
    }
}

extension URL: StoredValue {
    @inlinable
    public var storedValue: Value { .uri(self) }
    @inlinable
    public static func read(_ value: Value, of attribute: Attribute) throws(AmberError) -> Self {
        guard case .uri(let url) = value else { throw mismatch(value, of: attribute) }
        return url
    }
}

extension ObjectID: StoredValue {
    @inlinable
    public var storedValue: Value { .objectID(self) }
    @inlinable
    public static func read(_ value: Value, of attribute: Attribute) throws(AmberError) -> Self {
        guard case .objectID(let id) = value else { throw mismatch(value, of: attribute) }
        return id
    }
}

extension CustomValue: StoredValue {
    @inlinable
    public var storedValue: Value { .custom(self) }
    @inlinable
    public static func read(_ value: Value, of attribute: Attribute) throws(AmberError) -> Self {
        guard case .custom(let custom) = value else { throw mismatch(value, of: attribute) }
        return custom
    }
}

extension Value: StoredValue {
    /// An undefined attribute, or a transformable one of any class, reads as the value itself.
    @inlinable
    public var storedValue: Value { self }
    @inlinable
    public static func read(_ value: Value, of attribute: Attribute) throws(AmberError) -> Self { value }
}

extension Array: StoredValue where Element == Value {
    @inlinable
    public var storedValue: Value { .array(self) }
    @inlinable
    public static func read(_ value: Value, of attribute: Attribute) throws(AmberError) -> Self {
        guard case .array(let list) = value else { throw mismatch(value, of: attribute) }
        return list
    }
}

extension Dictionary: StoredValue where Key == String, Value == AmberValues.Value {
    @inlinable
    public var storedValue: AmberValues.Value { .dictionary(self) }
    @inlinable
    public static func read(_ value: AmberValues.Value, of attribute: Attribute) throws(AmberError) -> Self {
        guard case .dictionary(let entries) = value else { throw mismatch(value, of: attribute) }
        return entries
    }
}

/// A struct value class as a Swift struct with the C struct's layout
/// (generated from the model's declaration): read from and written as
/// the class's bytes.
public protocol StructValue: StoredValue, BitwiseCopyable {
    /// The value class's name in the model.
    static var className: String { get }
    /// The fields as this Swift type lays them out, in the form of
    /// ``/AmberValues/StructClass/layout``; a class is checked against the
    /// model's by comparing the two, so a struct of the same name and size
    /// with other fields is refused, not misread.
    static var layout: String { get }
}

extension StructValue {
    @inlinable
    public var storedValue: Value {
        // The C size includes tail padding (the stride). Padding is copied as the value holds it:
        // zero for a value made in Swift, the stored bytes for one read from a store.
        withUnsafeTemporaryAllocation(byteCount: MemoryLayout<Self>.stride, alignment: MemoryLayout<Self>.alignment) { buffer in
            buffer.initializeMemory(as: UInt8.self, repeating: 0)
            withUnsafeBytes(of: self) { buffer.copyMemory(from: $0) }
            return .custom(CustomValue(className: Self.className, copying: UnsafeRawBufferPointer(buffer)))
        }
    }

    @inlinable
    public static func read(_ value: Value, of attribute: Attribute) throws(AmberError) -> Self {
        guard case .custom(let custom) = value, custom.className == className, custom.count == MemoryLayout<Self>.stride else {
            throw mismatch(value, of: attribute)
        }
        return custom.withUnsafeBytes { $0.loadUnaligned(as: Self.self) }
    }
}
