import AmberValues
import Foundation

extension Value {
    /// A plist-like value from JSON text, in the form the JSON transformer
    /// writes (`{"$date": …}`, `{"$binary": …}`, `{"$uuid": …}` for the
    /// classes JSON lacks). This is how arrays and dictionaries cross the C API.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidJSON(path:message:)``.
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
    /// - Throws: ``/AmberValues/AmberError/invalidValue(place:expected:given:)`` for a value that is not plist-like.
    public func propertyListJSON() throws(AmberError) -> String {
        do {
            return try JSONTransformer.json(self).text()
        } catch {
            throw .invalidValue(place: "value", expected: "a plist-like value", given: "\(className) \(self)")
        }
    }
}
