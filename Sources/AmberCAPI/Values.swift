import Amber
import AmberHeaders
import Foundation

/// Conversions between `amber_value` and ``Value``.
enum CValue {
    private static let referenceOffset = Date(timeIntervalSince1970: 0).timeIntervalSinceReferenceDate

    /// Reads a caller-filled value (borrowed memory), copying what it points to.
    static func read(_ pointer: UnsafePointer<amber_value>?, _ parameter: String) throws(CAPIError) -> Value {
        guard let pointer else { throw .null(parameter) }
        let c = pointer.pointee
        func invalid(_ message: String) -> CAPIError {
            CAPIError(AMBER_E_INVALID_VALUE, "\(parameter): \(message)", origin: parameter)
        }
        func bytes(_ data: UnsafeRawPointer?, _ length: Int) throws(CAPIError) -> UnsafeRawBufferPointer {
            if length == 0 { return UnsafeRawBufferPointer(start: nil, count: 0) }
            guard length > 0, length <= Int(Int32.max) else { throw invalid("a length of \(UInt(bitPattern: length)) bytes") }
            guard let data else { throw invalid("a NULL pointer with length \(length)") }
            return UnsafeRawBufferPointer(start: data, count: length)
        }
        func text() throws(CAPIError) -> String {
            let raw = try bytes(UnsafeRawPointer(c.v.text.data), c.v.text.length)
            guard let string = String(validating: raw, as: UTF8.self) else {
                throw CAPIError(AMBER_E_INVALID_UTF8, "\(parameter): the string is not valid UTF-8", origin: parameter)
            }
            return string
        }
        switch Int(c.type) {
        case AMBER_VALUE_NULL: return .null
        case AMBER_VALUE_BOOL: return .bool(c.v.boolean != 0)
        case AMBER_VALUE_INT: return .int(c.v.integer)
        case AMBER_VALUE_DOUBLE: return .double(c.v.real)
        case AMBER_VALUE_FLOAT: return .float(c.v.real32)
        case AMBER_VALUE_STRING: return .string(try text())
        case AMBER_VALUE_BINARY: return .binary(Data(try bytes(c.v.bytes.data, c.v.bytes.length)))
        case AMBER_VALUE_DATE: return .date(Date(timeIntervalSince1970: c.v.date))
        case AMBER_VALUE_DECIMAL:
            let literal = try text()
            guard let decimal = try? Value.decimal(parsing: literal) else { throw invalid("\"\(literal)\" is not a decimal number") }
            return .decimal(decimal)
        case AMBER_VALUE_UUID:
            return .uuid(withUnsafeBytes(of: c.v.uuid) { raw in UUID(uuid: raw.load(as: uuid_t.self)) })
        case AMBER_VALUE_URI:
            let literal = try text()
            guard let url = URL(string: literal) else { throw invalid("\"\(literal)\" is not a URI") }
            return .uri(url)
        case AMBER_VALUE_OBJECT_ID:
            let literal = try text()
            guard let url = URL(string: literal), let id = ObjectID(uri: url) else {
                throw invalid("\"\(literal)\" is not an object ID URI")
            }
            return .objectID(id)
        case AMBER_VALUE_CUSTOM:
            let className = try name(c.v.custom.class_name, "\(parameter)->v.custom.class_name")
            return .custom(CustomValue(className: className, bytes: Data(try bytes(c.v.custom.data, c.v.custom.length))))
        case AMBER_VALUE_PLIST:
            let json = try text()
            do throws(AmberError) {
                return try Value(propertyListJSON: json)
            } catch {
                throw invalid("\(error)")
            }
        default:
            throw invalid("unknown value type \(c.type)")
        }
    }

    /// Fills `out` with `value`, allocating what it points to (released by amber_value_release).
    static func write(_ value: Value, to out: UnsafeMutablePointer<amber_value>) throws(CAPIError) {
        var c = amber_value()
        func setText(_ type: Int, _ string: String) throws(CAPIError) {
            let (buffer, length) = try mallocString(string)
            c.type = Int32(type)
            c.v.text.data = UnsafePointer(buffer)
            c.v.text.length = length
        }
        func copy(_ data: Data) throws(CAPIError) -> UnsafeMutableRawPointer? {
            guard !data.isEmpty else { return nil }
            guard let buffer = malloc(data.count) else { throw CAPIError(AMBER_E_INTERNAL, "out of memory") }
            data.copyBytes(to: buffer.assumingMemoryBound(to: UInt8.self), count: data.count)
            return buffer
        }
        switch value {
        case .null: c.type = Int32(AMBER_VALUE_NULL)
        case .bool(let b): c.type = Int32(AMBER_VALUE_BOOL); c.v.boolean = b ? 1 : 0
        case .int(let i): c.type = Int32(AMBER_VALUE_INT); c.v.integer = i
        case .double(let d): c.type = Int32(AMBER_VALUE_DOUBLE); c.v.real = d
        case .float(let f): c.type = Int32(AMBER_VALUE_FLOAT); c.v.real32 = f
        case .string(let s): try setText(AMBER_VALUE_STRING, s)
        case .binary(let d):
            c.type = Int32(AMBER_VALUE_BINARY)
            c.v.bytes.data = UnsafeRawPointer(try copy(d))
            c.v.bytes.length = d.count
        case .date(let d): c.type = Int32(AMBER_VALUE_DATE); c.v.date = d.timeIntervalSince1970
        case .decimal(let d): try setText(AMBER_VALUE_DECIMAL, d.description)
        case .uuid(let u):
            c.type = Int32(AMBER_VALUE_UUID)
            withUnsafeBytes(of: u.uuid) { raw in withUnsafeMutableBytes(of: &c.v.uuid) { $0.copyMemory(from: raw) } }
        case .uri(let u): try setText(AMBER_VALUE_URI, u.absoluteString)
        case .objectID(let id): try setText(AMBER_VALUE_OBJECT_ID, id.uriRepresentation.absoluteString)
        case .custom(let custom):
            c.type = Int32(AMBER_VALUE_CUSTOM)
            c.v.custom.class_name = UnsafePointer(try mallocString(custom.className).0)
            c.v.custom.data = UnsafeRawPointer(try copy(custom.bytes))
            c.v.custom.length = custom.bytes.count
        case .array, .dictionary:
            try setText(AMBER_VALUE_PLIST, try core { () throws(AmberError) in try value.propertyListJSON() })
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
