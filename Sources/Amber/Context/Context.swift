import AmberModel
import AmberStore
import AmberTransformers
import AmberValues
import Foundation

/// A scratchpad over a store: objects are inserted, fetched, changed and
/// deleted here, and written to the store only by ``save()``, all or nothing.
///
/// A context and its objects are used from one thread at a time; contexts
/// on other threads may share its store. Fetching the same row twice gives
/// the same object instance, with any pending changes it has; a fetch gives
/// an unchanged object the row as saved now.
///
/// Other contexts' saves reach this one through ``mergeSavedChanges()``
/// (or automatically, with ``automaticallyMergesChanges``): the objects it
/// holds are refreshed per key, keeping every value set here.
public final class Context {
    /// The store this context reads from and saves to.
    public let store: Store
    /// What a binding layer keeps with the context (the C API: its handle's wrapper), found from its objects' hooks.
    package weak var binding: AnyObject?
    /// The store behind the contract, which every read and save goes through.
    let engine: any StoreEngine
    /// Objects with pending changes (inserted, set or deleted), each once, in first-touch order.
    @exclusivity(unchecked) private(set) var pending: [ManagedObject] = []
    /// Saved objects by entity and primary key, without a strong reference:
    /// an unchanged object nobody holds is released, and its deinit removes
    /// it here (cheaper than a weak reference, which allocates per object).
    @exclusivity(unchecked) private var registry: [ObjectTable]

    /// Per entity, the codec state new and fetched objects start with.
    private let templates: [ObjectTemplate]
    /// New objects that other objects' to-one slots point at, by provisional key.
    @exclusivity(unchecked) var provisional: [Int64: ManagedObject] = [:]
    /// Raised by a rollback: loaded to-many members of an older generation are read again.
    @exclusivity(unchecked) var generation = 0
    /// How many computed attributes are being computed now, one inside another (through callbacks).
    @exclusivity(unchecked) var computingDepth = 0
    /// How many hooks of model logic are running now, one inside another: a save refuses to start inside one.
    @exclusivity(unchecked) var hookDepth = 0
    /// The extended attributes last read, with their stored JSON text: reading
    /// several keys of one object decodes it once.
    var lastExtendedValues: (text: String, values: [String: Value])?
    /// Fetched properties read so far, by object and property name: kept until the object is refreshed.
    var fetchedResults: [ObjectID: [String: [ManagedObject]]] = [:]
    /// Objects whose to-many members changed since the last save (their counts are checked at save).
    @exclusivity(unchecked) var relinked: [ManagedObject] = []
    /// Observers and live queries (see Observing/).
    @exclusivity(unchecked) var observers = ObserverList()
    /// Join-table rows added (true) or removed (false) since the last save.
    @exclusivity(unchecked) var pendingLinks: [JoinRow: Bool] = [:]
    /// What other contexts on the store saved, waiting to be merged.
    let inbox: ChangeInbox
    /// The store's `data_version` when this context last looked: a change
    /// means another connection (another store on the file, another process) wrote.
    var seenDataVersion: Int64?
    /// The last transaction of the store's history this context has merged
    /// (nil: the store keeps none): after another connection wrote, the
    /// context merges the transactions after it instead of comparing every object.
    var mergedHistory: Int64?

    /// The context's name, recorded with each save in the store's history
    /// (``/AmberStore/HistoryTransaction/contextName``); nil by default.
    public var name: String?
    /// Who saves, recorded with each save in the store's history
    /// (``/AmberStore/HistoryTransaction/author``): a user, an import job, a service; nil by default.
    public var transactionAuthor: String?

    /// Whether this context merges what other contexts save (on this store,
    /// or on the same file through other connections and processes) before
    /// each fetch, count, object lookup and save, as ``mergeSavedChanges()``
    /// does. Merging before a save keeps every value set here, so a value
    /// another context saved meanwhile no longer makes the save conflict;
    /// a row another writer changes between that merge and the write is
    /// settled the same way under the store's write lock (under
    /// ``/AmberStore/MergePolicy/error``: values set here over the stored row, a deletion
    /// here stands). A row deleted elsewhere that has changes here is still a conflict.
    public var automaticallyMergesChanges = false

