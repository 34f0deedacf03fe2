import AmberTransformers
import AmberValues

/// An entity as written in a model, before binding.
///
/// ```swift
/// EntityDescription("Book") {
///     Attribute.string("title").required()
///     Attribute.decimal("price").min(0)
///     Relationship.toOne("author", "Author", inverse: "books")
/// }
/// .unique("title")
/// .index("title", "price")
/// ```
public struct EntityDescription: Sendable, Hashable {
    /// The entity's name, unique within its model; also its table name.
    public var name: String
    /// Its attributes, in order.
    public var attributes: [AttributeDescription]
    /// Its relationships, in order.
    public var relationships: [RelationshipDescription] = []
    /// The entity it inherits from: its objects have the parent's attributes
    /// and relationships too (first), live in the parent's table, and are
    /// fetched with the parent's.
    public var parent: String?
    /// An entity with no objects of its own, only of its sub-entities.
    public var isAbstract = false
    /// Whether its objects take extended attributes: keys the model does not
    /// name, set at run time and kept in one JSON column (see Amber's
    /// `ManagedObject.setValue(_:forExtendedKey:)`). Sub-entities inherit it.
    public var isExtensible = false
    /// Compound indexes: each is a list of attribute names.
    public var indexes: [[String]] = []
    /// Uniqueness constraints: each is a list of attribute names whose
    /// combined values no two objects may share.
    public var uniquenessConstraints: [[String]] = []
    /// Free-form key/value pairs for the program's own use.
    public var userInfo: [String: String] = [:]
    /// Fetched properties: read-only properties whose value is a fetch (see ``FetchedPropertyDescription``).
    public var fetchedProperties: [FetchedPropertyDescription] = []
    /// The entity's name in the previous version of the model, when it was
    /// renamed: migration carries the old table's objects over. Core Data's
    /// renaming identifier.
    public var renamingIdentifier: String?
    /// Any text: changing it changes the model's version hash, so a store is
    /// migrated (its rows copied as they are) although nothing else changed.
    public var versionHashModifier: String?

    /// An entity named `name` with `attributes` and `relationships`.
    public init(_ name: String, attributes: [AttributeDescription] = [], relationships: [RelationshipDescription] = []) {
        self.name = name
        self.attributes = attributes
        self.relationships = relationships
    }

    /// An entity named `name` whose attributes and relationships are listed in the closure.
    public init(_ name: String, @PropertyListBuilder _ properties: () -> [PropertyDescription]) {
        self.init(name)
        for property in properties() {
            switch property {
            case .attribute(let attribute): attributes.append(attribute)
            case .relationship(let relationship): relationships.append(relationship)
            }
        }
    }

    /// Adds a compound index over `attributes`, in that order.
    public func index(_ attributes: String...) -> Self { with { $0.indexes.append(attributes) } }
    /// Adds a uniqueness constraint over `attributes` (one or several).
    public func unique(_ attributes: String...) -> Self { with { $0.uniquenessConstraints.append(attributes) } }
    /// Adds a user-info entry.
    public func userInfo(_ key: String, _ value: String) -> Self { with { $0.userInfo[key] = value } }
    /// Inherits from the entity named `parent`.
    public func inheriting(from parent: String) -> Self { with { $0.parent = parent } }
    /// Makes the entity abstract: only its sub-entities have objects.
    public func abstract() -> Self { with { $0.isAbstract = true } }
    /// Makes the entity extensible: its objects take keys the model does not name.
    public func extensible() -> Self { with { $0.isExtensible = true } }
    /// Marks the entity as the one called `oldName` in the previous model version.
    public func renamed(from oldName: String) -> Self { with { $0.renamingIdentifier = oldName } }

    private func with(_ change: (inout Self) -> Void) -> Self {
        var copy = self
        change(&copy)
        return copy
    }
}

/// A model as written, before binding: a list of entities.
/// Build it in Swift or load it with ``ModelDescription/init(json:)``, then
/// bind it with ``Model/init(_:registry:)``.
public struct ModelDescription: Sendable, Hashable {
    /// The entities, in order.
    public var entities: [EntityDescription]
    /// Value classes the model itself declares (struct and opaque classes),
    /// beside those of the registry it is bound with.
    public var valueClasses: [ValueClassDescription] = []
    /// Fetch request templates: named requests whose predicates take `$VARIABLES`.
    public var templates: [FetchTemplateDescription] = []

    /// A model with `entities`.
    public init(entities: [EntityDescription], valueClasses: [ValueClassDescription] = [],
                templates: [FetchTemplateDescription] = [])
    {
        self.entities = entities
        self.valueClasses = valueClasses
        self.templates = templates
    }

    /// A model whose entities are listed in the closure.
    public init(@EntityListBuilder _ entities: () -> [EntityDescription]) {
        self.entities = entities()
    }

    /// Adds value classes the model declares; nested struct classes first.
    public func declaring(_ classes: ValueClassDescription...) -> Self {
        var copy = self
        copy.valueClasses += classes
        return copy
    }
}

/// One line of an entity's body: an attribute or a relationship.
public enum PropertyDescription: Sendable, Hashable {
    /// An attribute.
    case attribute(AttributeDescription)
    /// A relationship.
    case relationship(RelationshipDescription)
}

/// Collects attribute and relationship descriptions in ``EntityDescription/init(_:_:)``.
@resultBuilder
public enum PropertyListBuilder {
    /// One attribute line.
    public static func buildExpression(_ attribute: AttributeDescription) -> [PropertyDescription] { [.attribute(attribute)] }
    /// One relationship line.
    public static func buildExpression(_ relationship: RelationshipDescription) -> [PropertyDescription] { [.relationship(relationship)] }
    /// The lines of a block, in order.
    public static func buildBlock(_ parts: [PropertyDescription]...) -> [PropertyDescription] { parts.flatMap { $0 } }
    /// An `if` without `else`.
    public static func buildOptional(_ part: [PropertyDescription]?) -> [PropertyDescription] { part ?? [] }
    /// The first branch of an `if`/`else`.
    public static func buildEither(first part: [PropertyDescription]) -> [PropertyDescription] { part }
    /// The second branch of an `if`/`else`.
    public static func buildEither(second part: [PropertyDescription]) -> [PropertyDescription] { part }
    /// A `for` loop.
    public static func buildArray(_ parts: [[PropertyDescription]]) -> [PropertyDescription] { parts.flatMap { $0 } }
}

/// Collects entity descriptions in ``ModelDescription/init(_:)``.
@resultBuilder
public enum EntityListBuilder {
    /// One entity.
    public static func buildExpression(_ entity: EntityDescription) -> [EntityDescription] { [entity] }
    /// The lines of a block, in order.
    public static func buildBlock(_ parts: [EntityDescription]...) -> [EntityDescription] { parts.flatMap { $0 } }
    /// An `if` without `else`.
    public static func buildOptional(_ part: [EntityDescription]?) -> [EntityDescription] { part ?? [] }
    /// The first branch of an `if`/`else`.
    public static func buildEither(first part: [EntityDescription]) -> [EntityDescription] { part }
    /// The second branch of an `if`/`else`.
    public static func buildEither(second part: [EntityDescription]) -> [EntityDescription] { part }
    /// A `for` loop.
    public static func buildArray(_ parts: [[EntityDescription]]) -> [EntityDescription] { parts.flatMap { $0 } }
}
