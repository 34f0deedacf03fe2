/// Names from a model as Swift code can use them: keywords are quoted with
/// backticks, and a name Swift cannot take or that a typed object already
/// has is renamed with a trailing underscore; the generated code says so.
enum SwiftNames {
    /// Words Swift reserves (quoted with backticks when used as names).
    static let keywords: Set<String> = [
        "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import", "init", "inout",
        "internal", "let", "open", "operator", "private", "precedencegroup", "protocol", "public", "rethrows", "static",
        "struct", "subscript", "typealias", "var", "break", "case", "catch", "continue", "default", "defer", "do", "else",
        "fallthrough", "for", "guard", "if", "in", "repeat", "return", "throw", "switch", "where", "while", "as", "false",
        "is", "nil", "super", "throws", "true", "try", "await", "async", "some", "any", "consume", "borrowing", "consuming",
    ]

    /// Names no type or member may have even quoted.
    static let unusable: Set<String> = ["self", "Self", "Type", "Protocol", "init", "Any", "_"]

    /// Names the generated code qualifies types with: an entity of such a name would hide them.
    static let modules: Set<String> = ["Swift", "Foundation", "Amber", "AmberModel", "AmberValues", "AmberStore"]

    /// Members every typed object has (and the nested `Properties` class):
    /// a property of one of these names is renamed.
    static let typedObjectMembers: Set<String> = [
        "object", "properties", "handles", "description", "hashValue", "hash", "entityName", "propertiesClass",
        "declaredProperties", "subentityClasses", "check", "Properties",
        // Model logic a subclass overrides.
        "awakeFromInsert", "awakeFromFetch", "validateValue", "validateForInsert", "validateForUpdate", "validateForDelete",
        "willSave", "didSave", "prepareForDeletion", "didTurnIntoFault",
    ]

    /// The Swift name of a class for entity `name`, and why it was renamed (nil if it was not).
    static func typeName(_ name: String) -> (name: String, note: String?) {
        // `Properties` is the nested class of handles every generated class has.
        if unusable.contains(name) || modules.contains(name) || keywords.contains(name) || name == "Properties" {
            return (name + "_", "`\(name)` cannot name a Swift class here")
        }
        return (name, nil)
    }

    /// The Swift name of a property `name`, and why it was renamed (nil if it was not).
    static func memberName(_ name: String) -> (name: String, note: String?) {
        if unusable.contains(name) { return (name + "_", "`\(name)` cannot name a Swift property") }
        if typedObjectMembers.contains(name) { return (name + "_", "every typed object has a member `\(name)`") }
        return (name, nil)
    }

    /// `name` as written in code: quoted if it is a keyword.
    static func quoted(_ name: String) -> String { keywords.contains(name) ? "`\(name)`" : name }

    /// `name` as a Swift string literal.
    static func literal(_ name: String) -> String {
        var text = "\""
        for scalar in name.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            default: text.unicodeScalars.append(scalar)
            }
        }
        return text + "\""
    }
}
