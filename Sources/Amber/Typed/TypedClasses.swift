import AmberModel
import AmberValues

/// A generated class resolved for one entity of a bound model: the class
/// that entity's objects are made as, with its handles.
/// Inlinable, with what calls it: typed fetches specialize in the caller's
/// module for its class (unspecialized, each append went through the value witnesses).
@usableFromInline
final class ResolvedTypedClass: @unchecked Sendable {  // immutable after init; the handles are Sendable
    @usableFromInline let type: TypedObject.Type
    @usableFromInline let properties: TypedProperties

    init(type: TypedObject.Type, properties: TypedProperties) {
        self.type = type
        self.properties = properties
    }

    @inlinable @inline(__always)
    func make(_ object: ManagedObject) -> TypedObject { type.init(TypedBinding(object: object, properties: properties)) }
}

extension TypedObject {
    /// Checks this class and the generated classes below it against `model`:
    /// each entity must exist and have every property as the class declares it.
    /// Typed fetches and inserts check the same on first use; call this after
    /// opening a store to learn of a mismatch at once.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidDeclaration(place:message:)``
    ///   listing every difference (`Book.title: the class reads string, the model has integer32`).
    public static func check(_ model: Model) throws(AmberError) {
        var differences: [String] = []
        for (name, type) in classesByEntity.sorted(by: { $0.key < $1.key }) {
            guard let entity = try? model.entity(named: name) else {
                differences.append("\(name): the class \(type) reads objects of this entity, the model has none")
                continue
            }
            differences += type.differences(in: entity)
        }
        if !differences.isEmpty { throw mismatch(differences) }
    }

    /// The error listing `differences`.
    private static func mismatch(_ differences: [String]) -> AmberError {
        .invalidDeclaration(place: "generated class \(self)",
                            message: "does not fit the model:\n" + differences.map { "  \($0)" }.joined(separator: "\n"))
    }

    /// This class and every generated class below it, by entity name.
    static var classesByEntity: [String: TypedObject.Type] {
        var found: [String: TypedObject.Type] = [:]
        var waiting: [TypedObject.Type] = [self]
        // Bounded by the generated classes: each entity is visited once.
        while let type = waiting.popLast() {
            // Only classes below this one: a subclass of your own of a generated class (`MyBook: Book`)
            // lists Book's generated subclasses, which are not its own; their entities' objects come as it.
            guard !type.entityName.isEmpty, found[type.entityName] == nil, type is Self.Type else { continue }
            found[type.entityName] = type
            waiting += type.subentityClasses
        }
        return found
    }

    /// How `entity` differs from what this class declares (its own properties and those it inherits).
    static func differences(in entity: Entity) -> [String] {
        declaredProperties.compactMap { $0.difference(in: entity) }
    }

    /// The class `entity`'s objects are made as when asked for as `Self`
    /// (or as the subclass of it put in use for the entity), with its
    /// handles: resolved and checked once per entity.
    @usableFromInline
    static func resolved(for entity: Entity) throws(AmberError) -> ResolvedTypedClass {
        // A subclass of this one put in use for the entity (a class with model logic) is the one its objects come as.
        if let used = entity.classInUse, ObjectIdentifier(used) != ObjectIdentifier(self), used is Self.Type {
            return try used.resolved(for: entity)
        }
        return try entity.attachments.value(for: ObjectIdentifier(self)) { () throws(AmberError) -> ResolvedTypedClass in
            let classes = classesByEntity, lineage = [entity] + entity.ancestors
            // The class of the entity itself, or of the nearest entity it inherits from; the model must
            // have the entity below this class's, not only one of the same name.
            guard lineage.contains(where: { $0.name == entityName }),
                  let type = lineage.lazy.compactMap({ classes[$0.name] }).first
            else {
                throw .invalidDeclaration(place: "generated class \(self)",
                                          message: "reads \(entityName) objects; \(entity.name) is not \(entityName) and does not inherit from it")
            }
            let differences = type.differences(in: entity)
            if !differences.isEmpty { throw type.mismatch(differences) }
            return ResolvedTypedClass(type: type, properties: try type.propertiesClass.init(entity: entity))
        }
    }

    /// `object` as this class (or the class generated for its own entity, below this one).
    static func bound(to object: ManagedObject) throws(AmberError) -> Self {
        let made = try resolved(for: object.entity).make(object)
        // Made from this class's own subtree, so it is one of them.
        return unsafeDowncast(made, to: self)
    }
}

extension ManagedObject {
    /// This object as a generated class: `T` itself, or the class generated
    /// for the object's own entity when that entity inherits from `T`'s.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidDeclaration(place:message:)``
    ///   if the object's entity is not `T`'s (or below it), or the class does not fit the model.
    public func typed<T: TypedObject>(as type: T.Type) throws(AmberError) -> T { try T.bound(to: self) }

