import AmberValues
import Foundation

/// Plist-like values ↔ JSON text, so they stay readable with SQLite's JSON
/// functions (`json_extract(tags, '$[0]')`). The same text carries arrays and
/// dictionaries across the C API and into Python.
///
/// Every plist-like value reads back exactly (type and value). JSON lacks
/// some of them; they are written as one-key objects:
///
/// - `{"$date": "2024-03-01T12:00:00.5Z"}`: exact ISO 8601 (``DateText``);
/// - `{"$binary": "<base64>"}` and `{"$uuid": "…"}`;
/// - `{"$float": 0.10000000149011612}`: a single-precision number (JSON's
///   numbers are doubles);
/// - `{"$dictionary": {…}}`: a dictionary whose one key is one of these
///   names, so it does not read back as a date or bytes.
///
/// A number with a fraction or exponent is a double (`1.0`), one without is
/// an integer. Refused, with nothing written: NaN and infinity (JSON has
/// neither), dates outside ``DateText/range``, and integers beyond 64 bits.
/// Keys are sorted, so equal values give equal text.
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

    /// The one-key objects that stand for values JSON lacks.
    static let reservedKeys: Set<String> = ["$date", "$binary", "$uuid", "$float", "$dictionary"]

    /// Deeper values are refused, as the archive refuses them: with the
    /// one-key wrappers, what is written stays within what the reader takes.
    static let maximumDepth = PropertyListArchive.maximumDepth

    static func json(_ value: Value, depth: Int = 0) throws -> JSONValue {
        guard depth < maximumDepth else { throw Unrepresentable(description: "nested deeper than \(maximumDepth) levels") }
        switch value {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(i)
        case .double(let d):
            guard d.isFinite else { throw Unrepresentable(description: "JSON cannot hold the double \(d)") }
            return .double(d)
        case .float(let f):
            guard f.isFinite else { throw Unrepresentable(description: "JSON cannot hold the float \(f)") }
            return .object(["$float": .double(Double(f))])
        case .string(let s): return .string(s)
        case .binary(let d): return .object(["$binary": .string(d.base64EncodedString())])
        case .date(let d):
            guard let text = DateText.format(d) else {
                throw Unrepresentable(description: DateText.problem(d) ?? "the date \(d.timeIntervalSince1970) cannot be written exactly")
            }
            return .object(["$date": .string(text)])
        case .uuid(let u): return .object(["$uuid": .string(u.uuidString)])
        case .array(let items): return .array(try items.map { try json($0, depth: depth + 1) })
        case .dictionary(let items):
            let object = JSONValue.object(try items.mapValues { try json($0, depth: depth + 1) })
            if items.count == 1, let key = items.keys.first, reservedKeys.contains(key) { return .object(["$dictionary": object]) }
            return object
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
            guard items.count == 1, let (key, inner) = items.first, reservedKeys.contains(key) else {
                return .dictionary(try items.mapValues(value))
            }
            switch (key, inner) {
            case ("$binary", .string(let text)):
                guard let data = Data(base64Encoded: text) else { throw Unrepresentable(description: "bad base64 in $binary") }
                return .binary(data)
            case ("$date", .string(let text)):
                guard let date = DateText.parse(text) else {
                    throw Unrepresentable(description: "$date \"\(text)\" is not an ISO 8601 date of the years 1 to 9999 that a date holds exactly")
                }
                return .date(date)
            case ("$uuid", .string(let text)):
                guard let uuid = UUID(uuidString: text) else { throw Unrepresentable(description: "bad UUID in $uuid") }
                return .uuid(uuid)
            case ("$float", .double(let number)):
                let float = Float(number)
                guard Double(float) == number else { throw Unrepresentable(description: "$float \(number) is not a single-precision number") }
                return .float(float)
            case ("$float", .int(let number)):
                // Integers a Float holds exactly (|n| <= 2^24, and some beyond).
                guard let float = Float(exactly: number) else { throw Unrepresentable(description: "$float \(number) is not a single-precision number") }
                return .float(float)
            case ("$dictionary", .object(let members)):
                return .dictionary(try members.mapValues(value))
            default:
                throw Unrepresentable(description: "\(key) holding \(inner.kind)")
            }
        }
    }
}