    /// What a save does when another context or process changed or deleted
    /// an object's row since this context read it: fail listing every such
    /// conflict (``/AmberStore/MergePolicy/error``, the default) or settle it per key
    /// (see ``/AmberStore/MergePolicy``). Settling happens inside the save's
    /// transaction, against the row as it is then; afterwards the object
    /// holds exactly what was saved.
    public var mergePolicy = MergePolicy.error

    /// The undo and redo history of changes made here (see ``UndoStack``);
    /// nil, the default, records nothing.
    public var undoStack: UndoStack?

    /// A context over `store`.
    public init(store: Store) {
        self.store = store
        self.engine = store.engine
        self.registry = Array(repeating: ObjectTable(), count: store.model.entities.count)
        self.templates = store.model.entities.map(ObjectTemplate.init)
        self.inbox = engine.openInbox()
        self.seenDataVersion = try? engine.dataVersion()
        self.mergedHistory = (try? engine.lastHistorySequence()) ?? nil
    }

    deinit {
        // Objects the caller still holds outlive their context: they must refuse changes
        // and never touch it again. Every live object is pending or registered.
        // Held here, so none goes away while the others are told (the registry does not retain them).
        let live = pending + registry.flatMap(\.all)
        for object in live { object.leaveContext() }
        // Links hold objects strongly, and inverses make cycles: break them all.
        for object in live { object.links = nil }
    }

    /// The model of the store.
    public var model: Model { store.model }

    /// How `entity`'s objects start out.
    func template(for entity: Entity) -> ObjectTemplate { templates[entity.index] }

    // MARK: Inserting and deleting

    /// Inserts a new object of `entity`, with its attributes' default values.
    ///
    /// - Throws: ``/AmberValues/AmberError/unknownEntity(name:suggestion:)`` if `entity`
    ///   belongs to another model.
    public func insert(_ entity: Entity) throws(AmberError) -> ManagedObject {
        guard entity.index < model.entities.count, model.entities[entity.index] === entity else {
            throw .unknownEntity(name: "\(entity.name) (of another model)", suggestion: nil)
        }
        guard !entity.isAbstract else {
            throw .invalidValue(place: entity.name, expected: "an entity that is not abstract", given: "an abstract entity; insert one of its sub-entities")
        }
        let object = ManagedObject(entity: entity, objectID: .temporary(entity: entity.name, store: store.identifier),
                                   context: self, values: entity.initialValues, version: 0,
                                   codecState: templates[entity.index].insertCodecState)
        object.insertedFlag = true
        track(object)
        undoStack?.record(.existence(object, alive: false))
        if !model.code.isEmpty { tell([object]) { $0.awakeFromInsert($1) } }
        return object
    }

    /// Inserts a new object of the entity named `entityName`.
    public func insert(_ entityName: String) throws(AmberError) -> ManagedObject {
        try insert(model.entity(named: entityName))
    }

    /// Inserts one object of `entity` per row of `values`, which holds the
    /// values of `attributes` row after row (`values.count` is a multiple of
    /// `attributes.count`), and points each at its row's destinations in
    /// `related` (the inverses follow; with no attribute, `related` gives
    /// the rows). All or nothing: if any value or destination is refused,
    /// no object of the batch stays, and the error names the row.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidValue(place:expected:given:)`` naming
    ///   `Entity.attribute in row N` or `Entity.relationship in row N`, or an
    ///   attribute or relationship of another entity.
    @discardableResult
    public func insert(_ entity: Entity, setting attributes: [Attribute], to values: [Value], relating related: [RelationshipColumn] = [])
        throws(AmberError) -> [ManagedObject]
    {
        let rows: Int
        if attributes.isEmpty, let first = related.first, values.isEmpty {
            rows = first.rows.count
        } else {
            guard !attributes.isEmpty, values.count % attributes.count == 0 else {
                throw .invalidValue(place: "\(entity.name) rows", expected: "a multiple of \(attributes.count) values",
                                    given: "\(values.count) values")
            }
            rows = values.count / attributes.count
        }
        let relationships = try checked(related, of: entity, rows: rows)
        undoStack?.enter()
        defer { undoStack?.leave() }
        var objects: [ManagedObject] = []
        objects.reserveCapacity(rows)
        for row in 0..<rows {
            let object = try insert(entity)
            objects.append(object)
            for (column, attribute) in attributes.enumerated() {
                do throws(AmberError) {
                    try object.setValue(values[row * attributes.count + column], for: attribute)
                } catch {
                    dropBatch(objects)
                    throw Self.naming(row, in: error)
                }
            }
        }
        try link(objects, to: related, through: relationships)
        return objects
    }

