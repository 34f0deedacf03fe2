import Amber
import AmberHeaders
import Foundation

/// Conversions between `amber_value` and ``Value``.
enum CValue {
    /// Reads a caller-filled value (borrowed memory), copying what it points to.
    /// `parameter` is worded only for an error: batch inserts name each value by row.
    static func read(_ pointer: UnsafePointer<amber_value>?, _ parameter: @autoclosure () -> String) throws(CAPIError) -> Value {
        guard let pointer else { throw .null(parameter()) }
        let c = pointer.pointee
        var parts = CValueBridge.Parts(type: c.type)
        switch Int(c.type) {
        case AMBER_VALUE_NULL: break  // the union is not read: a caller may set the type alone
        case AMBER_VALUE_BOOL: parts.integer = Int64(c.v.boolean)
        case AMBER_VALUE_INT: parts.integer = c.v.integer
        case AMBER_VALUE_DOUBLE: parts.real = c.v.real
        case AMBER_VALUE_FLOAT: parts.real = Double(c.v.real32)
        case AMBER_VALUE_DATE: parts.real = c.v.date
        case AMBER_VALUE_BINARY: (parts.data, parts.length) = (c.v.bytes.data, c.v.bytes.length)
        case AMBER_VALUE_CUSTOM:
            parts.className = try name(c.v.custom.class_name, "\(parameter())->v.custom.class_name")
            (parts.data, parts.length) = (c.v.custom.data, c.v.custom.length)
        case AMBER_VALUE_UUID:
            // Inline bytes: the bridge copies them before this frame ends.
            return try withUnsafeBytes(of: c.v.uuid) { (raw) throws(CAPIError) in
                (parts.data, parts.length) = (raw.baseAddress, raw.count)
                return try bridge(parts, parameter())
            }
        default: (parts.data, parts.length) = (UnsafeRawPointer(c.v.text.data), c.v.text.length)
        }
        return try bridge(parts, parameter())
    }

    private static func bridge(_ parts: CValueBridge.Parts, _ parameter: @autoclosure () -> String) throws(CAPIError) -> Value {
        do throws(CValueBridge.Problem) {
            return try CValueBridge.value(parts)
        } catch {
            let place = parameter()
            throw CAPIError(error.isUTF8 ? AMBER_E_INVALID_UTF8 : AMBER_E_INVALID_VALUE, "\(place): \(error)", origin: place)
        }
    }

    /// How a value looks in an `amber_value`: complete in place, or text,
    /// bytes or a custom value whose bytes the writer puts somewhere (a
    /// malloc'd copy for amber_object_get, a batch's arena for a batch).
    enum Form {
        case inPlace(amber_value)
        case text(Int32, String)
        case bytes(Data)
        case custom(CustomValue)
    }

    static func form(_ value: Value) throws(CAPIError) -> Form {
        var c = amber_value()
        switch value {
        case .null: c.type = Int32(AMBER_VALUE_NULL)
        case .bool(let b): c.type = Int32(AMBER_VALUE_BOOL); c.v.boolean = b ? 1 : 0
        case .int(let i): c.type = Int32(AMBER_VALUE_INT); c.v.integer = i
        case .double(let d): c.type = Int32(AMBER_VALUE_DOUBLE); c.v.real = d
        case .float(let f): c.type = Int32(AMBER_VALUE_FLOAT); c.v.real32 = f
        case .date(let d): c.type = Int32(AMBER_VALUE_DATE); c.v.date = d.timeIntervalSince1970
        case .uuid(let u):
            c.type = Int32(AMBER_VALUE_UUID)
            withUnsafeBytes(of: u.uuid) { raw in withUnsafeMutableBytes(of: &c.v.uuid) { $0.copyMemory(from: raw) } }
        case .string(let s): return .text(Int32(AMBER_VALUE_STRING), s)
        case .decimal(let d): return .text(Int32(AMBER_VALUE_DECIMAL), d.description)
        case .uri(let u): return .text(Int32(AMBER_VALUE_URI), u.absoluteString)
        case .objectID(let id): return .text(Int32(AMBER_VALUE_OBJECT_ID), id.uriRepresentation.absoluteString)
        case .array, .dictionary:
            return .text(Int32(AMBER_VALUE_PLIST), try core { () throws(AmberError) in try value.propertyListJSON() })
        case .binary(let d): return .bytes(d)
        case .custom(let custom): return .custom(custom)
        }
        return .inPlace(c)
    }

    /// Fills `out` with `value`, allocating what it points to (released by amber_value_release).
    static func write(_ value: Value, to out: UnsafeMutablePointer<amber_value>) throws(CAPIError) {
        func copy(_ bytes: UnsafeRawBufferPointer) throws(CAPIError) -> UnsafeMutableRawPointer? {
            guard let source = bytes.baseAddress, !bytes.isEmpty else { return nil }
            guard let buffer = malloc(bytes.count) else { throw CAPIError(AMBER_E_INTERNAL, "out of memory") }
            buffer.copyMemory(from: source, byteCount: bytes.count)
            return buffer
        }
        var c = amber_value()
        switch try form(value) {
        case .inPlace(let complete):
            c = complete
        case .text(let type, let string):
            let (buffer, length) = try mallocString(string)
            c.type = type
            c.v.text.data = UnsafePointer(buffer)
            c.v.text.length = length
        case .bytes(let data):
            c.type = Int32(AMBER_VALUE_BINARY)
            // Data's withUnsafeBytes rethrows untyped errors: carry the typed one out in a Result.
            c.v.bytes.data = UnsafeRawPointer(try data.withUnsafeBytes { raw in Result { () throws(CAPIError) in try copy(raw) } }.get())
            c.v.bytes.length = data.count
        case .custom(let custom):
            c.type = Int32(AMBER_VALUE_CUSTOM)
            c.v.custom.class_name = UnsafePointer(try mallocString(custom.className).0)
            c.v.custom.data = UnsafeRawPointer(try custom.withUnsafeBytes { (raw) throws(CAPIError) in try copy(raw) })
            c.v.custom.length = custom.count
        }
        out.pointee = c
    }

    /// Frees what `write` allocated.
    static func release(_ value: UnsafeMutablePointer<amber_value>) {
        let c = value.pointee
        switch Int(c.type) {
        case AMBER_VALUE_STRING, AMBER_VALUE_DECIMAL, AMBER_VALUE_URI, AMBER_VALUE_OBJECT_ID, AMBER_VALUE_PLIST:
            free(UnsafeMutableRawPointer(mutating: c.v.text.data))
        case AMBER_VALUE_BINARY:
            free(UnsafeMutableRawPointer(mutating: c.v.bytes.data))
        case AMBER_VALUE_CUSTOM:
            free(UnsafeMutableRawPointer(mutating: c.v.custom.class_name))
            free(UnsafeMutableRawPointer(mutating: c.v.custom.data))
        default:
            break
        }
        value.pointee = amber_value()
    }
}

@c @implementation
public func amber_value_release(_ value: UnsafeMutablePointer<amber_value>?) {
    guard let value else { return }
    CValue.release(value)
}

@c @implementation
public func amber_values_release(_ values: UnsafeMutablePointer<amber_value>?, _ count: Int) {
    guard let values else { return }
    for i in 0..<max(count, 0) { CValue.release(values + i) }
    free(values)
}
