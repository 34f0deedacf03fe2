import AmberPluginABI
import CFFI
import Foundation

/// A C scalar type a struct field can have, or a nested struct class.
///
/// ``FieldType/table`` is the one vocabulary of field types: the codes of
/// `AMBER_FIELD_*` (amber.h) and `AMBER_PLUGIN_FIELD_*` (amber_plugin.h), the
/// names model files use, and each scalar's size and alignment. The C API,
/// the plugin loader and (through the C API) Python all read it.
public enum FieldType: Sendable, Hashable, CustomStringConvertible {
    case int8, int16, int32, int64, uint8, uint16, uint32, uint64, float, double, bool
    /// A nested struct class, by name.
    case structure(String)

    /// One row of the field-type table.
    public struct Info: Sendable {
        /// The C constant (`AMBER_FIELD_*`, equal to `AMBER_PLUGIN_FIELD_*`).
        public let code: Int32
        /// The name in model files, plugin declarations and messages.
        public let name: String
        /// Size in bytes on this platform (0 for a nested struct).
        public let size: Int
        /// Alignment in bytes on this platform (0 for a nested struct).
        public let alignment: Int
    }

    /// Every field type, scalars first in code order, then `struct`.
    public static let table: [Info] = [
        Info(code: Int32(AMBER_PLUGIN_FIELD_INT8), name: "int8", size: 1, alignment: MemoryLayout<Int8>.alignment),
        Info(code: Int32(AMBER_PLUGIN_FIELD_INT16), name: "int16", size: 2, alignment: MemoryLayout<Int16>.alignment),
        Info(code: Int32(AMBER_PLUGIN_FIELD_INT32), name: "int32", size: 4, alignment: MemoryLayout<Int32>.alignment),
        Info(code: Int32(AMBER_PLUGIN_FIELD_INT64), name: "int64", size: 8, alignment: MemoryLayout<Int64>.alignment),
        Info(code: Int32(AMBER_PLUGIN_FIELD_UINT8), name: "uint8", size: 1, alignment: MemoryLayout<UInt8>.alignment),
        Info(code: Int32(AMBER_PLUGIN_FIELD_UINT16), name: "uint16", size: 2, alignment: MemoryLayout<UInt16>.alignment),
        Info(code: Int32(AMBER_PLUGIN_FIELD_UINT32), name: "uint32", size: 4, alignment: MemoryLayout<UInt32>.alignment),
        Info(code: Int32(AMBER_PLUGIN_FIELD_UINT64), name: "uint64", size: 8, alignment: MemoryLayout<UInt64>.alignment),
        Info(code: Int32(AMBER_PLUGIN_FIELD_FLOAT), name: "float", size: 4, alignment: MemoryLayout<Float>.alignment),
        Info(code: Int32(AMBER_PLUGIN_FIELD_DOUBLE), name: "double", size: 8, alignment: MemoryLayout<Double>.alignment),
        // C's _Bool is one byte on every ABI Amber targets.
        Info(code: Int32(AMBER_PLUGIN_FIELD_BOOL), name: "bool", size: 1, alignment: 1),
        Info(code: Int32(AMBER_PLUGIN_FIELD_STRUCT), name: "struct", size: 0, alignment: 0),
    ]

    private static let scalarCases: [FieldType] = [.int8, .int16, .int32, .int64, .uint8, .uint16, .uint32, .uint64,
                                                   .float, .double, .bool]

    /// The scalar type named `name` in a model file ("int8", …, "bool"); nil for any other name.
    public static func scalar(named name: String) -> FieldType? {
        table.firstIndex { $0.name == name }.flatMap { $0 < scalarCases.count ? scalarCases[$0] : nil }
    }

    /// The field type with C code `code`; a struct code takes the nested class's name from `structName`.
    /// Nil for an unknown code.
    public static func from<E: Error>(code: Int32, structName: () throws(E) -> String) throws(E) -> FieldType? {
        guard let index = table.firstIndex(where: { $0.code == code }) else { return nil }
        return index < scalarCases.count ? scalarCases[index] : .structure(try structName())
    }

    /// This type's row of ``table``.
    public var info: Info {
        if case .structure = self { return Self.table[Self.table.count - 1] }
        return Self.table[Self.scalarCases.firstIndex(of: self) ?? 0]
    }

