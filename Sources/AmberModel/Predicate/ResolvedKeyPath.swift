import AmberTransformers
import AmberValues

/// A predicate's or sort key's key path resolved against an entity: the
/// to-one relationships it follows, and what it reads where it ends.
///
/// Stores compile it to SQL and contexts read it from objects, so both
/// accept the same key paths and refuse the others in the same words.
package struct ResolvedKeyPath {
    /// The to-one relationships followed from the entity, in order.
    package let hops: [Relationship]
    /// What the key path reads at the entity the hops reach.
    package let end: End

    package enum End {
        /// The destination object of the last hop (`author`, `book.author`).
        case link(Relationship)
        /// An attribute's value.
        case attribute(Attribute)
        /// A collection operator over a to-many relationship (`books.@count`,
        /// `books.@sum.price`), with the members' attribute it reads (none for `@count`).
        case aggregate(Relationship, CollectionOperator, Attribute?)
        /// A key of an extensible entity's extended attributes (values of no one type).
        case extended(String, of: Entity)
    }

    /// `@count`, `@sum`, `@avg`, `@min` and `@max`.
    package enum CollectionOperator: String, CaseIterable {
        case count = "@count", sum = "@sum", avg = "@avg", min = "@min", max = "@max"
    }

    /// The type of what the key path reads: `.objectID` for a link, nil for an extended attribute.
    package var type: AttributeType? {
        switch end {
        case .link: .objectID
        case .attribute(let attribute): attribute.type
        case .aggregate(_, .count, _): .integer64
        case .aggregate(_, .min, let attribute?), .aggregate(_, .max, let attribute?):
            attribute.type == .decimal ? .double : attribute.type
        case .aggregate: .double
        case .extended: nil
        }
    }

    /// The attribute read, if the key path ends at one.
    package var attribute: Attribute? {
        if case .attribute(let attribute) = end { attribute } else { nil }
    }

    /// Resolves `path` (at `position` of the predicate, for errors) from
    /// `entity`: attributes and to-one relationships reached through to-one
    /// relationships, or a collection operator over a to-many. A transient
    /// attribute is refused unless `transients` (only memory holds its values).
    ///
    /// - Throws: ``/AmberValues/AmberError/unknownKeyPath(position:message:)`` for a name
    ///   no entity on the way has (with the nearest name), and
    ///   ``/AmberValues/AmberError/invalidPredicate(position:message:)`` for the rest.
    package static func resolve(_ path: String, at position: Int, from entity: Entity, in model: Model,
                                transients: Bool = false) throws(AmberError) -> ResolvedKeyPath
    {
        let names = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let (current, hops) = followToOnes(names, from: entity, in: model)
        let index = hops.count
        guard index < names.count else {
            guard let last = hops.last else { throw .invalidPredicate(position: position, message: "\(path): an empty key path") }
            return ResolvedKeyPath(hops: hops, end: .link(last))
        }
        let name = names[index], place = "\(current.name).\(name)"
        if let relationship = current.relationships.first(where: { $0.name == name }) {  // a to-many: followToOnes stopped at it
            if index + 1 < names.count, names[index + 1].hasPrefix("@") {
                let (operation, attribute) = try aggregate(over: relationship, names[index + 1], names[(index + 2)...].joined(separator: "."),
                                                           path: path, position, in: model)
                return ResolvedKeyPath(hops: hops, end: .aggregate(relationship, operation, attribute))
            }
            let prefix = names[...index].joined(separator: ".")
            throw .invalidPredicate(position: position, message: "\(path): \(place) is a to-many relationship; put ANY, ALL "
                + "or NONE before the key path, or use a collection operator such as \(prefix).@count")
        }
        guard let attribute = current.attributes.first(where: { $0.name == name }) else {
            if current.isExtensible, index == names.count - 1 {
                do throws(AmberError) {
                    try ExtendedValues.checkKey(name, of: current)
                } catch {
                    throw .invalidPredicate(position: position, message: "\(error)")
                }
                return ResolvedKeyPath(hops: hops, end: .extended(name, of: current))
            }
            let known = current.attributes.map(\.name) + current.relationships.map(\.name)
            let what = current.relationships.isEmpty ? "attribute" : "attribute or relationship"
            throw .unknownKeyPath(position: position, message: (names.count > 1 ? "\(path): " : "") + "\(place): no such \(what)"
                + AmberError.hint(nearestName(to: name, in: known)))
        }
        guard index == names.count - 1 else {
            throw .invalidPredicate(position: position, message: "\(path): \(place) is an attribute; a key path cannot go on from it")
        }
        guard !attribute.isTransient || transients else {
            throw .invalidPredicate(position: position, message: "\(attribute) is transient: it is not stored, so a fetch cannot test it")
        }
        return ResolvedKeyPath(hops: hops, end: .attribute(attribute))
    }

    /// Resolves sort key `key` from `entity`: a stored attribute (transient
    /// too when `transients`), reached through to-one relationships, or an
    /// extended attribute.
    ///
    /// - Throws: ``/AmberValues/AmberError/unknownAttribute(entity:name:suggestion:)`` for an
    ///   unknown plain name, and ``/AmberValues/AmberError/invalidValue(place:expected:given:)``
    ///   naming `Entity.key` for a relationship, a collection operator, a
    ///   transient attribute or an unknown key path.
    package static func sortKey(_ key: String, from entity: Entity, in model: Model, transients: Bool = false) throws(AmberError) -> ResolvedKeyPath {
        let place = "\(entity.name).\(key)", expected = "a stored attribute to sort by"
        // A plain name keeps the sort's own errors (a relationship, unknown, transient).
        if !key.contains(".") {
            if let relationship = entity.relationships.first(where: { $0.name == key }) {
                throw .invalidValue(place: place, expected: expected,
                                    given: relationship.isToMany ? "a to-many relationship"
                                        : "a relationship (sort by one of its destination's attributes: \(key).name, say)")
            }
            if !entity.isExtensible || entity.existingAttribute(named: key) != nil {
                let attribute = try entity.attribute(named: key)
                guard !attribute.isTransient || transients else {
                    throw .invalidValue(place: attribute.description, expected: expected, given: "a transient one")
                }
            }
        }
        let resolved: ResolvedKeyPath
        do throws(AmberError) {
            resolved = try resolve(key, at: 1, from: entity, in: model, transients: transients)
        } catch {
            switch error {
            case .invalidPredicate(_, let text), .unknownKeyPath(_, let text):
                throw .invalidValue(place: place, expected: expected, given: text)
            default: throw error
            }
        }
        switch resolved.end {
        case .attribute, .extended: return resolved
        case .link, .aggregate: throw .invalidValue(place: place, expected: expected, given: "a relationship or a collection operator")
        }
    }

    /// The to-one relationships `names` starts with, from `entity`, and the entity they reach.
    package static func followToOnes(_ names: [String], from entity: Entity, in model: Model) -> (entity: Entity, hops: [Relationship]) {
        var current = entity, hops: [Relationship] = []
        for name in names {
            guard let relationship = current.relationships.first(where: { $0.name == name }), !relationship.isToMany else { break }
            hops.append(relationship)
            current = model.destination(of: relationship)
        }
        return (current, hops)
    }

    /// The operator and attribute of `books.@sum.price`, checked.
    private static func aggregate(over relationship: Relationship, _ operation: String, _ name: String, path: String, _ position: Int,
                                  in model: Model) throws(AmberError) -> (CollectionOperator, Attribute?)
    {
        guard let op = CollectionOperator(rawValue: operation) else {
            throw .invalidPredicate(position: position, message: "\(path): unknown collection operator \(operation)"
                + AmberError.hint(nearestName(to: operation, in: CollectionOperator.allCases.map(\.rawValue))))
        }
        if op == .count {
            guard name.isEmpty else { throw .invalidPredicate(position: position, message: "\(path): nothing may follow @count") }
            return (op, nil)
        }
        let destination = model.destination(of: relationship)
        guard let attribute = destination.attributes.first(where: { $0.name == name }), !attribute.isTransient else {
            throw .invalidPredicate(position: position, message: "\(path): \(operation) needs a stored attribute of \(destination.name) after it"
                + AmberError.hint(nearestName(to: name, in: destination.attributes.map(\.name))))
        }
        guard attribute.type.isNumeric || ((op == .min || op == .max) && attribute.type == .date) else {
            throw .invalidPredicate(position: position, message: "\(path): \(operation) needs numbers; \(attribute) is \(attribute.type)")
        }
        return (op, attribute)
    }
}

