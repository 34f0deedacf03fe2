import AmberTransformers
import AmberValues

/// A fetched property as written in a model, before binding: a one-way,
/// read-only property of an entity whose value is the result of a fetch,
/// made lazily and kept until the object is refreshed (Core Data's
/// `NSFetchedPropertyDescription`). Its predicate, on the fetched entity,
/// may use two variables:
///
/// - `$FETCH_SOURCE`: the object the property is read on (compare a to-one
///   with it: `author == $FETCH_SOURCE`), or one of its values by key path
///   (`$FETCH_SOURCE.genre`, attributes and to-ones);
/// - `$FETCHED_PROPERTY.userInfo.KEY`: the text of entry `KEY` of the
///   property's user info, and `$FETCHED_PROPERTY.name`: its name.
///
/// ```swift
/// EntityDescription("Author") { … }
///     .fetching("recentBooks", entity: "Book", where: "author == $FETCH_SOURCE AND year >= 2020",
///               sortedBy: [SortKey("year", ascending: false)])
/// ```
public struct FetchedPropertyDescription: Sendable, Hashable {
    /// The property's name, unique among the entity's properties.
    public var name: String
    /// The entity it fetches.
    public var entityName: String
    /// Predicate text in Core Data's syntax (no `%@`); nil fetches every object of the entity.
    public var predicate: String?
    /// The order of the objects, first key first.
    public var sortKeys: [SortKey]
    /// At most this many objects (nil: no limit).
    public var limit: Int?
    /// Free-form key/value pairs, which the predicate reads as `$FETCHED_PROPERTY.userInfo.KEY`.
    public var userInfo: [String: String]

    /// A fetched property named `name`, fetching `entityName` objects.
    public init(_ name: String, entity entityName: String, where predicate: String? = nil, sortedBy sortKeys: [SortKey] = [],
                limit: Int? = nil, userInfo: [String: String] = [:])
    {
        (self.name, self.entityName, self.predicate, self.sortKeys) = (name, entityName, predicate, sortKeys)
        (self.limit, self.userInfo) = (limit, userInfo)
    }
}

extension EntityDescription {
    /// Adds a fetched property (see ``FetchedPropertyDescription``).
    public func fetching(_ name: String, entity: String, where predicate: String? = nil, sortedBy sortKeys: [SortKey] = [],
                         limit: Int? = nil, userInfo: [String: String] = [:]) -> Self
    {
        var copy = self
        copy.fetchedProperties.append(FetchedPropertyDescription(name, entity: entity, where: predicate, sortedBy: sortKeys,
                                                                 limit: limit, userInfo: userInfo))
        return copy
    }
}

/// A bound fetched property: its predicate parsed and its key paths and
/// variables checked when the model was bound. Read it on an object with
/// Amber's `ManagedObject.fetchedObjects(forKey:)`.
public struct FetchedProperty: Sendable {
    /// The property's name.
    public let name: String
    /// The entity that declares it (its sub-entities have it too).
    public let entityName: String
    /// The entity it fetches.
    public let destinationName: String
    /// The parsed predicate, `$FETCHED_PROPERTY` already filled in; nil fetches all.
    public let predicate: FetchPredicate?
    /// The order, first key first.
    public let sortKeys: [SortKey]
    /// At most this many objects (nil: no limit).
    public let limit: Int?
    /// The property's user info.
    public let userInfo: [String: String]

    /// The variable naming the object the property is read on.
    public static let sourceVariable = "FETCH_SOURCE"
    /// The variable naming the property itself.
    public static let propertyVariable = "FETCHED_PROPERTY"

    /// The key paths after `$FETCH_SOURCE.` the predicate reads on the source
    /// object (empty for `$FETCH_SOURCE` itself), each once.
    public var sourceKeyPaths: [String] {
        (predicate?.variables ?? []).compactMap { variable in
            variable == Self.sourceVariable ? "" : variable.hasPrefix(Self.sourceVariable + ".")
                ? String(variable.dropFirst(Self.sourceVariable.count + 1)) : nil
        }
    }

    /// The request that reads the property, each `$FETCH_SOURCE` variable
    /// replaced by its value in `source` (keyed by ``sourceKeyPaths``).
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidSubstitution(variable:message:)``
    ///   should a value be missing (the caller gives one per key path).
    public func request(source: [String: Value]) throws(AmberError) -> FetchRequest {
        var values: [String: Value] = [:]
        for (path, value) in source { values[path.isEmpty ? Self.sourceVariable : "\(Self.sourceVariable).\(path)"] = value }
        let filled = try FetchPredicate.substituting(values, into: predicate, owner: "fetched property \(entityName).\(name)")
        return FetchRequest(destinationName, predicate: filled, sortedBy: sortKeys, limit: limit)
    }
}