    public var description: String {
        if case .structure(let name) = self { return name }
        return info.name
    }
}

/// One field of a struct class, as declared.
public struct FieldDescription: Sendable, Hashable {
    /// The field's name.
    public var name: String
    /// Its type.
    public var type: FieldType

    /// A field named `name` of `type`.
    public init(_ name: String, _ type: FieldType) {
        self.name = name
        self.type = type
    }
}

/// A custom value class as declared (by a model, by Swift code, later by the
/// C API or a plugin), before its layout is computed.
public enum ValueClassDescription: Sendable, Hashable {
    /// A C struct of named fields; its layout comes from libffi.
    case structure(name: String, fields: [FieldDescription])
    /// Bytes only the transformers naming the class understand; `size` fixes their count.
    case opaque(name: String, size: Int?)

    /// The class's name.
    public var name: String {
        switch self {
        case .structure(let name, _), .opaque(let name, _): name
        }
    }
}

/// A struct class with its C layout: size, alignment and field offsets as
/// libffi computes them for this platform's C ABI.
public final class StructClass: Sendable, CustomStringConvertible {
    /// One field with its place in the struct.
    public struct Field: Sendable {
        /// The field's name.
        public let name: String
        /// Its C type.
        public let type: FieldType
        /// Byte offset from the start of the struct.
        public let offset: Int
        /// The nested class, for a `.structure` field.
        public let nested: StructClass?
    }

    /// The class's name.
    public let name: String
    /// The fields in declaration order.
    public let fields: [Field]
    /// `sizeof` the struct in C, padding included.
    public let size: Int
    /// `_Alignof` the struct in C.
    public let alignment: Int
    /// 1 for a struct of scalars, plus one per level of nested struct.
    let nestingDepth: Int

    /// Limits that keep a hostile declaration (from a model file or a plugin)
    /// from costing unbounded time or memory.
    static let maximumNestingDepth = 32
    static let maximumSize = 1 << 24

    /// Lays out `fields`; `nested` resolves the names of nested struct classes.
    package init(name: String, fields declared: [FieldDescription], nested: (String) -> StructClass?) throws(AmberError) {
        self.name = name
        let resolved: [(FieldDescription, StructClass?)] = try declared.map { (field) throws(AmberError) in
            guard case .structure(let className) = field.type else { return (field, nil) }
            guard let inner = nested(className) else {
                throw .invalidValue(place: "\(name).\(field.name)", expected: "a declared struct class", given: className)
            }
            return (field, inner)
        }
        guard !declared.isEmpty else {
            throw .invalidValue(place: name, expected: "at least one field", given: "none")
        }
        nestingDepth = 1 + (resolved.compactMap { $0.1?.nestingDepth }.max() ?? 0)
        guard nestingDepth <= Self.maximumNestingDepth else {
            throw .invalidDeclaration(place: name, message: "structs nest more than \(Self.maximumNestingDepth) levels deep")
        }
        let layout = try FFILayout.compute(resolved.map { ($0.0.type, $0.1) }, place: name)
        guard layout.size <= Self.maximumSize else {
            throw .invalidDeclaration(place: name, message: "\(layout.size) bytes is larger than the \(Self.maximumSize) bytes a struct class may have")
        }
        self.size = layout.size
        self.alignment = layout.alignment
        self.fields = zip(resolved, layout.offsets).map { Field(name: $0.0.name, type: $0.0.type, offset: $1, nested: $0.1) }
    }

    /// The fields with their C types and offsets, nested structs inside
    /// braces, then the size: `{x: double at 0, y: double at 8, tag: int8 at 16; 24 bytes}`.
    /// A generated Swift struct describes its own layout the same way
    /// (`StructValue.layout`), so the two are compared as text.
    public var layout: String {
        let described = fields.map { field in
            "\(field.name): \(field.type) at \(field.offset)" + (field.nested.map { " " + $0.layout } ?? "")
        }
        return "{" + described.joined(separator: ", ") + "; \(size) bytes}"
    }

    public var description: String {
        "struct \(name) { " + fields.map { "\($0.type) \($0.name);" }.joined(separator: " ") + " } (\(size) bytes)"
    }