    /// Drops a refused batch: none of `objects` stays (used by the
    /// column-wise insert in Context+Columns.swift). Usually the last ones
    /// tracked, unless model logic (`awakeFromInsert`) touched others meanwhile.
    func dropBatch(_ objects: [ManagedObject]) {
        undoStack?.forget(objects)
        if pending.count >= objects.count, zip(pending.suffix(objects.count), objects).allSatisfy({ $0 === $1 }) {
            pending.removeLast(objects.count)
        } else {
            let dropped = Set(objects.map(ObjectIdentifier.init))
            pending.removeAll { dropped.contains(ObjectIdentifier($0)) }
        }
        for dropped in objects { detach(dropped) }
    }

    /// Marks `object` for deletion at the next save (a new object is simply dropped).
    ///
    /// - Throws: ``/AmberValues/AmberError/objectUnavailable(_:reason:)`` if the object
    ///   belongs to another context or to none (its deletion was saved, or it
    ///   was rolled back). Deleting an object again before the save does nothing.
    public func delete(_ object: ManagedObject) throws(AmberError) {
        guard object.context === self else {
            let reason = object.owner !== self ? "the object belongs to another context"
                : object.deletedFlag ? ManagedObject.deletedAndSaved : ManagedObject.noContext
            throw .objectUnavailable(object.objectID, reason: reason)
        }
        if !model.code.isEmpty, !object.deletedFlag { try prepareForDeletion(of: object) }
        if object.entity.relationships.isEmpty {
            if !object.deletedFlag { markDeleted(object) }
            return
        }
        undoStack?.enter()
        defer { undoStack?.leave() }
        try deleteApplyingRules(object)
    }

    /// The one way an object leaves this context (deleted and saved, dropped
    /// after insert, rolled back, or refused in a batch): it is no longer
    /// registered or pending, and refuses changes from then on.
    private func detach(_ object: ManagedObject) {
        if let pk = object.objectID.primaryKey, registry[object.entity.rootIndex].object(for: pk) === object {
            registry[object.entity.rootIndex].removeValue(for: pk)
        }
        object.leaveContext()
        forgetFetchedProperties(of: object.objectID)
        // Its loaded members hold objects strongly, and inverses make cycles: a detached object would keep them alive.
        object.links = nil
    }

    /// How many saved objects the context holds (each once); unchanged objects
    /// nobody else holds are released and not counted.
    public var registeredObjectCount: Int { registry.reduce(0) { $0 + $1.count } }

    /// Called by a registered object's deinit.
    func unregister(_ object: ManagedObject, primaryKey: Int64) {
        registry[object.entity.rootIndex].remove(object, for: primaryKey)
        forgetFetchedProperties(of: object.objectID)
    }

    /// Drops what `id`'s fetched properties read. The results are released
    /// after the dictionary is changed (their own release may come back here).
    func forgetFetchedProperties(of id: ObjectID) {
        guard !fetchedResults.isEmpty else { return }
        let dropped = fetchedResults.removeValue(forKey: id)
        withExtendedLifetime(dropped) {}
    }

    /// The saved object of `entity` with primary key `key`, if registered here.
    func registered(_ entity: Entity, _ key: Int64) -> ManagedObject? { registry[entity.rootIndex].object(for: key) }

    /// Registers a saved object (a fault made for a relationship).
    func register(_ object: ManagedObject, _ key: Int64) { registry[object.entity.rootIndex].insert(object, for: key) }

    /// Objects with pending changes, in first-touch order.
    var pendingObjects: [ManagedObject] { pending }

    /// The saved objects registered in `table` (a root entity's index), with their keys.
    func registeredObjects(inTable table: Int) -> [ManagedObject] { registry[table].all }

    /// An object whose row another connection deleted leaves the context
    /// (pending or not), as one deleted and saved here does.
    func dropDeletedElsewhere(_ object: ManagedObject) {
        if object.isPending { pending.removeAll { $0 === object } }
        detach(object)
    }

    func track(_ object: ManagedObject) {
        guard !object.isPending else { return }
        object.isPending = true
        pending.append(object)
    }

    // MARK: Change tracking

