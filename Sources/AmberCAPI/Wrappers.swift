import Amber
import AmberHeaders
import Foundation
import Synchronization

// What each kind of handle holds. The handle table keeps these alive; they
// keep the core objects alive.

/// C strings handed out for layouts, freed with the handle that owns the pool.
final class CStringPool: @unchecked Sendable {
    private let strings = Locked<[String: UnsafeMutablePointer<CChar>]>([:])

    deinit { strings.withLock { $0.values.forEach { free($0) } } }

    /// `text` as a C string that lives as long as this pool.
    func cString(_ text: String) -> UnsafePointer<CChar>? {
        strings.withLock { pool in
            if let existing = pool[text] { return UnsafePointer(existing) }
            let made = strdup(text)
            pool[text] = made
            return UnsafePointer(made)
        }
    }
}

final class CRegistry: Sendable {
    let registry: Registry
    let strings = CStringPool()
    init(_ registry: Registry) { self.registry = registry }
}

final class CBuilder {
    let description = Locked(ModelDescription(entities: []))
}

/// A model and the entity and attribute handles it gave out (released with it).
final class CModel: @unchecked Sendable {
    let model: Model
    /// Entity handles by entity index, made on first request.
    private let entityHandles = Locked<[Int: OpaquePointer]>([:])
    /// C strings handed out for struct layouts and templates, freed with the model handle.
    let strings = CStringPool()
    /// The model's templates as C describes them, in model order.
    let templateViews: [CTemplateView]

    init(_ model: Model) {
        self.model = model
        templateViews = model.templates.map { [strings] in CTemplateView($0, strings: strings) }
    }

    /// Handles made after the model's own handle was freed (through a store's
    /// objects) go with the last user of the model.
    deinit { releaseOwnedHandles() }

    func handle(for entity: Entity) throws(CAPIError) -> OpaquePointer? {
        if let existing = entityHandles.withLock({ $0[entity.index] }) { return existing }
        let made = Handles.make(CEntity(entity, model: self), kind: .entity)
        return entityHandles.withLock { handles in
            // Another thread may have made one meanwhile: keep the first, drop ours.
            if let existing = handles[entity.index] {
                Handles.releaseUnchecked([made])
                return existing
            }
            handles[entity.index] = made
            return made
        }
    }

    /// Releases every entity handle and, through them, their attribute handles.
    func releaseOwnedHandles() {
        let handles = entityHandles.withLock { handles in
            defer { handles.removeAll() }
            return Array(handles.values)
        }
        for handle in handles {
            if let entity: CEntity = try? Handles.resolve(handle, as: .entity, "entity") { entity.releaseAttributeHandles() }
        }
        Handles.releaseUnchecked(handles)
    }
}

final class CEntity: @unchecked Sendable {
    let entity: Entity
    private let attributeHandles = Locked<[Int: OpaquePointer]>([:])
    private let relationshipHandles = Locked<[Int: OpaquePointer]>([:])
    /// The entity's name as a C string owned by this handle.
    let cName: UnsafeMutablePointer<CChar>
    /// The model handle's wrapper, which releases this handle with itself (so not retained here).
    private(set) weak var model: CModel?

    init(_ entity: Entity, model: CModel) {
        self.entity = entity
        self.cName = strdup(entity.name)
        self.model = model
    }

    deinit { free(cName) }

    func handle(for attribute: Attribute) -> OpaquePointer? {
        attributeHandles.withLock { handles in
            if let existing = handles[attribute.slot] { return existing }
            let made = Handles.make(CAttribute(attribute), kind: .attribute, attribute: attribute)
            handles[attribute.slot] = made
            return made
        }
    }

    func handle(for relationship: Relationship) -> OpaquePointer? {
        relationshipHandles.withLock { handles in
            if let existing = handles[relationship.index] { return existing }
            let made = Handles.make(CRelationship(relationship), kind: .relationship)
            handles[relationship.index] = made
            return made
        }
    }

    func releaseAttributeHandles() {
        Handles.releaseUnchecked(attributeHandles.withLock { handles in
            defer { handles.removeAll() }
            return Array(handles.values)
        })
        Handles.releaseUnchecked(relationshipHandles.withLock { handles in
            defer { handles.removeAll() }
            return Array(handles.values)
        })
    }
}

/// A relationship, with its description as C strings owned by this handle.
final class CRelationship {
    let relationship: Relationship
    let cName: UnsafeMutablePointer<CChar>
    let cDestination: UnsafeMutablePointer<CChar>
    let cInverse: UnsafeMutablePointer<CChar>?

    init(_ relationship: Relationship) {
        self.relationship = relationship
        self.cName = strdup(relationship.name)
        self.cDestination = strdup(relationship.destinationName)
        self.cInverse = relationship.inverseName.map { strdup($0) }
    }

    deinit {
        free(cName)
        free(cDestination)
        free(cInverse)
    }
}

final class CAttribute {
    let attribute: Attribute
    /// The name, value class and derivation as C strings owned by this handle.
    let cName: UnsafeMutablePointer<CChar>
    let cValueClass: UnsafeMutablePointer<CChar>?
    let cDerivation: UnsafeMutablePointer<CChar>?
    /// A computed attribute's function name, and its sources' names (an array of them, then the strings).
    let cFunction: UnsafeMutablePointer<CChar>?
    let cSources: UnsafeMutablePointer<UnsafePointer<CChar>?>

