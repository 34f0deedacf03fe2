import AmberModel

/// A model element no code can be generated for, named.
public struct GenerationError: Error, CustomStringConvertible {
    /// `Entity`, `Entity.property` or a value class's name.
    public let place: String
    /// What is wrong with it.
    public let message: String

    public var description: String { "\(place): \(message)" }

    /// Refuses a name that is not an identifier (letters, digits and underscores, not starting with a digit).
    static func checkIdentifiers(_ model: ModelDescription, language: String) throws(GenerationError) {
        func check(_ name: String, _ place: String) throws(GenerationError) {
            guard let first = name.unicodeScalars.first, !("0"..."9").contains(first),
                  name.unicodeScalars.allSatisfy({ $0 == "_" || ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) })
            else {
                throw GenerationError(place: place, message: "\"\(name)\" is not a \(language) identifier (ASCII letters, digits and _)")
            }
        }
        for valueClass in model.valueClasses {
            try check(valueClass.name, valueClass.name)
            if case .structure(_, let fields) = valueClass {
                for field in fields { try check(field.name, "\(valueClass.name).\(field.name)") }
            }
        }
        for entity in model.entities {
            try check(entity.name, entity.name)
            let names = entity.attributes.map(\.name) + entity.relationships.map(\.name) + entity.fetchedProperties.map(\.name)
            for name in names { try check(name, "\(entity.name).\(name)") }
        }
    }
}
