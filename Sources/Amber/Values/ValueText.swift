import Foundation

extension Value {
    /// Parses decimal text strictly (`"12.99"`, `"-1e3"`); the whole text must be the number.
    ///
    /// - Throws: ``AmberError/invalidValue(place:expected:given:)``.
    public static func decimal(parsing text: String) throws(AmberError) -> Decimal {
        guard let decimal = ValueFormat.parseDecimal(text) else {
            throw .invalidValue(place: "decimal text", expected: "a decimal number", given: "\"\(text)\"")
        }
        return decimal
    }

    /// A plist-like value from JSON text, in the form the JSON transformer
    /// writes (`{"$date": …}`, `{"$binary": …}`, `{"$uuid": …}` for the
    /// classes JSON lacks). This is how arrays and dictionaries cross the C API.
    ///
    /// - Throws: ``AmberError/invalidJSON(path:message:)``.
    public init(propertyListJSON text: String) throws(AmberError) {
        let tree = try JSONValue.parse(Data(text.utf8))
        do {
            self = try JSONTransformer.value(tree)
        } catch {
            throw .invalidJSON(path: "$", message: "\(error)")
        }
    }

    /// This plist-like value as JSON text (see ``init(propertyListJSON:)``).
    ///
    /// - Throws: ``AmberError/invalidValue(place:expected:given:)`` for a value that is not plist-like.
    public func propertyListJSON() throws(AmberError) -> String {
        do {
            return try JSONTransformer.json(self).text()
        } catch {
            throw .invalidValue(place: "value", expected: "a plist-like value", given: "\(className) \(self)")
        }
    }
}