    init(_ attribute: Attribute) {
        self.attribute = attribute
        self.cName = strdup(attribute.name)
        self.cValueClass = attribute.valueClassName.map { strdup($0) }
        self.cDerivation = attribute.derivation.map { strdup($0.expression) }
        self.cFunction = attribute.computation.map { strdup($0.function) }
        let sources = attribute.computation?.sources ?? []
        cSources = .allocate(capacity: max(1, sources.count))
        for (i, source) in sources.enumerated() { cSources[i] = UnsafePointer(strdup(source)) }
    }

    deinit {
        free(cName)
        free(cValueClass)
        free(cDerivation)
        free(cFunction)
        for i in 0..<(attribute.computation?.sources.count ?? 0) { free(UnsafeMutableRawPointer(mutating: cSources[i])) }
        cSources.deallocate()
    }
}

/// A store, shared by contexts on any threads (the core store serializes them).
final class CStore {
    let store: Store
    /// The model handle the store's entities are reached through (amber_object_entity).
    let model: CModel

    init(_ store: Store, model: CModel) {
        self.store = store
        self.model = model
    }
}

/// A context, its owning thread, and the object handles it gave out.
final class CContext {
    let context: Context
    let thread = OwnerThread()
    let store: CStore
    /// Its own handle (amber_object_context), set once made.
    var handle: OpaquePointer?
    /// Every object with a live handle, each once; a CObject knows its
    /// position, so releasing one handle is a swap, not a search.
    private var live: [CObject] = []

    init(_ context: Context, store: CStore) {
        self.context = context
        self.store = store
        context.binding = self
    }

    /// The thread that made it (its mark's token), the only one its handles may be used on.
    var owner: UInt { thread.token }

    func checkThread(_ parameter: String, freeing: Bool = false) throws(CAPIError) { try thread.check(parameter, freeing: freeing) }

    /// The handle of `object`: the same one every time it is returned. The
    /// object keeps its handle in its binding word, so this is a load.
    func handle(for object: ManagedObject) -> OpaquePointer? {
        if object.bindingWord != 0 { return OpaquePointer(bitPattern: object.bindingWord) }
        let wrapper = CObject(object, context: self, position: live.count)
        let made = Handles.make(wrapper, kind: .object, owner: owner)
        wrapper.handle = made
        object.bindingWord = UInt(bitPattern: made)
        live.append(wrapper)
        return made
    }

    /// Makes room for `count` more handles.
    func reserveHandles(_ count: Int) { live.reserveCapacity(live.count + count) }

    /// Drops the handle of `object` (amber_object_release); the context keeps
    /// the object itself while it has pending changes.
    func releaseHandle(of object: CObject, _ handle: OpaquePointer?) throws(CAPIError) {
        try Handles.release(handle, as: .object, "object")
        forget(object)
    }

    private func forget(_ object: CObject) {
        object.object.bindingWord = 0
        let position = object.position
        guard position < live.count, live[position] === object else { return }
        let last = live.removeLast()
        if last !== object {
            live[position] = last
            last.position = position
        }
    }

    func releaseObjectHandles() {
        let released = live
        live.removeAll()
        for object in released { object.object.bindingWord = 0 }
        Handles.releaseUnchecked(released.map(\.handle))
    }
}

final class CObject {
    let object: ManagedObject
    let context: CContext
    /// Its handle, and its place in the context's list of live handles.
    var handle: OpaquePointer?
    var position: Int
    init(_ object: ManagedObject, context: CContext, position: Int) {
        self.object = object
        self.context = context
        self.position = position
    }
}

extension Handles {
    /// A context handle, checked to be used on its own thread.
    static func context(_ handle: OpaquePointer?, _ parameter: String = "context") throws(CAPIError) -> CContext {
        if let context = Mirror.owned(handle, .context, as: CContext.self) { return context }
        let context: CContext = try resolve(handle, as: .context, parameter)
        try context.checkThread(parameter)
        return context
    }

    /// A context handle to free: on its thread, or on any once that thread has ended.
    static func contextToFree(_ handle: OpaquePointer?) throws(CAPIError) -> CContext {
        if let context = Mirror.owned(handle, .context, as: CContext.self) { return context }
        let context: CContext = try resolve(handle, as: .context, "context")
        try context.checkThread("context", freeing: true)
        return context
    }

    /// An object handle, checked to be used on its context's thread.
    static func object(_ handle: OpaquePointer?, _ parameter: String = "object") throws(CAPIError) -> CObject {
        if let object = Mirror.owned(handle, .object, as: CObject.self) { return object }
        let object: CObject = try resolve(handle, as: .object, parameter)
        try object.context.checkThread(parameter)
        return object
    }

    /// A registry handle, or the shared registry for NULL.
    static func registry(_ handle: OpaquePointer?) throws(CAPIError) -> Registry {
        guard handle != nil else { return .shared }
        let registry: CRegistry = try resolve(handle, as: .registry, "registry")
        return registry.registry
    }
}
