import AmberTransformers
import AmberValues
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
    /// The fetch request templates, in model order, each parsed and checked at bind.
    public let templates: [FetchTemplate]
    /// By entity index, its fetched properties (inherited first), each parsed and checked at bind.
    let fetchedProperties: [[FetchedProperty]]
    /// Whether any entity has a relationship (saves check links only then).
    package let hasRelationships: Bool
    /// Whether any entity has a uniqueness constraint (a save that fails validation checks them too only then).
    package let hasUniquenessConstraints: Bool
    private let entitiesByName: [String: Entity]
    /// Custom value classes this model can use: the registry's at bind time and its own.
    private let customClasses: [String: ResolvedClass]
    /// The registry it was bound with: a migration binds the store's older model with it.
    package let registry: Registry
    /// The code layers above give its entities (validators and lifecycle hooks).
    package let code: EntityCode

    /// Binds `description` against the value classes and transformers of
    /// `registry`, checking the whole model: names, types, rules, that every
    /// value class and transformer exists and that each transformer chain's
    /// classes line up from the attribute's value class to a storable class.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidModel(_:)`` listing every problem found,
    ///   each with its place (`Book.price`) and, for a misspelled name, the
    ///   nearest known one.
    public init(_ description: ModelDescription, registry: Registry = .shared) throws(AmberError) {
        let plan = try ModelChecker.plan(description, registry: registry.snapshot())
        self.description = description
        self.registry = registry
        let hierarchy = plan.hierarchy
        // Parents first (fewest ancestors first): each entity keeps its ancestors' handles.
        var made = [Entity?](repeating: nil, count: hierarchy.effective.count)
        for index in made.indices.sorted(by: { hierarchy.depths[$0] < hierarchy.depths[$1] }) {
            let parent = hierarchy.parents[index].flatMap { made[$0] }
            // An extended key may not be the name of a property of any entity of the hierarchy: their rows share the
            // table, and a fetch of the root must read one name one way.
            let modelled = hierarchy.subtrees[hierarchy.roots[index]].flatMap { below in
                hierarchy.effective[below].attributes.map(\.name) + hierarchy.effective[below].relationships.map(\.name)
            }
            made[index] = Entity(description: hierarchy.effective[index], index: index, plans: plan.attributes[index],
                                 relationshipPlans: plan.relationships[index], parent: parent, rootIndex: hierarchy.roots[index],
                                 subentityIndices: hierarchy.subtrees[index], modelledNames: modelled, stored: hierarchy.columns[index])
        }
        let entities = made.compactMap { $0 }, entitiesByName = Dictionary(uniqueKeysWithValues: entities.map { ($0.name, $0) })
        self.entities = entities
        self.entitiesByName = entitiesByName
        self.code = EntityCode()
        self.hasRelationships = entities.contains { !$0.relationships.isEmpty }
        self.hasUniquenessConstraints = entities.contains { !$0.uniquenessConstraints.isEmpty }
        self.versionHash = ModelFingerprint(description).hash
        self.customClasses = plan.scope.classes.mapValues(\.item)
        // Derived attributes and templates follow relationships, so they are checked once everything else has bound.
        var problems: [ModelProblem] = []
        self.templates = Self.bindTemplates(description.templates, entities: entitiesByName, model: entities, problems: &problems)
        self.fetchedProperties = Self.bindFetchedProperties(hierarchy.effective.indices.map { description.entities[$0] }, entities: entities,
                                                            byName: entitiesByName, problems: &problems)
        problems = derivationProblems() + problems
        guard problems.isEmpty else { throw .invalidModel(problems) }
    }

    /// The struct class named `name`, as this model sees it (declared by the
    /// model or by the registry it was bound with); nil if there is none.
    public func structClass(named name: String) -> StructClass? {
        if case .structure(let layout)? = customClasses[name] { return layout }
        return nil
    }

    /// The entity `entity` inherits from, if any.
    public func parent(of entity: Entity) -> Entity? { entity.parentIndex.map { entities[$0] } }

    /// The root of `entity`'s hierarchy (the entity itself if it has no parent): its table holds them all.
    public func root(of entity: Entity) -> Entity { entities[entity.rootIndex] }

    /// The entity named `name`.
    ///
    /// - Throws: ``/AmberValues/AmberError/unknownEntity(name:suggestion:)`` with the nearest name.
    public func entity(named name: String) throws(AmberError) -> Entity {
        guard let entity = entitiesByName[name] else {
            throw .unknownEntity(name: name, suggestion: nearestName(to: name, in: entities.map(\.name)))
        }
        return entity
    }

    /// The entity `relationship` points at.
    public func destination(of relationship: Relationship) -> Entity { entities[relationship.destinationIndex] }

    /// The relationship on the destination that points back; nil for a one-way relationship.
    public func inverse(of relationship: Relationship) -> Relationship? {
        relationship.inverseIndex.map { entities[relationship.destinationIndex].relationships[$0] }
    }
}

