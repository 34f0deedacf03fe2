import AmberValues

/// A relationship as written in a model, before binding: a plain value you
/// build with the static constructors and modifiers, or load from JSON.
///
/// Every relationship names its inverse on the destination entity, so the
/// graph stays consistent from both sides; one without an inverse must be
/// marked ``oneWay()``.
///
/// ```swift
/// Relationship.toOne("author", "Author", inverse: "books").required()
/// Relationship.toMany("books", "Book", inverse: "author").deleteRule(.cascade)
/// ```
public struct RelationshipDescription: Sendable, Hashable {
    /// The relationship's name, unique among its entity's attributes and relationships.
    public var name: String
    /// The entity it points to.
    public var destination: String
    /// The relationship on the destination entity that points back; nil
    /// only for a one-way relationship.
    public var inverse: String?
    /// To-many (a collection of objects) or to-one (one object or nil).
    public var isToMany: Bool
    /// A to-many relationship whose members keep the order they were given.
    public var isOrdered = false
    /// Whether a to-one may be nil at save, and a to-many empty whatever its
    /// `minCount` (Core Data's default: true). A required to-many without a
    /// `minCount` may be empty too, as in Core Data.
    public var isOptional = true
    /// What happens to the destination objects when the source is deleted.
    public var deleteRule: DeleteRule = .nullify
    /// The fewest members a to-many may have at save (nil: no lower bound).
    public var minCount: Int?
    /// The most members a to-many may have at save (nil: no upper bound).
    public var maxCount: Int?
    /// Declared without an inverse, on purpose. Amber then maintains only
    /// this side: deleting a destination object does not remove it from
    /// this relationship's sources in memory, and a fetch of the destination
    /// cannot ask which objects point at it.
    public var isOneWay = false
    /// Free-form key/value pairs for the program's own use.
    public var userInfo: [String: String] = [:]
    /// The relationship's name in the previous version of the model, when it
    /// was renamed: migration carries its links over.
    public var renamingIdentifier: String?
    /// Any text: changing it changes the model's version hash (see
    /// ``EntityDescription/versionHashModifier``).
    public var versionHashModifier: String?

    /// A relationship named `name` to `destination`, with `inverse` (nil only with ``oneWay()``).
    public init(_ name: String, destination: String, inverse: String?, toMany: Bool) {
        self.name = name
        self.destination = destination
        self.inverse = inverse
        self.isToMany = toMany
    }

    /// What deleting an object does to the objects a relationship points at.
    public enum DeleteRule: String, Sendable, Hashable, CaseIterable {
        /// Removes the deleted object from each destination's inverse (the default).
        case nullify
        /// Deletes the destination objects too, and theirs in turn.
        case cascade
        /// Fails the save while the relationship still points at any object.
        case deny
        /// Does nothing to the destinations; a save that would leave one
        /// pointing at the deleted object fails, naming it.
        case noAction
    }

    /// Must point at an object at save (to-one). A required to-many must
    /// have its minimum (``count(atLeast:)``) even when empty; without one
    /// it may be empty, as in Core Data.
    public func required() -> Self { with { $0.isOptional = false } }
    /// May be nil, or empty (the default).
    public func optional() -> Self { with { $0.isOptional = true } }
    /// Sets what deleting the source does to the destinations.
    public func deleteRule(_ rule: DeleteRule) -> Self { with { $0.deleteRule = rule } }
    /// Bounds the number of members of a to-many at save.
    public func count(_ range: ClosedRange<Int>) -> Self { with { ($0.minCount, $0.maxCount) = (range.lowerBound, range.upperBound) } }
    /// At least `minimum` members at save.
    public func count(atLeast minimum: Int) -> Self { with { $0.minCount = minimum } }
    /// At most `maximum` members at save.
    public func count(atMost maximum: Int) -> Self { with { $0.maxCount = maximum } }
    /// Keeps the members of a to-many in the order they are given.
    public func ordered() -> Self { with { $0.isOrdered = true } }
    /// Declares the relationship without an inverse (see ``isOneWay``).
    public func oneWay() -> Self { with { ($0.isOneWay, $0.inverse) = (true, nil) } }
    /// Adds a user-info entry.
    public func userInfo(_ key: String, _ value: String) -> Self { with { $0.userInfo[key] = value } }
    /// Marks the relationship as the one called `oldName` in the previous model version.
    public func renamed(from oldName: String) -> Self { with { $0.renamingIdentifier = oldName } }

    private func with(_ change: (inout Self) -> Void) -> Self {
        var copy = self
        change(&copy)
        return copy
    }
}

extension Relationship {
    /// A to-one relationship: one `destination` object, or nil.
    public static func toOne(_ name: String, _ destination: String, inverse: String) -> RelationshipDescription {
        RelationshipDescription(name, destination: destination, inverse: inverse, toMany: false)
    }

    /// A to-many relationship: a set of `destination` objects (a list with ``RelationshipDescription/ordered()``).
    public static func toMany(_ name: String, _ destination: String, inverse: String) -> RelationshipDescription {
        RelationshipDescription(name, destination: destination, inverse: inverse, toMany: true)
    }

    /// A to-one relationship with no inverse (see ``RelationshipDescription/isOneWay``).
    public static func toOne(_ name: String, _ destination: String) -> RelationshipDescription {
        RelationshipDescription(name, destination: destination, inverse: nil, toMany: false).oneWay()
    }

    /// A to-many relationship with no inverse (see ``RelationshipDescription/isOneWay``).
    public static func toMany(_ name: String, _ destination: String) -> RelationshipDescription {
        RelationshipDescription(name, destination: destination, inverse: nil, toMany: true).oneWay()
    }
}