/// A key path after `ANY`, `ALL` or `NONE`: the to-one relationships it
/// follows, the to-many relationship quantified over, and what the
/// comparison reads from each member (nil: the member itself).
package struct QuantifiedKeyPath {
    package let hops: [Relationship]
    package let toMany: Relationship
    /// The rest of the key path, from the members' entity.
    package let rest: String?
    /// Whether `rest` goes through a further to-many relationship: the
    /// comparison then quantifies over the flattened members (`ANY` and
    /// `NONE` ask for some, `ALL` keeps all).
    package let restIsToMany: Bool

    /// Resolves `path` after `quantifier`, from `entity`.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidPredicate(position:message:)`` if the key path has no to-many relationship.
    package init(_ path: String, at position: Int, after quantifier: Quantifier, from entity: Entity, in model: Model) throws(AmberError) {
        let names = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let (current, hops) = ResolvedKeyPath.followToOnes(names, from: entity, in: model)
        guard hops.count < names.count, let relationship = current.relationships.first(where: { $0.name == names[hops.count] }) else {
            throw .invalidPredicate(position: position, message: "\(quantifier.rawValue) \(path): the key path has no to-many relationship to quantify over")
        }
        let rest = Array(names[(hops.count + 1)...])
        let destination = model.destination(of: relationship)
        let (reached, restHops) = ResolvedKeyPath.followToOnes(rest, from: destination, in: model)
        (self.hops, self.toMany) = (hops, relationship)
        self.rest = rest.isEmpty ? nil : rest.joined(separator: ".")
        self.restIsToMany = restHops.count < rest.count && reached.relationships.contains { $0.name == rest[restHops.count] }
    }

    /// The comparison each member is tested with: `c` reading `rest` (or the
    /// member itself), quantified again over a further to-many hop.
    package func memberComparison(_ c: Comparison, quantifier: Quantifier) -> Comparison {
        var inner = c
        let position = c.lhs.position
        inner.lhs = rest.map { .keyPath($0, position: position) } ?? .this(position: position)
        inner.quantifier = restIsToMany ? (quantifier == .all ? .all : .any) : nil
        return inner
    }
}