/// A bound entity: its attributes resolved to slots.
public final class Entity: Sendable, CustomStringConvertible {
    /// The entity's name (also its table's name).
    public let name: String
    /// Its position in the model.
    public let index: Int
    /// The position of the entity it inherits from, if any.
    public var parentIndex: Int? { ancestors.first?.index }
    /// The entities it inherits from, nearest first.
    package let ancestors: [Entity]
    /// The position of its hierarchy's root (its own if it has no parent).
    public let rootIndex: Int
    /// Its own position and those of every entity below it, in model order:
    /// a fetch of this entity returns objects of all of them.
    public let subentityIndices: [Int]
    /// Whether only its sub-entities have objects.
    public let isAbstract: Bool
    /// All attributes; `attributes[i].slot == i`.
    public let attributes: [Attribute]
    /// The attributes that have a column in the store, in column order.
    public let persistentAttributes: [Attribute]
    /// Its relationships; `relationships[i].index == i`.
    public let relationships: [Relationship]
    /// Whether its objects take extended attributes (keys the model does not name).
    public let isExtensible: Bool
    /// The hidden slot holding an extensible entity's extended attributes in
    /// their stored form (the JSON text of column `_extra`, or null when there are none).
    package let extraSlot: Int?
    /// By lowercased name, the attributes and relationships of every entity of
    /// this one's hierarchy, which no extended key may use: the property's name as written.
    package let modelledNames: [String: String]
    /// The to-one relationships (each has a slot), for the checks a save makes.
    package let toOneRelationships: [Relationship]
    /// The to-many relationships with a minimum or maximum count.
    package let countedRelationships: [Relationship]
    /// The stored columns, in order: one per persistent attribute, then one
    /// per to-one relationship (the destination's primary key).
    package let columns: [Column]
    /// Slots per object: one per attribute, then one hidden slot per
    /// transformable attribute for its encoded form, then one per to-one
    /// relationship for the destination's primary key, then, if extensible,
    /// one for its extended attributes.
    package let slotCount: Int
    /// Attributes with transformers.
    package let codedAttributes: [Attribute]
    /// Those of them decoded at fetch (usually none, so a fetch skips the step).
    package let eagerAttributes: [Attribute]
    /// For each slot, the attribute whose encoded form it holds, if any
    /// (setting it invalidates that attribute's decoded value).
    package let encodedFormOf: [Attribute?]
    /// A new object's slots: defaults, with hidden slots empty.
    package let initialValues: [Value]
    /// Compound indexes.
    public let indexes: [[Attribute]]
    /// Uniqueness constraints.
    public let uniquenessConstraints: [[Attribute]]
    /// User info from the model.
    public let userInfo: [String: String]
    /// Attributes with a rule to check at save (required, or with validation).
    package let checkedAttributes: [Attribute]
    /// Computed attributes, whose cached values go stale when a source changes.
    package let computedAttributes: [Attribute]
    /// By slot, the computed attributes that slot's attribute is a source of
    /// (empty when the entity has no computed attributes).
    package let dependents: [[Attribute]]
    private let attributesByName: [String: Attribute]
    private let relationshipsByName: [String: Relationship]
    /// What layers above keep with the entity (see ``EntityAttachments``).
    package let attachments = EntityAttachments()
    /// The code layers above give the entity (see ``EntityCode``).
    package let codeSlot = EntityCodeSlot()

