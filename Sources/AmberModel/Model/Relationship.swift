import AmberValues

/// A bound relationship: its destination and inverse resolved to positions in
/// the model, and how the store keeps it.
public final class Relationship: Sendable, CustomStringConvertible {
    /// The relationship's name.
    public let name: String
    /// The name of the entity it belongs to.
    public let entityName: String
    /// The name of the entity it points to.
    public let destinationName: String
    /// The relationship on the destination that points back (nil: one-way).
    public let inverseName: String?
    /// A collection of objects (true) or one object or nil.
    public let isToMany: Bool
    /// A to-many whose members keep their order.
    public let isOrdered: Bool
    /// Whether nil (to-one) or no members (to-many) is allowed at save.
    public let isOptional: Bool
    /// What deleting the source does to the destinations.
    public let deleteRule: RelationshipDescription.DeleteRule
    /// The fewest members at save (to-many; `required` makes it at least 1).
    public let minCount: Int?
    /// The most members at save (to-many).
    public let maxCount: Int?
    /// User info from the model.
    public let userInfo: [String: String]
    /// Its position in its entity's ``Entity/relationships``.
    public let index: Int
    /// Its entity's position in the model.
    package let entityIndex: Int
    /// The destination entity's position in the model.
    package let destinationIndex: Int
    /// The inverse's position in the destination's relationships.
    package let inverseIndex: Int?
    /// How the store keeps the relationship.
    package let storage: Storage

    /// Where a relationship's links live.
    package enum Storage: Sendable, Equatable {
        /// A to-one: the destination's primary key in this object's `slot`
        /// (a column of this entity's table, named as the relationship).
        case foreignKey(slot: Int)
        /// A to-many whose inverse is a to-one: the destination's foreign key
        /// column points here; an ordered one keeps each member's position in
        /// the destination's `orderColumn`.
        case inverseForeignKey(orderColumn: String?)
        /// A many-to-many or one-way to-many: rows of a join table, this
        /// side's key in `sourceColumn`, the destination's in `destinationColumn`,
        /// and, if ordered, this side's position in `orderColumn`.
        case joinTable(table: String, sourceColumn: String, destinationColumn: String, orderColumn: String?)
    }

    /// The column of a to-one in the hierarchy's table (see ``Attribute/columnName``).
    package let storedColumn: StoredColumn
    /// The name of a to-one's column in Amber's layout (and the name a
    /// to-many's ordered inverse position column is made from).
    package var columnName: String { storedColumn.name }

    init(description: RelationshipDescription, entity: String, entityIndex: Int, index: Int, plan: RelationshipPlan, storage: Storage,
         column: StoredColumn) {
        self.storedColumn = column
        self.name = description.name
        self.entityName = entity
        self.entityIndex = entityIndex
        self.destinationName = description.destination
        self.inverseName = description.isOneWay ? nil : description.inverse
        self.isToMany = description.isToMany
        self.isOrdered = description.isToMany && description.isOrdered
        self.isOptional = description.isOptional
        self.deleteRule = description.deleteRule
        // As declared: a required to-many with no minimum may be empty, as in Core Data.
        self.minCount = description.minCount
        self.maxCount = description.maxCount
        self.userInfo = description.userInfo
        self.index = index
        self.destinationIndex = plan.destinationIndex
        self.inverseIndex = plan.inverseIndex
        self.storage = storage
    }

    /// The destination's primary key slot of a to-one; nil for a to-many.
    package var slot: Int? {
        if case .foreignKey(let slot) = storage { return slot }
        return nil
    }

    /// `Entity.relationship`, the place errors name.
    public var description: String { "\(entityName).\(name)" }
}

/// What binding resolved for one relationship: its destination, its inverse
/// and, for a to-many, where its links live (a to-one's slot is the entity's to give).
struct RelationshipPlan {
    var destinationIndex = 0
    var inverseIndex: Int?
    var toManyStorage: Relationship.Storage?
}
