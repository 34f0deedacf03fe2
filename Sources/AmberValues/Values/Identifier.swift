/// The one naming rule for everything a model, a registry or a plugin names
/// (entities, attributes, value classes, fields, transformers): names become
/// SQL identifiers and C strings, so they are an ASCII letter, then ASCII
/// letters, digits or underscores, at most ``maximumLength`` of them.
package enum Identifier {
    static let maximumLength = 255

    /// Whether `name` follows the rule.
    package static func isValid(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, isLetter(first), name.utf8.count <= maximumLength else { return false }
        return name.unicodeScalars.allSatisfy { isLetter($0) || ("0"..."9").contains($0) || $0 == "_" }
    }

    /// The rule, for messages whose place already names the thing named.
    package static let rule = "a name must start with a letter and use only letters, digits and _"

    /// The problem with `name` as a `kind` ("entity", "attribute") name, or nil if it is valid.
    package static func problem(_ name: String, kind: String) -> String? {
        if name.isEmpty { return "\(kind) name is empty" }
        if name.utf8.count > maximumLength {
            return "\(kind) name \"\(shown(name))\" is longer than the \(maximumLength) characters a name may have"
        }
        return isValid(name) ? nil : "\(kind) name \"\(name)\" must start with a letter and use only letters, digits and _"
    }

    /// `name` for a message: one too long to be valid is cut to its start and its length.
    package static func shown(_ name: String) -> String {
        name.utf8.count <= maximumLength ? name : "\(name.prefix(32))… (\(name.utf8.count) bytes)"
    }

    private static func isLetter(_ c: Unicode.Scalar) -> Bool { (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") }
}
