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
}
