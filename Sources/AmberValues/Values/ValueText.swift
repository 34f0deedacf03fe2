import Foundation

extension Value {
    /// Parses decimal text strictly (`"12.90"`, `"-1e3"`), keeping its scale;
    /// the whole text must be the number (see ``ScaledDecimal/init(_:)-(String)``).
    ///
    /// - Throws: ``AmberError/invalidValue(place:expected:given:)``.
    public static func decimal(parsing text: String) throws(AmberError) -> ScaledDecimal {
        guard let decimal = ScaledDecimal(text) else {
            throw .invalidValue(place: "decimal text", expected: "a decimal number",
                                given: "\"\(text)\", which \(ScaledDecimal.refusal(of: text) ?? "is not one")")
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

extension String {
    /// `bytes` as a string if they are valid UTF-8, else nil (never repaired
    /// with U+FFFD). ASCII, the common case, is checked with a plain loop:
    /// `String(validating:as:)` is generic and looked up type metadata on
    /// every call from another module.
    package init?(exactUTF8 bytes: UnsafeRawBufferPointer) {
        if Self.isASCII(bytes) {
            self = String(decoding: bytes, as: UTF8.self)
        } else if let text = String(validating: bytes, as: UTF8.self) {
            self = text
        } else {
            return nil
        }
    }

    /// Whether `bytes` are valid UTF-8, without making a string for ASCII.
    package static func isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        isASCII(bytes) || String(validating: bytes, as: UTF8.self) != nil
    }

    private static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        !bytes.contains { $0 >= 0x80 }
    }
}
