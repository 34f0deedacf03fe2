import Foundation

/// A JSON document as a tree, decoded strictly: `true` stays a Boolean and
/// `1` stays an integer (JSONSerialization folds both into NSNumber).
package enum JSONValue: Codable, Equatable {
    case null, bool(Bool), int(Int64), double(Double), string(String)
    case array([JSONValue]), object([String: JSONValue])

    package init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let b = try? container.decode(Bool.self) { self = .bool(b) }
        else if let i = try? container.decode(Int64.self) { self = .int(i) }
        else if let d = try? container.decode(Double.self) { self = .double(d) }
        else if let s = try? container.decode(String.self) { self = .string(s) }
        else if let a = try? container.decode([JSONValue].self) { self = .array(a) }
        else { self = .object(try container.decode([String: JSONValue].self)) }
    }

    package func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let b): try container.encode(b)
        case .int(let i): try container.encode(i)
        case .double(let d): try container.encode(d)
        case .string(let s): try container.encode(s)
        case .array(let a): try container.encode(a)
        case .object(let o): try container.encode(o)
        }
    }

    /// A short name of the JSON kind, for error messages.
    package var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .int, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// Parses `data`; a syntax error becomes an ``AmberError/invalidJSON(path:message:)`` at `$`.
    package static func parse(_ data: Data) throws(AmberError) -> JSONValue {
        do {
            return try JSONDecoder().decode(JSONValue.self, from: data)
        } catch let DecodingError.dataCorrupted(context) {
            throw .invalidJSON(path: "$", message: "not valid JSON: \(context.underlyingError.map { "\($0)" } ?? context.debugDescription)")
        } catch {
            throw .invalidJSON(path: "$", message: "not valid JSON: \(error)")
        }
    }

    /// Canonical text: sorted keys, no extra white space unless `pretty`.
    package func text(pretty: Bool = false) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a tree of plain JSON values cannot fail.
        guard let data = try? encoder.encode(self) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }
}