extension Subquery {
    /// The to-one relationships `collection` follows from `entity` and the
    /// to-many relationship it ends at.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidPredicate(position:message:)`` if it does not end at a to-many relationship.
    package func members(from entity: Entity, in model: Model, at position: Int) throws(AmberError) -> (hops: [Relationship], toMany: Relationship) {
        let names = collection.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let (current, hops) = ResolvedKeyPath.followToOnes(names, from: entity, in: model)
        guard hops.count == names.count - 1, let toMany = current.relationships.first(where: { $0.name == names[hops.count] }) else {
            let known = current.relationships.filter(\.isToMany).map(\.name)
            throw .invalidPredicate(position: position, message: "SUBQUERY(\(collection), …): the key path must end at a to-many relationship"
                + (hops.count < names.count ? " (\(current.name) has no to-many \(names[hops.count]))" : "")
                + AmberError.hint(hops.count < names.count ? nearestName(to: names[hops.count], in: known) : nil))
        }
        return (hops, toMany)
    }

    /// How a subquery's count is named in messages.
    package var name: String { "SUBQUERY(\(collection), $\(variable), …).@count" }
}

extension AttributeType {
    /// `value`, given in a predicate at `position`, as a constant compared
    /// with a value of this type: converted to it (a literal such as 12.99
    /// means the decimal 12.99, not its binary approximation).
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidPredicate(position:message:)`` naming both when it cannot be.
    package func comparisonConstant(_ value: Value, at position: Int) throws(AmberError) -> Value {
        var candidate = value
        if self == .decimal, case .double(let d) = value, let decimal = ScaledDecimal(String(d)) {
            candidate = .decimal(decimal)
        }
        do throws(AmberError) {
            return try coerce(candidate, place: "", storing: false)
        } catch {
            throw .invalidPredicate(position: position, message: "cannot compare a \(self) attribute with \(value.valueClass) \(value)")
        }
    }
}
