import AmberValues
import Foundation

/// The extended attributes of an object of an extensible entity, as stored:
/// one JSON object per row, in column `_extra` (null when the object has none).
///
///     {"key": value, …, "#": {"key": type, …}}
///
/// A string, Boolean or integer is stored as itself. Every other value is
/// stored as the form its modelled column would hold, where JSON can hold it,
/// with its type under `"#"` (a name no key can have): `double` and `float`
/// as numbers, `date` as seconds since 2001-01-01 UTC, `uuid` and `uri` as
/// text, `binary` as Base64 text. Where the JSON number only stands in for
/// the value, the type carries it exactly: a decimal is its nearest Double
/// typed `decimal:<digits>`; NaN is null typed `double:nan` (as a REAL
/// column holds NULL), -0.0 is 0 typed `double:-0`, and the infinities are
/// the largest finite numbers typed `double:inf` and `double:-inf` (likewise
/// for `float` and `date`). An array's type is the list of its
/// elements' types (null for untyped ones), a dictionary's the object of its
/// typed keys' types; neither is written when nothing in it is typed. So
/// `json_extract(_extra, '$.key')` yields what a predicate compares, and every
/// value reads back exactly as it was set: a value that would not is refused.
package enum ExtendedValues {
    /// The column of an extensible entity's table that holds them.
    package static let columnName = "_extra"
    /// Deeper arrays and dictionaries are refused at set, and a stored value
    /// nesting deeper is reported, never followed.
    package static let maximumDepth = 32
    private static let typesKey = "#"

    // MARK: Keys

    /// Checks that `key` can name an extended attribute of `entity`.
    ///
    /// - Throws: ``/AmberValues/AmberError/unknownAttribute(entity:name:suggestion:)`` if
    ///   `entity` is not extensible; ``/AmberValues/AmberError/invalidValue(place:expected:given:)``
    ///   if `key` is not a valid name or is the name of an attribute or
    ///   relationship of any entity of its hierarchy (they share a table).
    package static func checkKey(_ key: String, of entity: Entity) throws(AmberError) {
        guard entity.isExtensible else {
            throw .unknownAttribute(entity: entity.name, name: key,
                                    suggestion: nearestName(to: key, in: entity.attributes.map(\.name)))
        }
        let place = "\(entity.name).\(key)"
        guard Identifier.isValid(key) else {
            throw .invalidValue(place: place, expected: "an extended attribute name (\(Identifier.rule))", given: "\"\(key)\"")
        }
        if let modelled = entity.modelledNames[key.lowercased()] {
            throw .invalidValue(place: place, expected: "an extended attribute name that no modelled attribute or relationship uses",
                                given: "\"\(key)\", which clashes with the modelled \(modelled)")
        }
    }

    // MARK: Values

    /// Checks that `value` can be stored as an extended attribute at `place`
    /// and will read back exactly (type and value).
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidValue(place:expected:given:)`` naming `place`.
    package static func check(_ value: Value, place: String) throws(AmberError) {
        let expected = "a property-list value, date, decimal, UUID or URI (nested at most \(maximumDepth) deep) that reads back exactly"
        guard tree(value, depth: 0) != nil else {
            throw .invalidValue(place: place, expected: expected, given: "\(value.valueClass) \(value)")
        }
        if let problem = value.storageProblem() {
            throw .invalidValue(place: place, expected: expected, given: "\(value.valueClass) \(value), but \(problem)")
        }
        // Through the text, as a save and a fetch take it.
        guard let back = try? decode(encode(["v": value]), place: place)["v"] ?? .null, back.isIdentical(to: value) else {
            throw .invalidValue(place: place, expected: expected, given: "\(value.valueClass) \(value), which would read back changed")
        }
    }

    /// The stored form of `values` (null ones are absent keys): null when there are none.
    /// The values were checked with ``check(_:place:)``.
    package static func encode(_ values: [String: Value]) -> Value {
        guard !values.isEmpty else { return .null }
        var object: [String: JSONValue] = [:], types: [String: JSONValue] = [:]
        for (key, value) in values where !value.isNull {
            guard let (json, type) = tree(value, depth: 0) else { continue }
            object[key] = json
            types[key] = type
        }
        if !types.isEmpty { object[typesKey] = .object(types) }
        return .string(JSONValue.object(object).text())
    }

    /// The values in stored form `stored` (null: none).
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidValue(place:expected:given:)`` naming
    ///   `place` if the text is not extended attributes as Amber writes them
    ///   (written by another tool, or damaged).
    package static func decode(_ stored: Value, place: String) throws(AmberError) -> [String: Value] {
        func corrupt(_ what: String) -> AmberError {
            .invalidValue(place: place, expected: "extended attributes stored as a JSON object of typed values", given: what)
        }
        if stored.isNull { return [:] }
        guard case .string(let text) = stored else { throw corrupt("a stored \(stored.valueClass)") }
        let root: JSONValue
        do throws(AmberError) {
            root = try JSONValue.parse(Data(text.utf8))
        } catch {
            throw corrupt("text that is not JSON (\(error))")
        }
        guard case .object(var object) = root else { throw corrupt("JSON \(root.kind)") }
        var types: [String: JSONValue] = [:]
        switch object.removeValue(forKey: typesKey) {
        case nil: break
        case .object(let found)?: types = found
        case let other?: throw corrupt("\"\(typesKey)\" holding \(other.kind)")
        }
        var values: [String: Value] = [:]
        for (key, json) in object {
            guard Identifier.isValid(key) else { throw corrupt("the key \"\(key)\"") }
            do throws(Malformed) {
                let value = try self.value(json, type: types[key], depth: 0)
                if !value.isNull { values[key] = value }
            } catch {
                throw corrupt("\"\(key)\": \(error.message)")
            }
        }
        return values
    }

    /// The keys whose values differ between stored forms `old` and `new`,
    /// sorted; a form that cannot be read counts as holding no keys.
    package static func changedKeys(from old: Value, to new: Value) -> [String] {
        guard old != new else { return [] }
        let before = (try? decode(old, place: "")) ?? [:], after = (try? decode(new, place: "")) ?? [:]
        return differingKeys(before, after).sorted()
    }

    /// The keys whose values differ between `before` and `after` (an absent key holds null), in no order.
    package static func differingKeys(_ before: [String: Value], _ after: [String: Value]) -> [String] {
        Set(before.keys).union(after.keys).filter { key in !same(before[key], after[key]) }
    }

    /// Merges key by key: the keys changed here (between `read`, the stored
    /// form this context read, and `current`) over `stored`, the form the
    /// store holds now. With `storeWins`, a key the store changed too keeps
    /// the store's value. Forms that cannot be read leave `current` as it is.
    package static func merge(stored: Value, read: Value, current: Value, storeWins: Bool) -> Value {
        guard let now = try? decode(stored, place: ""), let before = try? decode(read, place: ""),
              let here = try? decode(current, place: "")
        else { return current }
        var merged = now
        for key in differingKeys(before, here) where !storeWins || same(before[key], now[key]) { merged[key] = here[key] }
        return encode(merged)
    }

    /// A predicate's constant as an extended attribute's stored form compares
    /// with it in SQL; nil for values no stored form equals (arrays,
    /// dictionaries, object IDs, custom values).
    package static func comparable(_ value: Value) -> Value? {
        switch value {
        case .null, .bool, .int, .string: value
        case .decimal: value.numericDouble.map(Value.double)
        case .double(let number): comparable(number)
        case .float(let number): comparable(Double(number))
        case .date(let date): comparable(date.timeIntervalSinceReferenceDate)
        case .uuid(let uuid): .string(uuid.uuidString)
        case .uri(let uri): .string(uri.absoluteString)
        case .binary(let bytes): .string(bytes.base64EncodedString())
        case .array, .dictionary, .objectID, .custom: nil
        }
    }

    /// An extended attribute's value as a store reads it in a predicate or a
    /// sort: as ``comparable(_:)``, and an array or dictionary as the JSON
    /// text it is stored as (what the stores' `amber_extended` returns).
    package static func asStoresRead(_ value: Value) -> Value {
        if let form = comparable(value) { return form }
        return tree(value, depth: 0).map { .string($0.0.text()) } ?? .null
    }

    private static func same(_ a: Value?, _ b: Value?) -> Bool { (a ?? .null).isIdentical(to: b ?? .null) }

    // MARK: Value ↔ JSON

    /// A value's JSON form and its type entry (nil: untyped); nil if it cannot be stored.
    private static func tree(_ value: Value, depth: Int) -> (JSONValue, JSONValue?)? {
        switch value {
        case .null: return (.null, nil)
        case .bool(let flag): return (.bool(flag), nil)
        case .int(let number): return (.int(number), nil)
        case .string(let text): return (.string(text), nil)
        case .double(let value): return (number(value), typed("double", value))
        case .float(let value): return (number(Double(value)), typed("float", Double(value)))
        case .date(let date): return (number(date.timeIntervalSinceReferenceDate), typed("date", date.timeIntervalSinceReferenceDate))
        case .decimal(let number):
            // Compared as a number, as modelled decimals are ordered; read back from the digits in its type.
            return (value.numericDouble.map(JSONValue.double) ?? .null, .string("decimal:" + number.description))
        case .uuid(let uuid): return (.string(uuid.uuidString), .string("uuid"))
        case .uri(let uri): return (.string(uri.absoluteString), .string("uri"))
        case .binary(let bytes): return (.string(bytes.base64EncodedString()), .string("binary"))
        case .array(let items):
            guard depth < maximumDepth else { return nil }
            var elements: [JSONValue] = [], types: [JSONValue] = [], typed = false
            for item in items {
                guard let (json, type) = tree(item, depth: depth + 1) else { return nil }
                elements.append(json)
                types.append(type ?? .null)
                typed = typed || type != nil
            }
            return (.array(elements), typed ? .array(types) : nil)
        case .dictionary(let items):
            guard depth < maximumDepth else { return nil }
            var object: [String: JSONValue] = [:], types: [String: JSONValue] = [:]
            for (key, item) in items {
                guard let (json, type) = tree(item, depth: depth + 1) else { return nil }
                object[key] = json
                types[key] = type
            }
            return (.object(object), types.isEmpty ? nil : .object(types))
        case .objectID, .custom:
            return nil
        }
    }

    private struct Malformed: Error {
        let message: String
    }

    /// The value a JSON form and its type entry stand for.
    private static func value(_ json: JSONValue, type: JSONValue?, depth: Int) throws(Malformed) -> Value {
        guard depth <= maximumDepth else { throw Malformed(message: "nested more than \(maximumDepth) deep") }
        switch (type, json) {
        case (nil, .null), (.null?, .null): return .null
        case (nil, .bool(let flag)), (.null?, .bool(let flag)): return .bool(flag)
        case (nil, .int(let number)), (.null?, .int(let number)): return .int(number)
        case (nil, .string(let text)), (.null?, .string(let text)): return .string(text)
        case (nil, .array(let items)), (.null?, .array(let items)):
            var values: [Value] = []
            for item in items { values.append(try value(item, type: nil, depth: depth + 1)) }
            return .array(values)
        case (nil, .object(let items)), (.null?, .object(let items)):
            return try dictionary(items, types: [:], depth: depth)
        case (.array(let types)?, .array(let items)):
            guard types.count == items.count else { throw Malformed(message: "\(items.count) elements with \(types.count) types") }
            var values: [Value] = []
            for (item, type) in zip(items, types) { values.append(try value(item, type: type, depth: depth + 1)) }
            return .array(values)
        case (.object(let types)?, .object(let items)):
            return try dictionary(items, types: types, depth: depth)
        case (.string(let name)?, _):
            return try scalar(json, typed: name)
        default:
            throw Malformed(message: "JSON \(json.kind)" + (type.map { " typed by \($0.kind)" } ?? " without a type"))
        }
    }

    private static func dictionary(_ items: [String: JSONValue], types: [String: JSONValue], depth: Int) throws(Malformed) -> Value {
        if let stray = types.keys.first(where: { items[$0] == nil }) { throw Malformed(message: "a type for the missing key \"\(stray)\"") }
        var values: [String: Value] = [:]
        for (key, item) in items { values[key] = try value(item, type: types[key], depth: depth + 1) }
        return .dictionary(values)
    }

    private static func scalar(_ json: JSONValue, typed entry: String) throws(Malformed) -> Value {
        let malformed = Malformed(message: "JSON \(json.kind) is not a stored \(entry)")
        // "decimal:12.5", "double:-inf": the type, then the exact value the JSON number stands in for.
        let parts = entry.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let name = String(parts[0]), exact = parts.count > 1 ? String(parts[1]) : nil
        func number() throws(Malformed) -> Double {
            switch (exact, json) {
            case (nil, .double(let number)): return number
            // The exact value of the text, which may be a Double's shortest form (1e+18): rounding it gives that Double.
            case (nil, .int(let number)): return Double(number)
            case ("nan"?, .null): return .nan
            case ("inf"?, .double), ("inf"?, .int): return .infinity
            case ("-inf"?, .double), ("-inf"?, .int): return -.infinity
            case ("-0"?, .int(0)): return -0.0
            default: throw malformed
            }
        }
        func text() throws(Malformed) -> String {
            guard case .string(let text) = json else { throw malformed }
            return text
        }
        if name == "decimal" {
            let standIn: Bool = switch json {
            case .int, .double: true
            default: false
            }
            guard let digits = exact.flatMap(ScaledDecimal.init), standIn else {
                throw Malformed(message: "the type \"\(entry)\" holds no decimal")
            }
            return .decimal(digits)
        }
        if exact != nil, !["double", "float", "date"].contains(name) { throw Malformed(message: "the unknown type \"\(entry)\"") }
        switch name {
        case "double": return .double(try number())
        case "float":
            let wide = try number()
            guard wide.isNaN || Double(Float(wide)) == wide else { throw malformed }
            return .float(Float(wide))
        case "date": return .date(Date(timeIntervalSinceReferenceDate: try number()))
        case "uuid":
            guard let uuid = UUID(uuidString: try text()) else { throw malformed }
            return .uuid(uuid)
        case "uri":
            guard let uri = Value.exactURI(try text()) else { throw malformed }
            return .uri(uri)
        case "binary":
            guard let bytes = Data(base64Encoded: try text()) else { throw malformed }
            return .binary(bytes)
        default:
            throw Malformed(message: "the unknown type \"\(name)\"")
        }
    }

    /// A Double JSON cannot hold, or could not read back exactly (-0.0 reads as the integer 0), named.
    private static func special(_ number: Double) -> String? {
        if number.isNaN { return "nan" }
        if number.isInfinite { return number < 0 ? "-inf" : "inf" }
        return number == 0 && number.sign == .minus ? "-0" : nil
    }

    /// What SQL compares for a Double: itself; for the special ones what a REAL column would give
    /// (NaN: NULL, -0.0: 0), and the largest finite numbers for the infinities JSON cannot write.
    private static func comparable(_ number: Double) -> Value {
        if number.isNaN { return .null }
        if number.isInfinite { return .double(number < 0 ? -.greatestFiniteMagnitude : .greatestFiniteMagnitude) }
        return number == 0 ? .int(0) : .double(number)
    }

    private static func number(_ number: Double) -> JSONValue {
        switch comparable(number) {
        case .double(let value): .double(value)
        case .int(let value): .int(value)
        default: .null
        }
    }

    /// A number's type entry: `name`, or `name:special` when the JSON number stands in for it.
    private static func typed(_ name: String, _ number: Double) -> JSONValue { .string(special(number).map { "\(name):\($0)" } ?? name) }
}
