import Foundation

/// An object of an entity, owned by one ``Context``.
///
/// Its values live in a slot array indexed by ``Attribute/slot``: reading or
/// writing through an ``Attribute`` handle is an array access plus a type
/// check, with no name lookup. The by-name methods resolve the name first.
public final class ManagedObject: Hashable, CustomStringConvertible {
    /// The object's entity.
    public let entity: Entity
    /// The object's ID: temporary until the first save, then permanent.
    public internal(set) var objectID: ObjectID
    /// The context that owns the object; nil once it was deleted and saved,
    /// or rolled back after insert.
    public internal(set) weak var context: Context?

    /// Current values, one per attribute slot.
    var values: [Value]
    /// Values as last saved or fetched (the whole slot array); empty for new objects.
    var committed: [Value]
    /// The row version last read or written, for optimistic locking.
    var version: Int64
    var insertedFlag = false
    var deletedFlag = false
    /// Whether the context's pending list holds this object.
    var isPending = false

    init(entity: Entity, objectID: ObjectID, context: Context, values: [Value], committed: [Value], version: Int64) {
        self.entity = entity
        self.objectID = objectID
        self.context = context
        self.values = values
        self.committed = committed
        self.version = version
    }

    // MARK: Reading and writing values

    /// The current value of `attribute`.
    ///
    /// - Throws: ``AmberError/foreignAttribute(attribute:object:)`` if the
    ///   handle belongs to another entity or model.
    @inline(__always)
    public func value(for attribute: Attribute) throws(AmberError) -> Value {
        guard entity.owns(attribute) else { throw .foreignAttribute(attribute: attribute.description, object: description) }
        return values[attribute.slot]
    }

    /// The current value of the attribute named `key`.
    ///
    /// - Throws: ``AmberError/unknownAttribute(entity:name:suggestion:)`` with the nearest name.
    public func value(forKey key: String) throws(AmberError) -> Value {
        try value(for: entity.attribute(named: key))
    }

    /// Sets `attribute` to `value`. The value must be of the attribute's type
    /// (an integer is accepted for Double, Float and Decimal; integer widths
    /// are range-checked); on error nothing changes.
    ///
    /// - Throws: ``AmberError/invalidValue(place:expected:given:)`` naming the
    ///   attribute, the expected type and the given value;
    ///   ``AmberError/objectUnavailable(_:reason:)`` for a deleted object.
    @inline(__always)
    public func setValue(_ value: Value, for attribute: Attribute) throws(AmberError) {
        guard entity.owns(attribute) else { throw .foreignAttribute(attribute: attribute.description, object: description) }
        guard let context, !deletedFlag else {
            throw .objectUnavailable(objectID, reason: deletedFlag ? "the object is deleted" : "the object belongs to no context")
        }
        values[attribute.slot] = try attribute.type.coerce(value, place: attribute.description)
        if !isPending { context.track(self) }
    }

    /// Sets the attribute named `key` to `value`.
    public func setValue(_ value: Value, forKey key: String) throws(AmberError) {
        try setValue(value, for: entity.attribute(named: key))
    }

    // MARK: Change tracking

    /// Inserted into its context and not saved yet.
    public var isInserted: Bool { insertedFlag && !deletedFlag }
    /// Deleted in its context and not saved yet.
    public var isDeleted: Bool { deletedFlag && !insertedFlag }
    /// Saved before, and has values that differ from the saved ones.
    public var isUpdated: Bool { !insertedFlag && !deletedFlag && values != committed }
    /// Whether saving would write anything for this object.
    public var hasChanges: Bool { isInserted || isDeleted || isUpdated }

    /// The values that differ from the committed ones, by attribute name
    /// (every non-null value for a new object).
    public func changedValues() -> [String: Value] {
        var changed: [String: Value] = [:]
        for attribute in entity.attributes {
            let current = values[attribute.slot]
            if committed.isEmpty ? !current.isNull : current != committed[attribute.slot] {
                changed[attribute.name] = current
            }
        }
        return changed
    }

    /// The values as last saved or fetched, by attribute name (empty for a new object).
    public func committedValues() -> [String: Value] {
        guard !committed.isEmpty else { return [:] }
        return Dictionary(uniqueKeysWithValues: entity.attributes.map { ($0.name, committed[$0.slot]) })
    }

    /// All current values by attribute name.
    public func dictionary() -> [String: Value] {
        Dictionary(uniqueKeysWithValues: entity.attributes.map { ($0.name, values[$0.slot]) })
    }

    // MARK: Identity

    public static func == (lhs: ManagedObject, rhs: ManagedObject) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    public var description: String { objectID.description }
}