    init(description: EntityDescription, index: Int, plans: [AttributePlan], relationshipPlans: [RelationshipPlan],
         parent: Entity?, rootIndex: Int, subentityIndices: [Int], modelledNames: [String], stored: [String: StoredColumn])
    {
        let storedColumn = { (name: String) in stored[name] ?? StoredColumn(name: name, property: name, rank: 0) }
        self.name = description.name
        self.index = index
        self.ancestors = parent.map { [$0] + $0.ancestors } ?? []
        self.rootIndex = rootIndex
        self.subentityIndices = subentityIndices
        self.isAbstract = description.isAbstract
        let slotsByName = Dictionary(description.attributes.enumerated().map { ($0.element.name, $0.offset) },
                                     uniquingKeysWith: { first, _ in first })
        var nextHiddenSlot = description.attributes.count
        self.attributes = description.attributes.enumerated().map { slot, attribute in
            let plan = plans[slot]
            let binding = plan.binding
            var codec: Codec?
            if let binding, !binding.chain.isEmpty, let storedType = binding.storedType {
                let encodedSlot: Int
                if attribute.isTransient {
                    encodedSlot = attribute.storageAttribute.flatMap { slotsByName[$0] } ?? slot
                } else {
                    encodedSlot = nextHiddenSlot
                    nextHiddenSlot += 1
                }
                codec = Codec(chain: binding.chain, encodedSlot: encodedSlot, storedType: storedType,
                              decodePolicy: attribute.decodePolicy, encodePolicy: attribute.encodePolicy)
            }
            return Attribute(description: attribute, entity: description.name, slot: slot, plan: plan, codec: codec,
                             column: storedColumn(attribute.name))
        }
        self.relationships = description.relationships.enumerated().map { position, relationship in
            let plan = relationshipPlans[position]
            var storage = plan.toManyStorage ?? .inverseForeignKey(orderColumn: nil)
            if !relationship.isToMany {
                storage = .foreignKey(slot: nextHiddenSlot)
                nextHiddenSlot += 1
            }
            return Relationship(description: relationship, entity: description.name, entityIndex: index, index: position, plan: plan,
                                storage: storage, column: storedColumn(relationship.name))
        }
        self.isExtensible = description.isExtensible
        self.extraSlot = description.isExtensible ? nextHiddenSlot : nil
        if description.isExtensible { nextHiddenSlot += 1 }
        self.modelledNames = Dictionary(modelledNames.map { ($0.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
        self.toOneRelationships = relationships.filter { !$0.isToMany }
        self.countedRelationships = relationships.filter { $0.minCount != nil || $0.maxCount != nil }
        self.slotCount = nextHiddenSlot
        self.persistentAttributes = attributes.filter { !$0.isTransient }
        self.columns = persistentAttributes.map { attribute in
            Column(stored: attribute.storedColumn, type: attribute.codec?.storedType ?? attribute.type,
                   slot: attribute.codec?.encodedSlot ?? attribute.slot)
        } + relationships.compactMap { relationship in
            relationship.slot.map { Column(stored: relationship.storedColumn, type: .integer64, slot: $0) }
        } + (extraSlot.map { [Column(stored: StoredColumn(name: ExtendedValues.columnName, property: ExtendedValues.columnName, rank: 0),
                                     type: .string, slot: $0)] } ?? [])
        self.codedAttributes = attributes.filter { $0.codec != nil }
        self.eagerAttributes = codedAttributes.filter { $0.codec?.decodePolicy == .eager }
        var encodedFormOf = [Attribute?](repeating: nil, count: nextHiddenSlot)
        for attribute in codedAttributes { if let codec = attribute.codec { encodedFormOf[codec.encodedSlot] = attribute } }
        self.encodedFormOf = encodedFormOf
        self.initialValues = attributes.map(\.defaultValue)
            + Array(repeating: Value.null, count: nextHiddenSlot - attributes.count)
        self.relationshipsByName = Dictionary(uniqueKeysWithValues: relationships.map { ($0.name, $0) })
        self.checkedAttributes = attributes.filter { !$0.isOptional || !$0.validation.isEmpty }
        let computed = attributes.filter { $0.computer != nil }
        self.computedAttributes = computed
        var dependents = [[Attribute]](repeating: [], count: computed.isEmpty ? 0 : attributes.count)
        for attribute in computed {
            for slot in attribute.computer?.sourceSlots ?? [] { dependents[slot].append(attribute) }
        }
        // A transient attribute and the stored one keeping its encoded form change together: either
        // half's set (or the encoding at save) moves the other, so they share their dependents.
        if !computed.isEmpty {
            for attribute in attributes where attribute.isTransient {
                guard let stored = attribute.codec?.encodedSlot, stored != attribute.slot, stored < attributes.count else { continue }
                let shared = dependents[attribute.slot] + dependents[stored].filter { other in !dependents[attribute.slot].contains { $0 === other } }
                (dependents[attribute.slot], dependents[stored]) = (shared, shared)
            }
        }
        self.dependents = dependents
        let byName = Dictionary(uniqueKeysWithValues: attributes.map { ($0.name, $0) })
        self.attributesByName = byName
        self.indexes = description.indexes.map { $0.compactMap { byName[$0] } }
        self.uniquenessConstraints = description.uniquenessConstraints.map { $0.compactMap { byName[$0] } }
        self.userInfo = description.userInfo
    }

    /// The attribute named `name`.
    ///
    /// - Throws: ``/AmberValues/AmberError/unknownAttribute(entity:name:suggestion:)`` with the nearest name.
    public func attribute(named name: String) throws(AmberError) -> Attribute {
        guard let attribute = attributesByName[name] else {
            throw .unknownAttribute(entity: self.name, name: name,
                                    suggestion: nearestName(to: name, in: attributes.map(\.name)))
        }
        return attribute
    }

    /// The attribute named `name`, or nil if it has none.
    package func existingAttribute(named name: String) -> Attribute? { attributesByName[name] }

    /// The relationship named `name`.
    ///
    /// - Throws: ``/AmberValues/AmberError/unknownRelationship(entity:name:suggestion:)`` with the nearest name.
    public func relationship(named name: String) throws(AmberError) -> Relationship {
        guard let relationship = relationshipsByName[name] else {
            throw .unknownRelationship(entity: self.name, name: name,
                                       suggestion: nearestName(to: name, in: relationships.map(\.name)))
        }
        return relationship
    }

    /// Whether this entity is `entity` or inherits from it.
    public func isKind(of entity: Entity) -> Bool { entity.subentityIndices.contains(index) }

    /// Whether `relationship` is one of this entity's own handles.
    package func owns(_ relationship: Relationship) -> Bool {
        relationship.index < relationships.count && relationships[relationship.index] === relationship
    }

    /// This entity's handle for `attribute`: the handle itself, or, for a
    /// handle of an entity this one inherits from, the inherited attribute
    /// (at the same slot: inherited attributes come first, in order); nil for
    /// any other entity's.
    @inline(__always)
    package func own(_ attribute: Attribute) -> Attribute? {
        if owns(attribute) { return attribute }
        return ancestors.contains { $0.owns(attribute) } ? attributes[attribute.slot] : nil
    }

    /// The error for `attribute`, a handle this entity does not own, used with `object`.
    package func foreign(_ attribute: Attribute, object: String) -> AmberError {
        .foreignAttribute(attribute: describe(foreign: attribute), object: object)
    }

    /// `Book.title` for a handle this entity does not own, `Book.title (of
    /// another model)` for one of another model that names this entity's own
    /// attribute (as an entity of another model is named).
    package func describe(foreign attribute: Attribute) -> String {
        let names = [name] + ancestors.map(\.name)
        let twin = names.contains(attribute.entityName) && attributes.contains { $0.name == attribute.name }
        return attribute.description + (twin ? " (of another model)" : "")
    }

    /// ``own(_:)`` for relationships.
    package func own(_ relationship: Relationship) -> Relationship? {
        if owns(relationship) { return relationship }
        return ancestors.contains { $0.owns(relationship) } ? relationships[relationship.index] : nil
    }

    /// Whether `attribute` is one of this entity's own handles.
    package func owns(_ attribute: Attribute) -> Bool {
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
    /// Core Data's "Allows External Storage" (``AttributeDescription/allowsExternalStorage``).
    public let allowsExternalStorage: Bool
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
    /// The class values must have, for transformable and undefined attributes
    /// (nil: any value).
    let valueClass: ResolvedClass?
    /// The struct class values must have and its C layout, for an attribute of one.
    public var structClass: StructClass? {
        if case .structure(let layout)? = valueClass { return layout }
        return nil
    }
    /// How values are encoded for storage, for attributes with transformers.
    package let codec: Codec?
    /// The compiled `validation.pattern`.
    package let pattern: Pattern?
    /// Whether a value must pass rules beyond its type (bounds, lengths, a pattern).
    package var hasRules: Bool { validation != AttributeDescription.Validation() || pattern != nil }
    /// For a derived attribute, what the store computes it from at save.
    public let derivation: Derivation?
    /// For a computed attribute, the function and the attributes it computes the value from.
    public let computation: AttributeDescription.Computation?
    /// The bound function of a computed attribute.
    package let computer: Computer?
    /// Whether reading the value is reading its slot (no transformer, not
    /// computed): the fast path's test, without copying ``codec`` or ``computer``.
    package let readsSlot: Bool

    /// The name of the class values must have (transformable and undefined attributes).
    public var valueClassName: String? { valueClass?.name }
    /// The transformer chain's names, first link first.
    public var transformerNames: [String] { codec?.chain.map(\.transformer.name) ?? [] }

    /// Its column in the hierarchy's table (see ``columnName``).
    package let storedColumn: StoredColumn
    /// The name of its column in Amber's layout: its own name, or
    /// `Entity.name` when an entity beside its own in the hierarchy declared
    /// an attribute or relationship of that name first.
    package var columnName: String { storedColumn.name }

    init(description: AttributeDescription, entity: String, slot: Int, plan: AttributePlan, codec: Codec?, column: StoredColumn) {
        self.storedColumn = column
        self.derivation = plan.derivation
        self.computation = description.computation
        self.computer = plan.computer
        self.name = description.name
        self.entityName = entity
        self.type = description.type
        self.isOptional = description.isOptional
        self.defaultValue = plan.defaultValue
        self.isTransient = description.isTransient
        self.isIndexed = description.isIndexed
        self.allowsExternalStorage = description.allowsExternalStorage
        self.validation = description.validation
        self.userInfo = description.userInfo
        self.slot = slot
        self.valueClass = plan.binding?.valueClass
        self.codec = codec
        self.pattern = plan.pattern
        self.readsSlot = codec == nil && plan.computer == nil
    }

    /// `Entity.attribute`, the place errors name.
    public var description: String { "\(entityName).\(name)" }

    /// Checks `value` against the attribute's type or value class and returns
    /// it as kept in memory.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidValue(place:expected:given:)``.
    @inline(__always)
    package func check(_ value: Value) throws(AmberError) -> Value {
        let checked: Value
        if type == .transformable || type == .undefined {
            if let valueClass, let mismatch = valueClass.mismatch(value) {
                throw .invalidValue(place: description, expected: valueClass.name, given: mismatch)
            }
            checked = value
        } else {
            checked = try type.coerce(value, place: description)
        }
        // SQLite stores a NaN REAL as NULL: the value would be lost, so a stored attribute refuses it.
        if checked.isNaN, !isTransient {
            throw .invalidValue(place: description, expected: valueClass?.name ?? type.coreDataName,
                                given: "\(value.className) NaN, which a store cannot keep (a transient attribute can hold it)")
        }
        return checked
    }
}

extension Attribute {
    /// The validation rules `value` (not nil) breaks, each with its message:
    /// what a save checks, and what binding checks a default against.
    package func violations(of value: Value) -> [(SaveProblem.Rule, String)] {
        Self.violations(of: value, rules: validation, pattern: pattern)
    }

    static func violations(of value: Value, rules: AttributeDescription.Validation, pattern: Pattern?) -> [(SaveProblem.Rule, String)] {
        var found: [(SaveProblem.Rule, String)] = []
        if let minimum = rules.minValue, ValueOrder.compare(value, minimum) == .orderedAscending {
            found.append((.minValue, "\(value) is less than the minimum \(minimum)"))
        }
        if let maximum = rules.maxValue, ValueOrder.compare(value, maximum) == .orderedDescending {
            found.append((.maxValue, "\(value) is greater than the maximum \(maximum)"))
        }
        let length: Int? = switch value {
        case .string(let s): s.count
        case .binary(let d): d.count
        default: nil
        }
        let unit = if case .binary = value { "bytes" } else { "characters" }
        if let length, let minimum = rules.minLength, length < minimum {
            found.append((.minLength, "\(length) \(unit), fewer than the minimum \(minimum)"))
        }
        if let length, let maximum = rules.maxLength, length > maximum {
            found.append((.maxLength, "\(length) \(unit), more than the maximum \(maximum)"))
        }
        if let pattern, case .string(let s) = value, !pattern.matches(s) {
            found.append((.pattern, "\(value) does not match the pattern \(pattern.source)"))
        }
        return found
    }
}

/// A stored column: its name, the type it stores and the object slot it reads from and writes to.
package struct Column: Sendable {
    /// Its name and the property it keeps.
    package let stored: StoredColumn
    package let type: AttributeType
    package let slot: Int
    /// The column's name in Amber's layout.
    package var name: String { stored.name }
}

/// How an attribute's values become stored values and back.
package struct Codec: Sendable {
    package let chain: [BoundTransformer]
    /// The slot of the encoded form: a hidden slot, or the storage attribute's (shadow pattern).
    package let encodedSlot: Int
    package let storedType: AttributeType
    package let decodePolicy: AttributeDescription.DecodePolicy
    package let encodePolicy: AttributeDescription.EncodePolicy

    /// Forward through the chain; the failure names the transformer.
    package func encode(_ value: Value) throws(TransformerFailure) -> Value {
        if value.isNull { return .null }
        var current = value
        for link in chain { current = try link.forward(current) }
        return current
    }

    /// Decodes a stored Binary value from its bytes, for a one-link chain
    /// whose transformer has a byte function and a fixed-size value class
    /// (a colour, a rectangle): no value is made for the stored form. nil
    /// when that path does not apply; then use ``decode(_:)``.
    package func decode(bytes: UnsafeRawBufferPointer) throws(TransformerFailure) -> Value? {
        guard chain.count == 1, storedType == .binary else { return nil }
        return try chain[0].reverseToValue(bytes: bytes)
    }

    /// Reverse through the chain, last link first.
    package func decode(_ stored: Value) throws(TransformerFailure) -> Value {
        if stored.isNull { return .null }
        var current = stored
        for link in chain.reversed() { current = try link.reverse(current) }
        return current
    }
}

/// A compiled regular expression matched against whole strings.
/// `NSRegularExpression` is immutable once made and safe to share.
package final class Pattern: @unchecked Sendable {
    package let source: String
    private let regex: NSRegularExpression

    init(_ source: String) throws {
        self.source = source
        self.regex = try NSRegularExpression(pattern: "^(?:\(source))$", options: [])
    }

    package func matches(_ string: String) -> Bool {
        regex.firstMatch(in: string, range: NSRange(string.startIndex..., in: string)) != nil
    }
}
