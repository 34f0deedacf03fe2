import AmberTransformers
import AmberValues

/// How a store made with one model (the source) becomes a store of another
/// (the destination), inferred from names and renaming identifiers: the
/// source entity, attribute and relationship each of the destination's takes
/// its data from, what is added, removed, re-encoded or recomputed, and every
/// change that cannot be inferred. It holds no SQL: the store carries it out.
///
/// A destination element takes the source element named by its renaming
/// identifier, or else the one of its own name.
package struct ModelMapping {
    package let source: Model
    package let destination: Model
    /// By destination entity index: the source entity its objects come from (nil: a new entity).
    package let entities: [Entity?]
    /// By destination entity index, by attribute slot: the persistent source attribute its values come from.
    package private(set) var attributes: [[Int: Attribute]]
    /// By destination entity index, by relationship index: the source relationship its links come from.
    package private(set) var relationships: [[Int: Relationship]]
    /// Stored columns whose values go through their transformers again: (destination
    /// entity, the attribute that encodes into the column, the source attribute that did).
    package private(set) var reencoded: [(entity: Entity, encoder: Attribute, sourceEncoder: Attribute)] = []
    /// What the migration does, one line per change, in model order.
    package private(set) var steps: [String] = []
    /// Changes that cannot be inferred, each naming its place; a migration runs only with none.
    package private(set) var problems: [String] = []
    /// The stored data the migration removes (source handles): a store counts it, and
    /// removes it only with the caller's consent.
    package private(set) var removals: [Removal] = []

    /// Stored data a migration removes.
    package enum Removal {
        /// The objects of an entity the destination drops.
        case objects(Entity)
        /// The values of an attribute (stored, not derived) the destination drops, in the rows of `entity` and below.
        case values(Entity, Attribute)
        /// The links of a relationship the destination drops.
        case links(Entity, Relationship)
        /// The stored values of an attribute the destination derives instead (computed again over them).
        case replaced(Entity, Attribute)
    }

    package init(from source: Model, to destination: Model) {
        self.source = source
        self.destination = destination
        var problems: [String] = [], steps: [String] = []
        // Entities.
        var taken: [String: String] = [:]
        let entities = destination.entities.map { entity -> Entity? in
            let match = Self.counterpart(entity.name, destination.description.entities[entity.index].renamingIdentifier,
                                         in: source.entities.map(\.name)).map { source.entities[$0] }
            if let match {
                if let other = taken[match.name] {
                    problems.append("\(entity.name): takes the objects of \(match.name), as \(other) does")
                }
                taken[match.name] = entity.name
            }
            return match
        }
        self.entities = entities
        for (index, entity) in destination.entities.enumerated() {
            guard let match = entities[index] else {
                steps.append("add entity \(entity.name)")
                continue
            }
            if match.name != entity.name { steps.append("rename entity \(match.name) to \(entity.name)") }
            // A hierarchy's rows share one table: a destination table takes the rows of one source table.
            let root = destination.root(of: entity)
            if let rootMatch = entities[root.index] {
                if source.root(of: match) !== rootMatch {
                    problems.append("\(entity.name): moves to another entity hierarchy (from \(source.root(of: match).name)'s to \(root.name)'s): cannot be inferred")
                }
            } else {
                problems.append("\(entity.name): its new root entity \(root.name) has no objects in the store to take: cannot be inferred")
            }
            // Rows keep their columns only while each entity keeps its parent (so every property keeps its declarer).
            let parent = destination.parent(of: entity), oldParent = source.parent(of: match)
            if (parent.flatMap { entities[$0.index] }) !== oldParent {
                problems.append("\(entity.name): parent \(oldParent?.name ?? "none") to \(parent?.name ?? "none"): cannot be inferred")
            }
            let written = destination.description.entities[entity.index], oldWritten = source.description.entities[match.index]
            let indexed = Set(written.attributes.filter { $0.isIndexed && !$0.isTransient }.map(\.name))
            let wasIndexed = Set(oldWritten.attributes.filter { $0.isIndexed && !$0.isTransient }.map(\.name))
            if written.indexes != oldWritten.indexes || indexed != wasIndexed {
                steps.append("\(entity.name): indexes made again")
            }
            if written.uniquenessConstraints != oldWritten.uniquenessConstraints {
                steps.append("\(entity.name): uniqueness constraints \(written.uniquenessConstraints) (refused if existing objects break them)")
            }
            if match.isExtensible && !entity.isExtensible { steps.append("\(entity.name): no longer extensible (refused if an object has extended attributes)") }
            if !match.isExtensible && entity.isExtensible { steps.append("\(entity.name): now extensible") }
            if entity.isAbstract && !match.isAbstract { steps.append("\(entity.name): now abstract (refused if it has objects of its own)") }
        }
        var removals: [Removal] = []
        for entity in source.entities where !entities.contains(where: { $0 === entity }) {
            steps.append("remove entity \(entity.name) and its objects")
            removals.append(.objects(entity))
        }
        // An entity new to the store cannot sit above entities that have objects: their rows would move.
        for entity in destination.entities where entities[entity.index] == nil {
            if let below = entity.subentityIndices.first(where: { entities[$0] != nil }) {
                problems.append("\(destination.entities[below].name): gains the new ancestor \(entity.name): cannot be inferred")
            }
        }
        self.attributes = Array(repeating: [:], count: destination.entities.count)
        self.relationships = Array(repeating: [:], count: destination.entities.count)
        self.problems = problems
        self.steps = steps
        self.removals = removals
        for (index, entity) in destination.entities.enumerated() {
            guard let match = entities[index] else { continue }
            mapAttributes(of: entity, from: match)
            mapRelationships(of: entity, from: match)
        }
        // The same move or clash can be found from several entities of a hierarchy: each is said once.
        var seen: Set<String> = []
        self.problems = self.problems.filter { seen.insert($0).inserted }
        // A version hash modifier (or any change listed above only as part of another) still rebuilds the tables.
        if self.steps.isEmpty && source.versionHash != destination.versionHash {
            self.steps.append("copy every table as it is (the version hash changed: a version hash modifier or another change of shape)")
        }
    }

    /// The position in `names` of the element a destination element named
    /// `name`, with renaming identifier `renamed`, takes its data from.
    private static func counterpart(_ name: String, _ renamed: String?, in names: [String]) -> Int? {
        if let renamed, let found = names.firstIndex(of: renamed) { return found }
        return names.firstIndex(of: name)
    }

    /// The renaming identifier of the property named `name`, from the entity of `entity`'s line that declares it.
    private func renamingIdentifier(of name: String, in entity: Entity) -> String? {
        for declarer in [entity] + entity.ancestors {
            let written = destination.description.entities[declarer.index]
            if let attribute = written.attributes.first(where: { $0.name == name }) { return attribute.renamingIdentifier }
            if let relationship = written.relationships.first(where: { $0.name == name }) { return relationship.renamingIdentifier }
        }
        return nil
    }

    /// Whether `entity` (of either model) declares the property named `name` rather than inheriting it.
    private static func declares(_ entity: Entity, _ name: String) -> Bool {
        guard let parent = entity.ancestors.first else { return true }
        return parent.existingAttribute(named: name) == nil && !parent.relationships.contains { $0.name == name }
    }

    private mutating func mapAttributes(of entity: Entity, from match: Entity) {
        let sourceAttributes = match.persistentAttributes
        for attribute in entity.persistentAttributes {
            let place = "\(entity.name).\(attribute.name)", reported = Self.declares(entity, attribute.name)
            guard let found = Self.counterpart(attribute.name, renamingIdentifier(of: attribute.name, in: entity),
                                               in: sourceAttributes.map(\.name)) else {
                if reported {
                    steps.append("add \(place)" + (attribute.defaultValue.isNull ? "" : " (default \(attribute.defaultValue))")
                        + (attribute.derivation != nil ? ", computed from \(attribute.derivation?.expression ?? "")" : ""))
                }
                continue
            }
            let old = sourceAttributes[found]
            attributes[entity.index][attribute.slot] = old
            // A property that moves up or down its hierarchy would leave the rows of the other entities without it.
            if reported != Self.declares(match, old.name) {
                problems.append("\(place): moves between \(old.entityName) and the entities above or below it: cannot be inferred")
            }
            guard reported else { continue }
            if old.name != attribute.name { steps.append("rename \(match.name).\(old.name) to \(place)") }
            if old.type != attribute.type {
                if let from = old.type.integerRange, let to = attribute.type.integerRange,
                   to.lowerBound <= from.lowerBound, from.upperBound <= to.upperBound
                {
                    steps.append("\(place): widen \(old.type) to \(attribute.type)")
                } else {
                    problems.append("\(place): type \(old.type) to \(attribute.type): cannot be inferred")
                }
            }
            if !old.isOptional && attribute.isOptional { steps.append("\(place): now optional") }
            if old.isOptional && !attribute.isOptional && attribute.derivation == nil {
                steps.append("\(place): now required" + (attribute.defaultValue.isNull
                    ? " (refused if an object has no value)" : ", objects with no value take the default \(attribute.defaultValue)"))
            }
            if let derivation = attribute.derivation, derivation.expression != old.derivation?.expression {
                steps.append("\(place): compute from \(derivation.expression)")
                if old.derivation == nil { removals.append(.replaced(match, old)) }
            }
        }
        // Transformed columns: the attribute encoding into each (itself, or a transient one keeping its form there).
        for column in entity.columns {
            guard let encoder = entity.encodedFormOf[column.slot], Self.declares(entity, encoder.name),
                  let stored = entity.persistentAttributes.first(where: { ($0.codec?.encodedSlot ?? $0.slot) == column.slot }),
                  let old = attributes[entity.index][stored.slot],
                  let oldEncoder = match.encodedFormOf[old.codec?.encodedSlot ?? old.slot]
            else { continue }
            let chain = Self.chain(of: encoder), oldChain = Self.chain(of: oldEncoder)
            if chain != oldChain {
                reencoded.append((entity, encoder, oldEncoder))
                steps.append("\(entity.name).\(encoder.name): re-encode every stored value, from \(oldChain) to \(chain)")
            }
        }
        for old in sourceAttributes where !attributes[entity.index].values.contains(where: { $0 === old }) && Self.declares(match, old.name) {
            steps.append("remove \(match.name).\(old.name) and its values")
            if old.derivation == nil { removals.append(.values(match, old)) }
        }
    }

    /// `Color via ColorToData`: what decides a transformed column's content.
    private static func chain(of attribute: Attribute) -> String {
        (attribute.valueClassName ?? ValueClass.propertyListName) + " via " + attribute.transformerNames.joined(separator: " > ")
    }

    private mutating func mapRelationships(of entity: Entity, from match: Entity) {
        for relationship in entity.relationships {
            let place = "\(entity.name).\(relationship.name)", reported = Self.declares(entity, relationship.name)
            guard let found = Self.counterpart(relationship.name, renamingIdentifier(of: relationship.name, in: entity),
                                               in: match.relationships.map(\.name)) else {
                if reported {
                    steps.append("add \(place)" + (relationship.isOptional ? "" : " (required: refused if \(entity.name) has objects)"))
                }
                continue
            }
            let old = match.relationships[found]
            relationships[entity.index][relationship.index] = old
            // A property that moves up or down its hierarchy would leave the rows of the other entities without it.
            if reported != Self.declares(match, old.name) {
                problems.append("\(place): moves between \(old.entityName) and the entities above or below it: cannot be inferred")
            }
            guard reported else { continue }
            if old.name != relationship.name { steps.append("rename \(match.name).\(old.name) to \(place)") }
            if entities[relationship.destinationIndex] !== source.entities[old.destinationIndex] {
                problems.append("\(place): destination \(old.destinationName) to \(relationship.destinationName): cannot be inferred")
            }
            switch (old.isToMany, relationship.isToMany) {
            case (false, true): steps.append("\(place): to-one to to-many (each object keeps its destination as its only member)")
            case (true, false): problems.append("\(place): to-many to to-one: cannot be inferred (which member would stay?)")
            default: break
            }
            if !old.isOrdered && relationship.isOrdered && old.isToMany {
                problems.append("\(place): unordered to ordered: cannot be inferred (the members have no order to keep)")
            }
            if old.isOrdered && !relationship.isOrdered && relationship.isToMany { steps.append("\(place): no longer ordered") }
            if relationship.isOptional == false && old.isOptional && !relationship.isToMany {
                steps.append("\(place): now required (refused if an object has none)")
            }
            let inverse = destination.inverse(of: relationship).map(\.name), oldInverse = source.inverse(of: old).map(\.name)
            if (inverse == nil) != (oldInverse == nil) {
                problems.append("\(place): " + (inverse == nil ? "no longer has an inverse" : "now has an inverse") + ": cannot be inferred")
            }
        }
        for old in match.relationships where !relationships[entity.index].values.contains(where: { $0 === old }) && Self.declares(match, old.name) {
            steps.append("remove \(match.name).\(old.name) and its links")
            removals.append(.links(match, old))
        }
    }
}