    /// A value of this class from field values by name (nested structs as
    /// ``Value/custom(_:)`` or as dictionaries of their fields). Every field
    /// must be given, with a value that fits its C type.
    public func value(_ fieldValues: [String: Value]) throws(AmberError) -> Value {
        var bytes = Data(count: size)
        for key in fieldValues.keys where !fields.contains(where: { $0.name == key }) {
            throw .invalidValue(place: "\(name).\(key)", expected: "a field of \(name)", given: "no such field")
        }
        for field in fields {
            guard let value = fieldValues[field.name] else {
                throw .invalidValue(place: "\(name).\(field.name)", expected: "a value for every field", given: "none")
            }
            try write(value, to: field, in: &bytes)
        }
        return .custom(CustomValue(className: name, bytes: bytes))
    }

    /// The field values of `value`, which must be of this class and size.
    public func fieldValues(of value: Value) throws(AmberError) -> [String: Value] {
        guard case .custom(let custom) = value, custom.className == name else {
            throw .invalidValue(place: name, expected: name, given: "\(value.className) \(value)")
        }
        guard custom.count == size else {
            throw .invalidValue(place: name, expected: "\(size) bytes", given: "\(custom.count) bytes")
        }
        var result: [String: Value] = [:]
        custom.withUnsafeBytes { raw in
            for field in fields { result[field.name] = read(field, from: raw) }
        }
        return result
    }

    private func read(_ field: Field, from raw: UnsafeRawBufferPointer) -> Value {
        let at = field.offset
        switch field.type {
        case .int8: return .int(Int64(raw.loadUnaligned(fromByteOffset: at, as: Int8.self)))
        case .int16: return .int(Int64(raw.loadUnaligned(fromByteOffset: at, as: Int16.self)))
        case .int32: return .int(Int64(raw.loadUnaligned(fromByteOffset: at, as: Int32.self)))
        case .int64: return .int(raw.loadUnaligned(fromByteOffset: at, as: Int64.self))
        case .uint8: return .int(Int64(raw.loadUnaligned(fromByteOffset: at, as: UInt8.self)))
        case .uint16: return .int(Int64(raw.loadUnaligned(fromByteOffset: at, as: UInt16.self)))
        case .uint32: return .int(Int64(raw.loadUnaligned(fromByteOffset: at, as: UInt32.self)))
        // UInt64 values above Int64.max keep their bits (read back with UInt64(bitPattern:)).
        case .uint64: return .int(Int64(bitPattern: raw.loadUnaligned(fromByteOffset: at, as: UInt64.self)))
        case .float: return .float(raw.loadUnaligned(fromByteOffset: at, as: Float.self))
        case .double: return .double(raw.loadUnaligned(fromByteOffset: at, as: Double.self))
        case .bool: return .bool(raw.loadUnaligned(fromByteOffset: at, as: UInt8.self) != 0)
        case .structure:
            guard let nested = field.nested else { return .null }
            return .custom(CustomValue(className: nested.name, copying: UnsafeRawBufferPointer(rebasing: raw[at..<(at + nested.size)])))
        }
    }

    private func write(_ value: Value, to field: Field, in bytes: inout Data) throws(AmberError) {
        let place = "\(name).\(field.name)"
        func integer(_ range: ClosedRange<Int64>) throws(AmberError) -> Int64 {
            guard case .int(let i) = value, range.contains(i) else {
                throw .invalidValue(place: place, expected: "\(field.type) in \(range.lowerBound)...\(range.upperBound)",
                                    given: "\(value.className) \(value)")
            }
            return i
        }
        func real() throws(AmberError) -> Double {
            switch value {
            case .double(let d): return d
            case .float(let f): return Double(f)
            case .int(let i): return Double(i)
            default: throw .invalidValue(place: place, expected: "\(field.type)", given: "\(value.className) \(value)")
            }
        }
        var scratch: [UInt8] = []
        func put<T>(_ x: T) { scratch = withUnsafeBytes(of: x) { Array($0) } }
        switch field.type {
        case .int8: put(Int8(try integer(Int64(Int8.min)...Int64(Int8.max))))
        case .int16: put(Int16(try integer(Int64(Int16.min)...Int64(Int16.max))))
        case .int32: put(Int32(try integer(Int64(Int32.min)...Int64(Int32.max))))
        case .int64: put(try integer(Int64.min...Int64.max))
        case .uint8: put(UInt8(try integer(0...Int64(UInt8.max))))
        case .uint16: put(UInt16(try integer(0...Int64(UInt16.max))))
        case .uint32: put(UInt32(try integer(0...Int64(UInt32.max))))
        case .uint64: put(UInt64(bitPattern: try integer(Int64.min...Int64.max)))
        case .float: put(Float(try real()))
        case .double: put(try real())
        case .bool:
            guard case .bool(let b) = value else {
                throw .invalidValue(place: place, expected: "bool", given: "\(value.className) \(value)")
            }
            put(UInt8(b ? 1 : 0))
        case .structure:
            guard let nested = field.nested else { return }
            var inner = value
            if case .dictionary(let fields) = value { inner = try nested.value(fields) }
            guard case .custom(let custom) = inner, custom.className == nested.name, custom.count == nested.size else {
                throw .invalidValue(place: place, expected: "\(nested.name) (\(nested.size) bytes)", given: "\(value.className) \(value)")
            }
            scratch = Array(custom.bytes)
        }
        bytes.replaceSubrange(field.offset..<(field.offset + scratch.count), with: scratch)
    }
}

