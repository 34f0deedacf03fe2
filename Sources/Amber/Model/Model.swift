import Foundation

/// A bound model: checked, immutable, and safe to share between threads.
///
/// Binding resolves every name once. Entities and attributes become handles
/// (``Entity``, ``Attribute``) that contexts use to reach an object's values by
/// slot index, with no name lookup on the hot path.
public final class Model: Sendable {
    /// The description this model was bound from.
    public let description: ModelDescription
    /// The entities, in model order.
    public let entities: [Entity]
    /// A hash of everything that shapes the store (entity and attribute names,
    /// types, optionality, indexes, constraints); two models with the same hash
    /// can share a store.
    public let versionHash: String
    private let entitiesByName: [String: Entity]

    /// Binds `description`, checking the whole model.
    ///
    /// - Throws: ``AmberError/invalidModel(_:)`` listing every problem found,
    ///   each with its place (`Book.price`) and, for a misspelled name, the
    ///   nearest known one.
    public init(_ description: ModelDescription) throws(AmberError) {
        let problems = ModelChecker.problems(in: description)
        guard problems.isEmpty else { throw .invalidModel(problems) }
        self.description = description
        self.entities = description.entities.enumerated().map { Entity(description: $0.element, index: $0.offset) }
        self.entitiesByName = Dictionary(uniqueKeysWithValues: entities.map { ($0.name, $0) })
        self.versionHash = ModelFingerprint(description).hash
    }

    /// The entity named `name`.
    ///
    /// - Throws: ``AmberError/unknownEntity(name:suggestion:)`` with the nearest name.
    public func entity(named name: String) throws(AmberError) -> Entity {
        guard let entity = entitiesByName[name] else {
            throw .unknownEntity(name: name, suggestion: nearestName(to: name, in: entities.map(\.name)))
        }
        return entity
    }
}

/// A bound entity: its attributes resolved to slots.
public final class Entity: Sendable, CustomStringConvertible {
    /// The entity's name (also its table's name).
    public let name: String
    /// Its position in the model.
    public let index: Int
    /// All attributes; `attributes[i].slot == i`.
    public let attributes: [Attribute]
    /// The attributes that have a column in the store, in column order.
    public let persistentAttributes: [Attribute]
    /// Compound indexes.
    public let indexes: [[Attribute]]
    /// Uniqueness constraints.
    public let uniquenessConstraints: [[Attribute]]
    /// User info from the model.
    public let userInfo: [String: String]
    /// Attributes with a rule to check at save (required, or with validation).
    let checkedAttributes: [Attribute]
    private let attributesByName: [String: Attribute]

    init(description: EntityDescription, index: Int) {
        self.name = description.name
        self.index = index
        var column = 0
        self.attributes = description.attributes.enumerated().map { slot, attribute in
            defer { if !attribute.isTransient { column += 1 } }
            return Attribute(description: attribute, entity: description.name, slot: slot,
                             column: attribute.isTransient ? nil : column)
        }
        self.persistentAttributes = attributes.filter { !$0.isTransient }
        self.checkedAttributes = attributes.filter { !$0.isOptional || !$0.validation.isEmpty }
        let byName = Dictionary(uniqueKeysWithValues: attributes.map { ($0.name, $0) })
        self.attributesByName = byName
        self.indexes = description.indexes.map { $0.compactMap { byName[$0] } }
        self.uniquenessConstraints = description.uniquenessConstraints.map { $0.compactMap { byName[$0] } }
        self.userInfo = description.userInfo
    }

    /// The attribute named `name`.
    ///
    /// - Throws: ``AmberError/unknownAttribute(entity:name:suggestion:)`` with the nearest name.
    public func attribute(named name: String) throws(AmberError) -> Attribute {
        guard let attribute = attributesByName[name] else {
            throw .unknownAttribute(entity: self.name, name: name,
                                    suggestion: nearestName(to: name, in: attributes.map(\.name)))
        }
        return attribute
    }

    /// Whether `attribute` is one of this entity's own handles.
    func owns(_ attribute: Attribute) -> Bool {
        attribute.slot < attributes.count && attributes[attribute.slot] === attribute
    }

    public var description: String { name }
}

/// A bound attribute: a handle with a fixed slot in its entity's objects.
public final class Attribute: Sendable, CustomStringConvertible {
    /// The attribute's name.
    public let name: String
    /// The name of the entity it belongs to.
    public let entityName: String
    /// Its type.
    public let type: AttributeType
    /// Whether nil is allowed at save.
    public let isOptional: Bool
    /// The value new objects start with (already checked against the type).
    public let defaultValue: Value
    /// Tracked in the context but never stored.
    public let isTransient: Bool
    /// The store keeps an index on it.
    public let isIndexed: Bool
    /// Rules checked at save.
    public let validation: AttributeDescription.Validation
    /// User info from the model.
    public let userInfo: [String: String]
    /// Index of this attribute's value in an object's slot array.
    public let slot: Int
    /// Index among the entity's stored columns; nil for transient attributes.
    public let column: Int?
    /// The compiled `validation.pattern`.
    let pattern: Pattern?

    init(description: AttributeDescription, entity: String, slot: Int, column: Int?) {
        self.name = description.name
        self.entityName = entity
        self.type = description.type
        self.isOptional = description.isOptional
        let place = "\(entity).\(description.name)"
        // Binding already proved the default coerces; nil here cannot happen.
        self.defaultValue = description.defaultValue.flatMap { try? description.type.coerce($0, place: place) } ?? .null
        self.isTransient = description.isTransient
        self.isIndexed = description.isIndexed
        self.validation = description.validation
        self.userInfo = description.userInfo
        self.slot = slot
        self.column = column
        self.pattern = description.validation.pattern.flatMap { try? Pattern($0) }
    }

    /// `Entity.attribute`, the place errors name.
    public var description: String { "\(entityName).\(name)" }
}

/// A compiled regular expression matched against whole strings.
/// `NSRegularExpression` is immutable once made and safe to share.
final class Pattern: @unchecked Sendable {
    let source: String
    private let regex: NSRegularExpression

    init(_ source: String) throws {
        self.source = source
        self.regex = try NSRegularExpression(pattern: "^(?:\(source))$", options: [])
    }

    func matches(_ string: String) -> Bool {
        regex.firstMatch(in: string, range: NSRange(string.startIndex..., in: string)) != nil
    }
}