    /// Whether a save would write anything.
    public var hasChanges: Bool { pending.contains { $0.hasChanges } }
    /// New objects not saved yet, in insertion order.
    public var insertedObjects: [ManagedObject] { pending.filter(\.isInserted) }
    /// Saved objects with changed values, in the order they were first changed.
    public var updatedObjects: [ManagedObject] { pending.filter(\.isUpdated) }
    /// Saved objects marked for deletion.
    public var deletedObjects: [ManagedObject] { pending.filter(\.isDeleted) }

    /// Discards every pending change: new objects leave the context, changed
    /// ones get their committed values back, deleted ones are kept.
    public func rollback() {
        // Objects whose values go: new ones, and saved ones with changed values (not those only marked deleted).
        let dropped = model.code.isEmpty ? [] : pending.filter { $0.insertedFlag || $0.committed != nil }
        defer { tell(dropped) { $0.didTurnIntoFault($1) } }
        undoStack?.removeAll()
        generation += 1
        provisional.removeAll()
        clearRelinked()
        pendingLinks.removeAll()
        for object in pending {
            object.isPending = false
            object.deletedFlag = false
            object.edits &+= 1
            if object.insertedFlag {
                detach(object)
            } else {
                if let committed = object.committed { object.values = committed }
                object.committed = nil
                object.changedSlots.removeAll()
                object.resetCodecState()
            }
        }
        pending.removeAll()
    }

    // MARK: Fetching

    /// The objects matching `request`, as this context sees them: saved
    /// objects and the changes made here but not saved yet (unless the
    /// request's ``/AmberModel/FetchRequest/includesPendingChanges`` is false). New objects that
    /// match are included; changed objects are judged and sorted by their
    /// current values; deleted ones are left out; the limit and offset
    /// apply to the whole. Objects already in this context are returned as
    /// they are here. Objects equal on every sort key come in primary-key
    /// order, new ones after saved ones in the order they were inserted.
    ///
    /// With no unsaved change of the entity (or, for a predicate or sort
    /// that follows relationships, of the entities it reaches), the store
    /// answers alone. Otherwise the changed objects are judged in memory,
    /// with the answers the store would give them; a predicate or sort that
    /// follows relationships while an object it reaches (or a
    /// relationship's members) changed reads every object of the entity.
    ///
    /// The objects of one fetch read their values from the fetch's shared,
    /// compact rows until each first changes; the rows are freed with the
    /// last object that reads them: keeping a few objects of a very large
    /// fetch keeps all its rows (16 bytes per stored value, plus the bytes
    /// of its text and blobs).
    ///
    /// Key paths in `prefetchKeyPaths` are read with the objects, one query
    /// per relationship, so following them later reads nothing more.
    ///
    /// - Throws: an unknown entity, attribute or relationship, a predicate that does not
    ///   fit the entity (with its position), a stored value another program
    ///   wrote that would read back changed (``/AmberValues/AmberError/invalidValue(place:expected:given:)``
    ///   naming the attribute), or a store error.
    public func fetch(_ request: FetchRequest) throws(AmberError) -> [ManagedObject] {
        if automaticallyMergesChanges { try mergeSavedChanges() }
        return try currentObjects(request, of: try model.entity(named: request.entityName))
    }

    /// ``fetch(_:)`` without merging first.
    func currentObjects(_ request: FetchRequest, of entity: Entity) throws(AmberError) -> [ManagedObject] {
        if request.includesPendingChanges, let changes = pendingChanges(affecting: request, of: entity) {
            return try fetch(request, of: entity, including: changes)
        }
        return try storedObjects(request, of: entity)
    }

    /// The objects the store finds for `request`: those registered here as
    /// they are here, less those deleted here.
    func storedObjects(_ request: FetchRequest, of entity: Entity) throws(AmberError) -> [ManagedObject] {
        let results = objects(from: try engine.fetchRows(of: entity, matching: request), of: entity)
        if !request.prefetchKeyPaths.isEmpty {
            let everyObject = request.predicate == nil && request.limit == nil && request.offset == 0 && request.includesSubentities
            try prefetch(request.prefetchKeyPaths, from: results, of: entity, everyObject: everyObject)
        }
        return results
    }