/// An opaque class: bytes understood only by the transformers that name it.
public struct OpaqueClass: Sendable, Hashable {
    /// The class's name.
    public let name: String
    /// The exact byte count of every value, if fixed.
    public let size: Int?

    package init(name: String, size: Int?) {
        self.name = name
        self.size = size
    }
}

/// Struct layout through libffi, so it matches the platform's C compiler.
enum FFILayout {
    struct Layout {
        var size: Int
        var alignment: Int
        var offsets: [Int]
    }

    static func compute(_ fields: [(FieldType, StructClass?)], place: String) throws(AmberError) -> Layout {
        // ffi_type nodes for nested structs must outlive the call; collect them and free at the end.
        var allocations: [UnsafeMutableRawPointer] = []
        defer { allocations.forEach { $0.deallocate() } }
        // One ffi_type per nested class, shared by every field of that class: libffi then lays
        // each class out once, instead of once per path through the nesting (exponential).
        var nestedTypes: [ObjectIdentifier: UnsafeMutablePointer<ffi_type>] = [:]

        func structType(_ members: [(FieldType, StructClass?)]) -> UnsafeMutablePointer<ffi_type> {
            let elements = UnsafeMutablePointer<UnsafeMutablePointer<ffi_type>?>.allocate(capacity: members.count + 1)
            allocations.append(UnsafeMutableRawPointer(elements))
            for (i, member) in members.enumerated() { elements[i] = elementType(member) }
            elements[members.count] = nil
            let type = UnsafeMutablePointer<ffi_type>.allocate(capacity: 1)
            allocations.append(UnsafeMutableRawPointer(type))
            type.initialize(to: ffi_type(size: 0, alignment: 0, type: UInt16(FFI_TYPE_STRUCT), elements: elements))
            return type
        }

        func elementType(_ member: (FieldType, StructClass?)) -> UnsafeMutablePointer<ffi_type> {
            switch member.0 {
            case .int8: return amber_ffi_sint8()
            case .int16: return amber_ffi_sint16()
            case .int32: return amber_ffi_sint32()
            case .int64: return amber_ffi_sint64()
            // C's _Bool is one byte on every ABI Amber targets.
            case .uint8, .bool: return amber_ffi_uint8()
            case .uint16: return amber_ffi_uint16()
            case .uint32: return amber_ffi_uint32()
            case .uint64: return amber_ffi_uint64()
            case .float: return amber_ffi_float()
            case .double: return amber_ffi_double()
            case .structure:
                guard let nestedClass = member.1 else { return structType([]) }
                if let shared = nestedTypes[ObjectIdentifier(nestedClass)] { return shared }
                let made = structType(nestedClass.fields.map { ($0.type, $0.nested) })
                nestedTypes[ObjectIdentifier(nestedClass)] = made
                return made
            }
        }

        let root = structType(fields)
        var offsets = [Int](repeating: 0, count: fields.count)
        let status = offsets.withUnsafeMutableBufferPointer { buffer in
            ffi_get_struct_offsets(FFI_DEFAULT_ABI, root, buffer.baseAddress)
        }
        guard status == FFI_OK else {
            throw .invalidValue(place: place, expected: "a struct libffi can lay out", given: "ffi status \(status.rawValue)")
        }
        return Layout(size: root.pointee.size, alignment: Int(root.pointee.alignment), offsets: offsets)
    }
}
