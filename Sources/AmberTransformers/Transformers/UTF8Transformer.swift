import AmberValues
import Foundation

/// String ↔ its UTF-8 bytes: the first link of a chain that compresses or
/// encrypts text (`["UTF8", "Deflate", "AESGCM"]`).
enum UTF8Transformer {
    struct InvalidUTF8: Error, CustomStringConvertible {
        var description: String { "the bytes are not valid UTF-8" }
    }

    static let transformer = Transformer(
        name: Registry.utf8TransformerName, from: ValueClass.string.rawValue, to: ValueClass.binary.rawValue,
        source: "built-in",
        forward: { value in
            guard case .string(let text) = value else { return .null }
            return .binary(Data(text.utf8))
        },
        reverse: { value in
            guard case .binary(let bytes) = value else { return .null }
            guard let text = String(validating: bytes, as: UTF8.self) else { throw InvalidUTF8() }
            return .string(text)
        })
}