    /// The objects of fetched `rows`: those registered here as they are here
    /// (a fault gets its row), the rest made and registered; deleted ones left out.
    /// Each row's object is of the row's own entity (`entity` or one that inherits from it).
    func objects(from rows: FetchedRows, of entity: Entity) -> [ManagedObject] {
        var results: [ManagedObject] = []
        results.reserveCapacity(rows.count)
        let root = entity.rootIndex, storeID = store.identifier
        // Objects reading saved values for the first time, told once the fetch is done (only when the model has logic).
        var awakened: [ManagedObject] = []
        let awakes = !model.code.isEmpty
        defer { if !awakened.isEmpty { tell(awakened) { $0.awakeFromFetch($1) } } }
        guard entity.subentityIndices.count > 1 else {
            // One entity: everything a new object shares is worked out once, not per row.
            let batch = FetchedBatch(rows: rows, entity: entity, template: templates[entity.index])
            let codecState = templates[entity.index].fetchCodecState, name = entity.name, eager = !entity.eagerAttributes.isEmpty
            let keys = rows.primaryKeys, versions = rows.versions
            // While only this loop's own objects are registered (a fresh context), no row can have one
            // yet, as a fetch's keys are distinct. Counted, not assumed: a transformer decoding eagerly
            // may call back into this context and fetch.
            let fresh = registry[root].count == 0
            var made = 0
            registry[root].reserve(keys.count)
            for index in keys.indices {
                let pk = keys[index]
                if !fresh || registry[root].count != made, let existing = registry[root].object(for: pk) {
                    let wasFault = existing.isFault
                    if let kept = registered(existing, batch: batch, index: index) { results.append(kept) }
                    if awakes, wasFault { awakened.append(existing) }
                    continue
                }
                let object = ManagedObject(entity: entity, objectID: ObjectID(entityName: name, store: storeID, key: .permanent(pk)),
                                           context: self, batch: batch, index: index, version: versions[index], codecState: codecState)
                if eager { object.decodeEagerAttributes() }
                registry[root].insert(object, for: pk)
                made += 1
                results.append(object)
                if awakes { awakened.append(object) }
            }
            return results
        }
        // One batch per entity among the rows: a batch reads and decodes by its entity's slots.
        var batches = [FetchedBatch?](repeating: nil, count: model.entities.count)
        for index in 0..<rows.count {
            let kind = model.entities[rows.entityIndex(index)]
            let batch: FetchedBatch
            if let made = batches[kind.index] {
                batch = made
            } else {
                batch = FetchedBatch(rows: rows, entity: kind, template: templates[kind.index])
                batches[kind.index] = batch
            }
            let pk = rows.primaryKey(index)
            if let existing = registry[root].object(for: pk) {
                let wasFault = existing.isFault
                if let kept = registered(existing, batch: batch, index: index) { results.append(kept) }
                if awakes, wasFault { awakened.append(existing) }
                continue
            }
            let object = ManagedObject(entity: kind, objectID: ObjectID(entityName: kind.name, store: storeID, key: .permanent(pk)),
                                       context: self, batch: batch, index: index, version: rows.version(index),
                                       codecState: templates[kind.index].fetchCodecState)
            if !kind.eagerAttributes.isEmpty { object.decodeEagerAttributes() }
            registry[root].insert(object, for: pk)
            results.append(object)
            if awakes { awakened.append(object) }
        }
        return results
    }

    /// A fetched row's object already registered here, as it is here: a
    /// fault gets the row, an unchanged object saved since it was read takes
    /// it; nil if it is deleted here.
    private func registered(_ existing: ManagedObject, batch: FetchedBatch, index: Int) -> ManagedObject? {
        if existing.isFault {
            existing.fill(batch, index: index)
        } else if existing.version != batch.rows.version(index), existing.committed == nil, !existing.deletedFlag {
            // Saved since it was read, and unchanged here: it takes the row as it is now.
            existing.refresh(from: batch, index: index, keepingChanges: false)
            generation += 1
        }
        return existing.deletedFlag ? nil : existing
    }

    /// Fetches with predicate text: `try context.fetch("Book", where: "price < %@", 10)`.
    public func fetch(_ entityName: String, where format: String? = nil, _ arguments: Value...,
                      sortedBy sortKeys: [SortKey] = [], limit: Int? = nil, offset: Int = 0) throws(AmberError) -> [ManagedObject]
    {
        let predicate = try format.map { (text) throws(AmberError) in try FetchPredicate(text, arguments: arguments) }
        return try fetch(FetchRequest(entityName, predicate: predicate, sortedBy: sortKeys, limit: limit, offset: offset))
    }