    /// The value of `attribute` as `T`, exactly: what generated getters call.
    ///
    /// - Throws: as ``value(for:)``, and ``/AmberValues/AmberError/invalidValue(place:expected:given:)``
    ///   for a value that is not a `T` (a required value not set yet).
    @inlinable
    public func value<T: StoredValue>(for attribute: Attribute, as type: T.Type) throws(AmberError) -> T {
        try T.read(try value(for: attribute), of: attribute)
    }

    /// Sets `attribute` to `value`: what generated setters call. Refused as ``setValue(_:for:)`` refuses.
    @inlinable
    public func set<T: StoredValue>(_ value: T, for attribute: Attribute) throws(AmberError) {
        try setValue(value.storedValue, for: attribute)
    }

    /// The destination of the to-one `relationship` as `T`.
    public func object<T: TypedObject>(for relationship: Relationship, as type: T.Type) throws(AmberError) -> T? {
        try object(for: relationship).map { (destination) throws(AmberError) in try T.bound(to: destination) }
    }

    /// The members of the to-many `relationship` as `T`, in order for an ordered one.
    @inlinable
    public func objects<T: TypedObject>(for relationship: Relationship, as type: T.Type) throws(AmberError) -> [T] {
        try Self.typed(try objects(for: relationship), as: T.self)
    }

    /// `objects` as `T`, resolving each entity's class once.
    @inlinable
    static func typed<T: TypedObject>(_ objects: [ManagedObject], as type: T.Type) throws(AmberError) -> [T] {
        var result: [T] = []
        result.reserveCapacity(objects.count)
        // Most results hold one entity's objects: its class stays at hand, others are looked up once each.
        var lastEntity: ObjectIdentifier?
        var last: ResolvedTypedClass?
        var others: [ObjectIdentifier: ResolvedTypedClass] = [:]
        for object in objects {
            let entity = ObjectIdentifier(object.entity)
            if entity != lastEntity {
                if let known = others[entity] {
                    last = known
                } else {
                    let resolved = try T.resolved(for: object.entity)
                    others[entity] = resolved
                    last = resolved
                }
                lastEntity = entity
            }
            guard let resolved = last else { continue }  // set just above
            result.append(unsafeDowncast(resolved.make(object), to: T.self))
        }
        return result
    }
}

extension Context {
    /// Inserts a new object of `T`'s entity.
    ///
    /// - Throws: as ``insert(_:)-(Entity)``, and if `T` does not fit the model.
    public func insert<T: TypedObject>(_ type: T.Type) throws(AmberError) -> T {
        let entity = try model.entity(named: T.entityName)
        // Resolved (and checked) first: a class that does not fit is refused before anything is inserted.
        let resolved = try T.resolved(for: entity)
        return unsafeDowncast(resolved.make(try insert(entity)), to: T.self)
    }

    /// Fetches `T`'s objects (those of its sub-entities too, each as its own
    /// class), with predicate text as ``fetch(_:where:_:sortedBy:limit:offset:)``:
    /// `try context.fetch(Book.self, where: "price < %@", 10)`.
    @inlinable
    public func fetch<T: TypedObject>(_ type: T.Type, where format: String? = nil, _ arguments: Value...,
                                      sortedBy sortKeys: [SortKey] = [], limit: Int? = nil, offset: Int = 0) throws(AmberError) -> [T]
    {
        let predicate = try format.map { (text) throws(AmberError) in try FetchPredicate(text, arguments: arguments) }
        return try fetch(FetchRequest(T.entityName, predicate: predicate, sortedBy: sortKeys, limit: limit, offset: offset), as: T.self)
    }

    /// Fetches `request` (of `T`'s entity or one that inherits from it) as `T`s.
    ///
    /// - Throws: as ``fetch(_:)``, and ``/AmberValues/AmberError/invalidDeclaration(place:message:)``
    ///   if the request's entity is not `T`'s or below it, or `T` does not fit the model.
    @inlinable
    public func fetch<T: TypedObject>(_ request: FetchRequest, as type: T.Type) throws(AmberError) -> [T] {
        _ = try T.resolved(for: try model.entity(named: request.entityName))
        return try ManagedObject.typed(try fetch(request), as: T.self)
    }

    /// How many objects of `T`'s entity (and those below it) match `format`.
    public func count<T: TypedObject>(_ type: T.Type, where format: String? = nil, _ arguments: Value...) throws(AmberError) -> Int {
        let predicate = try format.map { (text) throws(AmberError) in try FetchPredicate(text, arguments: arguments) }
        return try count(FetchRequest(T.entityName, predicate: predicate))
    }
}

extension ManagedObject {
    /// The fetched property named `key`'s objects as `T`.
    public func fetchedObjects<T: TypedObject>(forKey key: String, as type: T.Type) throws(AmberError) -> [T] {
        try Self.typed(try fetchedObjects(forKey: key), as: T.self)
    }
}
