import AmberModel
import AmberValues

/// One relationship's destinations for a batch insert, row by row: the
/// batch inserts (``Context/insert(_:setting:to:relating:)``,
/// ``Context/insert(_:setting:columns:relating:)``) point each new object at
/// its row's destinations, with the inverses following.
public struct RelationshipColumn {
    /// The relationship the column sets: of the entity inserted, or of one it inherits from.
    public let relationship: Relationship
    /// Per row, the destinations: none or one for a to-one, the members of a
    /// to-many (in order, for an ordered one).
    public let rows: [[ManagedObject]]

    /// A to-one relationship's destination per row (nil: none).
    public init(_ relationship: Relationship, objects: [ManagedObject?]) {
        self.relationship = relationship
        rows = objects.map { $0.map { [$0] } ?? [] }
    }

    /// A to-many relationship's members per row.
    public init(_ relationship: Relationship, members: [[ManagedObject]]) {
        self.relationship = relationship
        rows = members
    }
}

extension Context {
    /// `columns` checked for a batch of `rows` new objects of `entity`, as
    /// setting each would check it, so that linking cannot be refused once
    /// the objects are made: the entity's own handles, in column order.
    ///
    /// - Throws: ``/AmberValues/AmberError/foreignRelationship(relationship:object:)``
    ///   for a relationship of another entity; ``/AmberValues/AmberError/invalidValue(place:expected:given:)``
    ///   naming `Entity.relationship in row N` for a destination of the wrong
    ///   entity, of another context or deleted, two for a to-one, one listed
    ///   twice; or naming the column for a row count that is not the batch's.
    func checked(_ columns: [RelationshipColumn], of entity: Entity, rows: Int) throws(AmberError) -> [Relationship] {
        var relationships: [Relationship] = []
        for column in columns {
            guard let relationship = entity.own(column.relationship) else {
                throw .foreignRelationship(relationship: column.relationship.description, object: "an object of \(entity.name)")
            }
            guard column.rows.count == rows else {
                throw .invalidValue(place: relationship.description, expected: "destinations for each of the \(rows) rows",
                                    given: "\(column.rows.count) rows")
            }
            for (row, destinations) in column.rows.enumerated() {
                if !relationship.isToMany, destinations.count > 1 {
                    throw .invalidValue(place: "\(relationship) in row \(row)", expected: "at most one object (a to-one relationship)",
                                        given: "\(destinations.count) objects")
                }
                var seen = Set<ObjectIdentifier>()
                for destination in destinations {
                    do throws(AmberError) {
                        try check(destination, for: relationship)
                    } catch {
                        throw Self.naming(row, in: error)
                    }
                    guard seen.insert(ObjectIdentifier(destination)).inserted else {
                        throw .invalidValue(place: "\(relationship) in row \(row)", expected: "each object once",
                                            given: "\(destination.objectID) twice")
                    }
                }
            }
            relationships.append(relationship)
        }
        return relationships
    }

    /// Points each of `objects` (new, in row order) at its row's
    /// destinations in `columns` (checked for `relationships`). Each
    /// destination's partner through a to-one inverse, which linking takes
    /// it from, is read first, so linking reads nothing more from the store;
    /// should it fail all the same (a disk error), the links are taken back
    /// (those partners given their destinations again, no delete rule run)
    /// and the batch is dropped before the error is thrown.
    func link(_ objects: [ManagedObject], to columns: [RelationshipColumn], through relationships: [Relationship]) throws(AmberError) {
        var partners: [(destination: ManagedObject, inverse: Relationship, partner: ManagedObject?)] = []
        for (column, relationship) in zip(columns, relationships) {
            guard let inverse = model.inverse(of: relationship), !inverse.isToMany else { continue }
            for destination in column.rows.joined() { partners.append((destination, inverse, try destination.object(for: inverse))) }
        }
        do throws(AmberError) {
            for (column, relationship) in zip(columns, relationships) {
                for (object, destinations) in zip(objects, column.rows) {
                    if relationship.isToMany {
                        try object.setObjects(destinations, for: relationship)
                    } else {
                        try object.setObject(destinations.first, for: relationship)
                    }
                }
            }
        } catch {
            for relationship in relationships {
                for object in objects where object.context === self {
                    if relationship.isToMany { try? object.setObjects([], for: relationship) } else { try? object.setObject(nil, for: relationship) }
                }
            }
            for (destination, inverse, partner) in partners { try? destination.setObject(partner, for: inverse) }
            // Unlinked, the new objects hold nothing a delete rule could reach: deleting drops them.
            for object in objects where object.context === self { try? delete(object) }
            throw error
        }
    }
}