    /// How many objects `request` would fetch: with the changes made here
    /// unless its ``/AmberModel/FetchRequest/includesPendingChanges`` is false (then saved
    /// objects, less those deleted here). See ``fetch(_:)``.
    public func count(_ request: FetchRequest) throws(AmberError) -> Int {
        if automaticallyMergesChanges { try mergeSavedChanges() }
        let entity = try model.entity(named: request.entityName)
        var unsorted = request
        unsorted.sortKeys = []  // a count's answer does not depend on the order
        if request.includesPendingChanges, let changes = pendingChanges(affecting: unsorted, of: entity) {
            return try count(unsorted, of: entity, including: changes)
        }
        let deletedHere = Set(pending.lazy.filter { (request.includesSubentities ? $0.entity.isKind(of: entity) : $0.entity === entity) && $0.isDeleted }
            .compactMap(\.objectID.primaryKey))
        if deletedHere.isEmpty { return try engine.count(of: entity, matching: request) }
        return try engine.primaryKeys(of: entity, matching: request).count { !deletedHere.contains($0) }
    }

    /// The object with `id`: the one registered here, or else fetched from the store.
    ///
    /// - Throws: ``/AmberValues/AmberError/objectNotFound(_:)`` if no such object exists
    ///   (a temporary ID of another context, or a deleted row).
    public func object(with id: ObjectID) throws(AmberError) -> ManagedObject {
        if automaticallyMergesChanges { try mergeSavedChanges() }
        if let found = pending.first(where: { $0.objectID == id }) { return found }
        guard id.storeIdentifier == store.identifier, let pk = id.primaryKey else { throw .objectNotFound(id) }
        let entity = try model.entity(named: id.entityName)
        if let registered = registry[entity.rootIndex].object(for: pk) { return registered }
        let request = try FetchRequest(entity.name, where: "SELF == %@", .objectID(id))
        guard let object = try storedObjects(request, of: entity).first else { throw .objectNotFound(id) }
        return object
    }

    // MARK: Saving

    /// Writes every pending change in one SQLite transaction.
    ///
    /// First every inserted and changed object is validated and its
    /// transformed values are encoded (each transformer's result checked
    /// against the class it declares); then rows are
    /// inserted, updated and deleted. A row that another context or process
    /// changed or deleted since it was read is a conflict, which
    /// ``mergePolicy`` settles or reports. If anything fails, the
    /// transaction is rolled back, the context keeps every pending change,
    /// and the error lists every problem (a conflict with the stored and
    /// the local values): fix the values, or refresh, and save again.
    /// When validation finds problems and the model has uniqueness
    /// constraints, the rows are still written, in a transaction that is
    /// rolled back, so the error lists the broken constraints too (unless
    /// another writer holds the store: the trial does not wait for it).
    ///
    /// - Throws: ``/AmberValues/AmberError/saveFailed(_:)``; ``/AmberValues/AmberError/busy(path:timeout:)``
    ///   if another writer held the store past the busy timeout.
    public func save() throws(AmberError) {
        if hookDepth > 0 {
            throw .hookFailed(object: nil, hook: "save", message: "a context cannot save while it runs a hook of model logic (save after it returns)")
        }
        // Observers that fail during the merge before the save do not stop it: they are reported after it.
        var failures: [String] = []
        if automaticallyMergesChanges {
            do {
                try mergeSavedChanges()
            } catch {
                guard case .observerFailed(_, let merged) = error else { throw error }
                failures = merged.map { "while merging before the save: \($0)" }
            }
        }
        if !model.code.isEmpty { try runWillSave() }
        var changes = ChangeSet<ManagedObject>()
        changes.settlesAsAMerge = automaticallyMergesChanges
        var problems: [SaveProblem] = []
        let hasLogic = !model.code.isEmpty
        // One pass over the pending objects for every per-object step: a pass per step missed the cache per object each time.
        for object in pending {
            if object.insertedFlag {
                guard !object.deletedFlag else { continue }
                let linked = object.isLinkTarget && object.objectID.primaryKey == nil
                changes.add(insert: object, table: object.entity.rootIndex, provisionalKey: linked ? object.temporaryKey : nil)
            } else if object.deletedFlag {
                changes.deletes.append(object)
                if hasLogic, let entry = model.logicEntry(for: object.entity) { problems += try validationProblems(of: object, .delete, entry) }
                continue
            } else if object.isUpdated {
                changes.updates.append(object)
            } else {
                continue
            }
            let entity = object.entity
            // Encode first: a shadow attribute's storage gets its value here, and rules on it see the new bytes.
            if !entity.codedAttributes.isEmpty { problems += object.encodePending() }
            if !entity.checkedAttributes.isEmpty { problems += Validation.problems(in: object) }
            if !entity.toOneRelationships.isEmpty { problems += toOneProblems(of: object) }
            if hasLogic, let entry = model.logicEntry(for: entity) {
                problems += try validationProblems(of: object, object.insertedFlag ? .insert : .update, entry)
            }
        }
        if model.hasRelationships {
            problems += try relationshipProblems(changes)
            if problems.isEmpty {
                let targets = provisional.count
                try addLinks(to: &changes)
                // Ordered positions can name new objects nothing pointed at before.
                if provisional.count != targets { changes.findLinkTargets { $0.isLinkTarget ? $0.temporaryKey : nil } }
            }
        }
        if hasLogic { try checkValidatorsChangedNothing(changes) }
        if !problems.isEmpty {
            // One save lists every problem: the constraints SQLite checks too, not only after the rest are fixed.
            if model.hasUniquenessConstraints { problems += engine.uniquenessProblems(writing: changes, policy: mergePolicy) }
            throw .saveFailed(problems)
        }
        let written = try engine.write(changes, policy: mergePolicy, from: inbox,
                                       origin: writeOrigin)
        var change = isObserved ? savedChange(changes, written) : nil
        commit(changes, written)
        // Written whatever follows: the objects hear of it even if reading derived values or an observer fails.
        defer {
            if hasLogic {
                tell(changes.inserts + changes.updates + changes.deletes) { $0.didSave($1) }
                tell(changes.deletes) { $0.didTurnIntoFault($1) }
            }
        }
        if !written.derived.isEmpty { try readDerivedValues(written.derived, into: &change) }
        do {
            if let change { try notify(change) }
        } catch {
            guard case .observerFailed(_, let saved) = error else { throw error }
            failures += saved
        }
        if !failures.isEmpty { throw .observerFailed(event: ChangeReport.Event.saved.rawValue, failures: failures) }
    }