extension Model {
    /// Binds the fetched properties of every entity (each with those it
    /// inherits): predicate parsed, `$FETCHED_PROPERTY` filled in from the
    /// property, key paths resolved on the fetched entity and `$FETCH_SOURCE`
    /// paths on the declaring one. Problems are placed as `Entity.property`.
    static func bindFetchedProperties(_ descriptions: [EntityDescription], entities: [Entity], byName: [String: Entity],
                                      problems: inout [ModelProblem]) -> [[FetchedProperty]]
    {
        var declared: [[FetchedProperty]] = []
        for (description, entity) in zip(descriptions, entities) {
            var own: [FetchedProperty] = []
            for property in description.fetchedProperties {
                if own.contains(where: { $0.name == property.name }) {
                    problems.append(ModelProblem(place: "\(entity.name).\(property.name)", message: "duplicate fetched property name"))
                } else if let bound = bind(property, of: entity, entities: entities, byName: byName, problems: &problems) {
                    own.append(bound)
                }
            }
            declared.append(own)
        }
        // An entity has its ancestors' fetched properties, then its own; a name may be declared once along the
        // way, and not by a property of an entity below (each clash is reported once, where it is declared).
        return entities.map { entity in
            var all: [FetchedProperty] = []
            for owner in entity.ancestors.reversed() + [entity] {
                for property in declared[owner.index] where !all.contains(where: { $0.name == property.name }) {
                    all.append(property)
                }
            }
            let inherited = all.filter { $0.entityName != entity.name }
            for property in declared[entity.index] where inherited.contains(where: { $0.name == property.name }) {
                problems.append(ModelProblem(place: "\(entity.name).\(property.name)", message: "an inherited fetched property has that name"))
            }
            let names = Set(entity.attributes.map(\.name) + entity.relationships.map(\.name))
            // A name the declaring entity has too was reported there.
            for property in inherited where names.contains(property.name) {
                guard let declarer = byName[property.entityName],
                      !declarer.attributes.contains(where: { $0.name == property.name }),
                      !declarer.relationships.contains(where: { $0.name == property.name }) else { continue }
                problems.append(ModelProblem(place: "\(entity.name).\(property.name)",
                                             message: "a property of the entity has the name of fetched property \(property.entityName).\(property.name)"))
            }
            return all
        }
    }

    /// `description` bound as a fetched property of `entity`; nil, with its problems, if it cannot be.
    static func bind(_ description: FetchedPropertyDescription, of entity: Entity, entities: [Entity], byName: [String: Entity],
                     problems: inout [ModelProblem]) -> FetchedProperty?
    {
        let place = "\(entity.name).\(description.name)", before = problems.count
        func problem(_ message: String) { problems.append(ModelProblem(place: place, message: message)) }
        if entity.attributes.contains(where: { $0.name == description.name }) || entity.relationships.contains(where: { $0.name == description.name }) {
            problem("the entity has another property of that name")
        }
        let request = FetchTemplateDescription(description.name, entity: description.entityName, where: description.predicate,
                                               sortedBy: description.sortKeys, limit: description.limit)
        guard let bound = bindRequest(request, kind: "fetched property", entities: byName, model: entities, problem: problem) else { return nil }
        var constants: [String: Value] = [:]
        for variable in bound.predicate?.variables ?? [] {
            let property = FetchedProperty.propertyVariable + "."
            if variable == FetchedProperty.sourceVariable { continue }
            if variable.hasPrefix(FetchedProperty.sourceVariable + ".") {
                let path = String(variable.dropFirst(FetchedProperty.sourceVariable.count + 1))
                if let issue = keyPathProblem(path, from: entity, model: entities, toOnesOnly: true) { problem("$\(variable): \(issue)") }
            } else if variable == property + "name" {
                constants[variable] = .string(description.name)
            } else if variable.hasPrefix(property + "userInfo."), let text = description.userInfo[String(variable.dropFirst(property.count + 9))] {
                constants[variable] = .string(text)
            } else {
                problem("$\(variable): a fetched property's predicate takes $FETCH_SOURCE (or a key path of it), "
                    + "$FETCHED_PROPERTY.name and $FETCHED_PROPERTY.userInfo.KEY for a key of its user info")
            }
        }
        guard problems.count == before else { return nil }
        return FetchedProperty(name: description.name, entityName: entity.name, destinationName: bound.entity.name,
                               predicate: bound.predicate?.filling(constants), sortKeys: description.sortKeys, limit: description.limit,
                               userInfo: description.userInfo)
    }

    /// The fetched properties of `entity`: its own and those it inherits.
    public func fetchedProperties(of entity: Entity) -> [FetchedProperty] { fetchedProperties[entity.index] }

    /// The fetched property named `name` of `entity` (declared by it or an entity it inherits from).
    ///
    /// - Throws: ``/AmberValues/AmberError/unknownFetchedProperty(entity:name:suggestion:)`` with the nearest name.
    public func fetchedProperty(named name: String, of entity: Entity) throws(AmberError) -> FetchedProperty {
        let properties = fetchedProperties[entity.index]
        guard let found = properties.first(where: { $0.name == name }) else {
            throw .unknownFetchedProperty(entity: entity.name, name: name, suggestion: nearestName(to: name, in: properties.map(\.name)))
        }
        return found
    }
}
