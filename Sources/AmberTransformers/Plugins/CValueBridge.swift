import AmberPluginABI
import AmberValues
import Foundation

/// The one conversion of a value that C code hands over (the host's
/// `amber_value` through the C API, a plugin's `amber_plugin_value`) into a
/// ``/AmberValues/Value``, with every check a foreign pointer and length need. Both C
/// structs number their types alike (`AMBER_VALUE_*` = `AMBER_PLUGIN_VALUE_*`);
/// each caller takes its struct apart into ``Parts`` and maps ``Problem`` to
/// its own error.
package enum CValueBridge {
    /// A value taken apart: its type code and whichever of number, real and bytes the type uses.
    package struct Parts {
        package var type: Int32
        package var integer: Int64 = 0
        package var real: Double = 0
        package var data: UnsafeRawPointer?
        package var length: Int = 0
        /// Custom values: the class name (the C API's value carries it, a plugin's comes from its declaration).
        package var className: String?

        package init(type: Int32) { self.type = type }
    }

    /// Why the parts are not a value.
    package struct Problem: Error, CustomStringConvertible {
        package let description: String
        /// The bytes of a string are not UTF-8 (the C API has its own status for that).
        package let isUTF8: Bool
    }

    /// The value the parts describe, copying every byte they point to.
    package static func value(_ parts: Parts) throws(Problem) -> Value {
        switch Int(parts.type) {
        case AMBER_PLUGIN_VALUE_NULL: return .null
        case AMBER_PLUGIN_VALUE_BOOL:
            guard parts.integer == 0 || parts.integer == 1 else { throw problem("a Boolean of \(parts.integer) (0 or 1 expected)") }
            return .bool(parts.integer == 1)
        case AMBER_PLUGIN_VALUE_INT: return .int(parts.integer)
        case AMBER_PLUGIN_VALUE_DOUBLE: return .double(parts.real)
        case AMBER_PLUGIN_VALUE_FLOAT:
            // A plugin hands floats over as doubles: only one a Float holds exactly is a Float.
            let float = Float(parts.real)
            guard Double(float) == parts.real || parts.real.isNaN else {
                throw problem("\(parts.real) as a Float would be \(float) (not exact)")
            }
            return .float(float)
        case AMBER_PLUGIN_VALUE_DATE:
            return .date(try date(secondsSince1970: parts.real))
        case AMBER_PLUGIN_VALUE_STRING: return .string(try text(parts))
        case AMBER_PLUGIN_VALUE_BINARY: return .binary(Data(try bytes(parts)))
        case AMBER_PLUGIN_VALUE_DECIMAL:
            let literal = try text(parts)
            guard let decimal = ScaledDecimal(literal) else {
                throw problem("\"\(literal)\" \(ScaledDecimal.refusal(of: literal) ?? "is not a decimal number")")
            }
            return .decimal(decimal)
        case AMBER_PLUGIN_VALUE_UUID:
            let raw = try bytes(parts)
            guard raw.count == 16 else { throw problem("a UUID of \(raw.count) bytes (16 expected)") }
            return .uuid(UUID(uuid: raw.loadUnaligned(as: uuid_t.self)))
        case AMBER_PLUGIN_VALUE_URI:
            let literal = try text(parts)
            guard let url = Value.exactURI(literal) else { throw problem("\"\(literal)\" is not a URI") }
            return .uri(url)
        case AMBER_PLUGIN_VALUE_CUSTOM:
            return .custom(CustomValue(className: parts.className ?? "", copying: try bytes(parts)))
        case objectIDType:
            let literal = try text(parts)
            guard let url = Value.exactURI(literal), let id = ObjectID(uri: url) else {
                throw problem("\"\(literal)\" is not an object ID URI")
            }
            return .objectID(id)
        case propertyListType:
            let json = try text(parts)
            do throws(AmberError) {
                return try Value(propertyListJSON: json)
            } catch {
                throw problem("\(error)")
            }
        default:
            throw problem("unknown value type \(parts.type)")
        }
    }

    /// The date `seconds` after 1970 names. A Date counts from 2001: moving
    /// the origin may round below a microsecond (as a double's own precision
    /// does), never more, or the value is refused rather than changed.
    package static func date(secondsSince1970 seconds: Double) throws(Problem) -> Date {
        let date = Date(timeIntervalSince1970: seconds)
        guard abs(date.timeIntervalSince1970 - seconds) < 0.5e-6 || !seconds.isFinite else {
            throw problem("the date \(seconds) (seconds since 1970) cannot be held to the microsecond: a date is a double count of seconds since 2001")
        }
        return date
    }

    /// amber.h's AMBER_VALUE_OBJECT_ID and AMBER_VALUE_PLIST, which the plugin ABI does not carry.
    package static let objectIDType = 11, propertyListType = 13

    /// The bytes `parts` points to. A length arrives as a signed `Int`, so
    /// garbage (SIZE_MAX from a bug) is negative and must not become a trapping buffer.
    private static func bytes(_ parts: Parts) throws(Problem) -> UnsafeRawBufferPointer {
        if parts.length == 0 { return UnsafeRawBufferPointer(start: nil, count: 0) }
        guard parts.length > 0, parts.length <= Int(Int32.max) else {
            throw problem("a length of \(UInt(bitPattern: parts.length)) bytes")
        }
        guard let data = parts.data else { throw problem("a NULL pointer with length \(parts.length)") }
        return UnsafeRawBufferPointer(start: data, count: parts.length)
    }

    private static func text(_ parts: Parts) throws(Problem) -> String {
        guard let string = String(exactUTF8: try bytes(parts)) else {
            throw Problem(description: "the string is not valid UTF-8", isUTF8: true)
        }
        return string
    }

    private static func problem(_ message: String) -> Problem { Problem(description: message, isUTF8: false) }
}
