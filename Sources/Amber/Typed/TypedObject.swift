import AmberModel
import AmberValues

/// The base of the classes `amber generate swift` makes from a model: one
/// managed object seen through its entity's class, with a typed property per
/// attribute and relationship.
///
/// Typed objects are views: two for the same managed object are equal, and
/// every read and write goes to ``object``, so typed and dynamic code can
/// work on the same objects. Amber makes them (typed fetches and inserts,
/// ``ManagedObject/typed(as:)``); a fetch of an entity gives each object as
/// the class of its own entity (a `Novel` among `Book`s is a `Novel`).
///
/// A class generated for a parent entity is the superclass of its
/// sub-entities' classes. To give all of them a base class of your own,
/// generate with `--base-class`: the base must inherit from `TypedObject`.
///
/// Model logic goes in a subclass you write (the generated file is never
/// edited): override the validators and lifecycle hooks below, and put the
/// class in use with `Model.use(_:)`. Its hooks then run in
/// every context on the model, for its entity's objects and those of the
/// entities below it that have no class of their own in use. Each call
/// gets a typed object made for it: keep state in the object's attributes
/// (transient ones for caches), not in stored properties of the class.
open class TypedObject: Hashable, CustomStringConvertible {
    /// The managed object this typed object shows.
    public let object: ManagedObject
    /// The handles of the class's properties, resolved for the object's entity.
    public let properties: TypedProperties

    /// Made by Amber only: `binding` carries the object and handles resolved for its entity.
    public required init(_ binding: TypedBinding) {
        object = binding.object
        properties = binding.properties
    }

    /// The entity the class was generated for; generated classes override it.
    open class var entityName: String { "" }
    /// The class of the handles it reads through; generated classes override it.
    open class var propertiesClass: TypedProperties.Type { TypedProperties.self }
    /// The properties the class itself declares (not those it inherits), as the
    /// generator saw them in the model; generated classes override it.
    open class var declaredProperties: [DeclaredProperty] { [] }
    /// The classes generated for the entity's direct sub-entities.
    open class var subentityClasses: [TypedObject.Type] { [] }

    // MARK: Model logic (see ObjectLogic for when each runs)

    /// After the object was inserted, before the caller sets its values: set defaults that need code here.
    open func awakeFromInsert() {}
    /// After the object first read its saved values in its context.
    open func awakeFromFetch() {}
    /// Checks `value` of the attribute named `key` at a save (every
    /// attribute of a new object, those set since the last save of a
    /// changed one): throw ``ValidationError`` to report problems.
    open func validateValue(_ value: Value, forKey key: String) throws {}
    /// Checks the new object as a whole before a save inserts it: throw ``ValidationError`` to report problems.
    open func validateForInsert() throws {}
    /// Checks the changed object as a whole before a save updates it.
    open func validateForUpdate() throws {}
    /// Checks the object before a save deletes it.
    open func validateForDelete() throws {}
    /// At the start of a save that inserts, updates or deletes the object:
    /// changes made here, to any object, are saved in the same transaction.
    open func willSave() throws {}
    /// After a save wrote the object.
    open func didSave() {}
    /// When the object is deleted, before its delete rules apply: throwing refuses the deletion.
    open func prepareForDeletion() throws {}
    /// When the object's values are dropped: refreshed without keeping changes, its changes rolled back, deleted by a save.
    open func didTurnIntoFault() {}

    public static func == (lhs: TypedObject, rhs: TypedObject) -> Bool { lhs.object === rhs.object }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(object)) }
    /// The object's ID, as ``ManagedObject/description``.
    public var description: String { object.description }
}

/// The object and handles a typed object is made with; only Amber makes one.
public struct TypedBinding {
    let object: ManagedObject
    let properties: TypedProperties

    @usableFromInline
    init(object: ManagedObject, properties: TypedProperties) {
        self.object = object
        self.properties = properties
    }
}

/// The base of a generated class's handles: attributes and relationships
/// resolved once per entity of a bound model, so a typed read is a slot read.
open class TypedProperties: @unchecked Sendable {  // generated subclasses hold only `let` handles, which are Sendable
    /// Resolves the handles on `entity` (the class's entity or a sub-entity).
    ///
    /// - Throws: an unknown attribute or relationship (the class was checked
    ///   against the model first, so only a class that declares more than it checks).
    public required init(entity: Entity) throws(AmberError) {}
}

/// One property of a generated class, as the generator saw it in the model:
/// what a class is checked against before it reads a model's objects.
public struct DeclaredProperty: Sendable, Hashable {
    enum Kind: Hashable {
        case attribute(AttributeType, valueClass: String?, layout: String?)
        case relationship(destination: String, toMany: Bool, ordered: Bool)
    }
    let name: String
    let kind: Kind

    /// An attribute of `type` (with `valueClass`, for transformable and
    /// undefined attributes, and the `layout` of the struct that mirrors a struct class).
    public static func attribute(_ name: String, _ type: AttributeType, valueClass: String? = nil, layout: String? = nil) -> DeclaredProperty {
        DeclaredProperty(name: name, kind: .attribute(type, valueClass: valueClass, layout: layout))
    }

    /// A relationship to `destination`.
    public static func relationship(_ name: String, destination: String, toMany: Bool, ordered: Bool = false) -> DeclaredProperty {
        DeclaredProperty(name: name, kind: .relationship(destination: destination, toMany: toMany, ordered: ordered))
    }

    /// How `entity` differs from this declaration; nil if it has the property as declared.
    func difference(in entity: Entity) -> String? {
        let place = "\(entity.name).\(name)"
        switch kind {
        case .attribute(let type, let valueClass, let layout):
            guard let attribute = try? entity.attribute(named: name) else { return "\(place): the class has the attribute, the model does not" }
            if attribute.type != type { return "\(place): the class reads \(type), the model has \(attribute.type)" }
            // With no class declared, a transformable attribute binds to plist-like values: either reads as `Value`.
            if let valueClass, attribute.valueClassName != valueClass {
                return "\(place): the class reads values of class \(valueClass), the model has \(attribute.valueClassName ?? "any")"
            }
            if let layout {
                // A class of the same name that is not a struct (an opaque one of the same size) would be misread too.
                guard let modelled = attribute.structClass?.layout else {
                    return "\(place): the class reads \(valueClass ?? "its values") as a struct, the model's class is not one"
                }
                if layout != modelled {
                    return "\(place): the class lays out \(valueClass ?? "its struct") as \(layout), the model as \(modelled)"
                }
            }
        case .relationship(let destination, let toMany, let ordered):
            guard let relationship = try? entity.relationship(named: name) else {
                return "\(place): the class has the relationship, the model does not"
            }
            if relationship.destinationName != destination {
                return "\(place): the class leads to \(destination), the model to \(relationship.destinationName)"
            }
            if relationship.isToMany != toMany || relationship.isOrdered != ordered {
                func kind(_ many: Bool, _ ordered: Bool) -> String { many ? (ordered ? "ordered to-many" : "to-many") : "to-one" }
                return "\(place): the class has a \(kind(toMany, ordered)) relationship, the model a "
                    + kind(relationship.isToMany, relationship.isOrdered)
            }
        }
        return nil
    }
}