    /// After COMMIT: the new state becomes the committed state, in one pass
    /// over the pending objects.
    private func commit(_ changes: ChangeSet<ManagedObject>, _ written: WrittenKeys) {
        if changes.inserts.count > 1024 {
            for index in registry.indices { registry[index].reserve(changes.inserts.count) }
        }
        for object in changes.updates {
            switch written.resolved[ObjectIdentifier(object)] {
            case nil: object.version += 1
            case .merged(let stored, let kept, let extended)?:
                object.merge(from: FetchedBatch(rows: stored, entity: object.entity, template: template(for: object.entity)), index: 0) { kept[$0] }
                if let extended, let slot = object.entity.extraSlot { object.values[slot] = extended }
                object.version += 1
            case .writtenAgain(let version)?: object.version = version
            case .deletedInStore?: object.deletedFlag = true
            }
        }
        // Settled conflicts may have moved to-one keys: to-many relationships read again.
        if !written.resolved.isEmpty { generation += 1 }
        var inserted = 0
        for object in pending {
            object.isPending = false
            object.committed = nil
            object.changedSlots.removeAll()
            if object.insertedFlag {
                // Dropped new objects (inserted, then deleted) leave the context too.
                guard !object.deletedFlag else {
                    detach(object)
                    continue
                }
                let pk = written.keys[inserted]
                inserted += 1
                // What its fetched properties read stays its own under its new ID.
                let fetched = fetchedResults.isEmpty ? nil : fetchedResults.removeValue(forKey: object.objectID)
                object.objectID = ObjectID(entityName: object.entity.name, store: store.identifier, key: .permanent(pk))
                if let fetched { fetchedResults[object.objectID] = fetched }
                object.insertedFlag = false
                object.version = 1
                registry[object.entity.rootIndex].insert(object, for: pk)
            } else if object.deletedFlag {
                detach(object)
                continue
            }
            if !written.provisional.isEmpty { resolveProvisionalKeys(of: object, written.provisional) }
        }
        pending.removeAll(keepingCapacity: false)
        provisional.removeAll()
        clearRelinked()
        pendingLinks.removeAll()
    }
}
