import AmberValues
import Foundation

/// Plist-like values ↔ JSON text, so they stay readable with SQLite's JSON
/// functions (`json_extract(tags, '$[0]')`).
///
/// JSON has no dates, bytes or UUIDs; they are written as one-key objects
/// `{"$date": "2024-03-01T12:00:00.000Z"}` (millisecond precision),
/// `{"$binary": "<base64>"}` and `{"$uuid": "…"}`, and read back as such.
/// Floats are read back as doubles. Keys are sorted, so equal values give
/// equal text.
enum JSONTransformer {
    static let transformer = Transformer(
        name: Registry.jsonTransformerName, from: ValueClass.propertyListName, to: ValueClass.string.rawValue,
        source: "built-in",
        forward: { value in
            if value.isNull { return .null }
            return .string(try json(value).text())
        },
        reverse: { value in
            guard case .string(let text) = value else { return .null }
            return try JSONTransformer.value(JSONValue.parse(Data(text.utf8)))
        })

    struct Unrepresentable: Error, CustomStringConvertible {
        let description: String
    }

    static func json(_ value: Value) throws -> JSONValue {
        switch value {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(i)
        case .double(let d):
            guard d.isFinite else { throw Unrepresentable(description: "JSON cannot hold \(d)") }
            return .double(d)
        case .float(let f):
            guard f.isFinite else { throw Unrepresentable(description: "JSON cannot hold \(f)") }
            return .double(Double(String(f)) ?? Double(f))
        case .string(let s): return .string(s)
        case .binary(let d): return .object(["$binary": .string(d.base64EncodedString())])
        case .date(let d): return .object(["$date": .string(ValueFormat.iso8601(d))])
        case .uuid(let u): return .object(["$uuid": .string(u.uuidString)])
        case .array(let items): return .array(try items.map(json))
        case .dictionary(let items): return .object(try items.mapValues(json))
        case .decimal, .uri, .objectID, .custom:
            throw Unrepresentable(description: "\(value.className) is not plist-like")
        }
    }

    static func value(_ json: JSONValue) throws -> Value {
        switch json {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(i)
        case .double(let d): return .double(d)
        case .string(let s): return .string(s)
        case .array(let items): return .array(try items.map(value))
        case .object(let items):
            if items.count == 1, let (key, inner) = items.first, case .string(let text) = inner {
                switch key {
                case "$binary":
                    guard let data = Data(base64Encoded: text) else { throw Unrepresentable(description: "bad base64 in $binary") }
                    return .binary(data)
                case "$date":
                    guard let date = ValueFormat.parseISO8601(text) else { throw Unrepresentable(description: "bad date in $date") }
                    return .date(date)
                case "$uuid":
                    guard let uuid = UUID(uuidString: text) else { throw Unrepresentable(description: "bad UUID in $uuid") }
                    return .uuid(uuid)
                default: break
                }
            }
            return .dictionary(try items.mapValues(value))
        }
    }
}
