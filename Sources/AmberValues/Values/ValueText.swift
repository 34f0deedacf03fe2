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

    /// `text` as a URI, only if it reads back as the same text: Foundation
    /// would otherwise percent-encode invalid characters ("a b" → "a%20b")
    /// and a value would change in silence.
    package static func exactURI(_ text: String) -> URL? {
        guard let url = URL(string: text, encodingInvalidCharacters: false), url.absoluteString == text else { return nil }
        return url
    }
}
