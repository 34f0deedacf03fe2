import AmberModel
import AmberStore
import AmberValues

/// The unsaved changes a fetch must judge in memory.
struct PendingChanges {
    /// The request's pending objects (inserted, changed or deleted) of its entity, in first-touch order.
    var objects: [ManagedObject]
    /// Whether every object of the entity must be judged: the predicate or
    /// a sort key follows relationships, and an object they reach changed
    /// (or links changed) in the context.
    var everyObject: Bool
}

extension Context {
    /// What `request` must judge in memory; nil when the store's answer is the context's.
    func pendingChanges(affecting request: FetchRequest, of entity: Entity) -> PendingChanges? {
        guard !pending.isEmpty || !relinked.isEmpty else { return nil }
        let objects = pending.filter { object in
            (request.includesSubentities ? object.entity.isKind(of: entity) : object.entity === entity) && object.hasChanges
        }
        var everyObject = false
        if Self.followsRelationships(request, entity) {
            if !pendingLinks.isEmpty || !relinked.isEmpty {
                everyObject = true
            } else {
                // Only a change to an object the key paths reach can change a saved object's answer.
                let reached = Self.reachedTables(of: request, entity, model)
                everyObject = pending.contains { object in (reached?.contains(object.entity.rootIndex) ?? true) && object.hasChanges }
            }
        }
        return objects.isEmpty && !everyObject ? nil : PendingChanges(objects: objects, everyObject: everyObject)
    }

    /// Whether `request`'s predicate or sort keys read other objects than the one judged.
    private static func followsRelationships(_ request: FetchRequest, _ entity: Entity) -> Bool {
        let paths = (request.predicate?.keyPaths ?? []) + request.sortKeys.map(\.key)
        return paths.contains { path in
            path.contains(".") || entity.relationships.contains { $0.name == path && $0.isToMany }
        }
    }

    /// The tables (root entities' indices) of the objects `request`'s key
    /// paths reach through relationships; nil when that cannot be told (a
    /// subquery reads its members' own key paths).
    private static func reachedTables(of request: FetchRequest, _ entity: Entity, _ model: Model) -> Set<Int>? {
        if request.predicate?.hasSubquery == true { return nil }
        return Set(relationshipWalks(of: request, entity, model).flatMap { $0.reached.map(\.rootIndex) })
    }

    /// The relationship key paths `request`'s predicate and sort keys follow (`author`, `books`, `author.publisher`).
    private static func relationshipPaths(of request: FetchRequest, _ entity: Entity, _ model: Model) -> [String] {
        Array(Set(relationshipWalks(of: request, entity, model).compactMap { $0.followed.isEmpty ? nil : $0.followed.joined(separator: ".") }))
            .sorted()
    }

    /// For each key path of `request`'s predicate and sort keys, the
    /// relationships it follows from `entity` (by name) and the entities they reach.
    private static func relationshipWalks(of request: FetchRequest, _ entity: Entity, _ model: Model)
        -> [(followed: [String], reached: [Entity])]
    {
        ((request.predicate?.keyPaths ?? []) + request.sortKeys.map(\.key)).map { path in
            var current = entity, followed: [String] = [], reached: [Entity] = []
            for name in path.split(separator: ".").map(String.init) {
                guard let relationship = current.relationships.first(where: { $0.name == name }) else { break }
                followed.append(name)
                current = model.destination(of: relationship)
                reached.append(current)
            }
            return (followed, reached)
        }
    }

    /// ``fetch(_:)`` with `changes` judged in memory.
    func fetch(_ request: FetchRequest, of entity: Entity, including changes: PendingChanges) throws(AmberError) -> [ManagedObject] {
        try request.checkWindow()
        let predicate = try request.predicate.map { (predicate) throws(AmberError) in try ObjectPredicate(predicate, entity: entity, model: model) }
        let order = try ObjectOrder(request.sortKeys, entity: entity, model: model)
        var merged: [ManagedObject]
        var stored = request
        stored.includesPendingChanges = false
        stored.offset = 0
        if changes.everyObject {
            (stored.predicate, stored.sortKeys, stored.limit) = (nil, [], nil)
            // Every object's related objects are read: one query per relationship, not per object.
            stored.prefetchKeyPaths += Self.relationshipPaths(of: request, entity, model)
            let candidates = try storedObjects(stored, of: entity) + changes.objects.filter(\.isInserted)
            merged = try order.sorted(try matching(candidates, predicate))
        } else {
            // Each changed saved object may take a stored result's place: the store finds that many more.
            let replaced = changes.objects.count { !$0.isInserted }
            stored.limit = request.limit.flatMap { limit in
                let (extra, first) = request.offset.addingReportingOverflow(replaced)
                let (wanted, second) = limit.addingReportingOverflow(extra)
                return first || second ? nil : wanted  // beyond Int.max: no limit
            }
            let judged = Set(changes.objects.map(ObjectIdentifier.init))
            let found = try storedObjects(stored, of: entity).filter { !judged.contains(ObjectIdentifier($0)) }
            let current = try order.sorted(try matching(changes.objects.filter { !$0.isDeleted }, predicate))
            merged = try merge(current, into: found, by: order)
        }
        return Array(merged[request.window(over: merged.count)])
    }

    /// ``count(_:)`` with `changes` judged in memory.
    func count(_ request: FetchRequest, of entity: Entity, including changes: PendingChanges) throws(AmberError) -> Int {
        if changes.everyObject { return try fetch(request, of: entity, including: changes).count }
        try request.checkWindow()
        var stored = request
        (stored.includesPendingChanges, stored.limit, stored.offset, stored.sortKeys) = (false, nil, 0, [])
        let predicate = try request.predicate.map { (predicate) throws(AmberError) in try ObjectPredicate(predicate, entity: entity, model: model) }
        // The store counts saved rows as saved; those changed here are judged below instead.
        var found = try engine.count(of: entity, matching: stored)
        let judged = changes.objects.compactMap(\.objectID.primaryKey)
        if !judged.isEmpty {
            found -= try engine.sortedKeys(try engine.sortedKeysQuery(of: entity, matching: stored), among: judged).count
        }
        return request.window(over: found + (try matching(changes.objects.filter { !$0.isDeleted }, predicate)).count).count
    }

    /// The objects of `candidates` that `predicate` matches (all of them without one).
    private func matching(_ candidates: [ManagedObject], _ predicate: ObjectPredicate?) throws(AmberError) -> [ManagedObject] {
        guard let predicate else { return candidates }
        var matched: [ManagedObject] = []
        for object in candidates where try predicate.matches(object) { matched.append(object) }
        return matched
    }

    /// `sorted` placed among `found` (in the store's order) by `order`:
    /// each by binary search, so the store's results are read a few times each, not sorted again.
    private func merge(_ sorted: [ManagedObject], into found: [ManagedObject], by order: ObjectOrder) throws(AmberError) -> [ManagedObject] {
        guard !sorted.isEmpty else { return found }
        var merged: [ManagedObject] = []
        merged.reserveCapacity(found.count + sorted.count)
        var start = 0
        for object in sorted {
            let values = try order.values(of: object)
            var low = start, high = found.count
            while low < high {
                let middle = (low + high) / 2
                if order.precedes(object, values, found[middle], try order.values(of: found[middle])) {
                    high = middle
                } else {
                    low = middle + 1
                }
            }
            merged += found[start..<low]
            merged.append(object)
            start = low
        }
        merged += found[start...]
        return merged
    }

    /// `objects` (of any entities of this context's model) that `predicate`
    /// matches on their current values, sorted by `sortKeys` (in their
    /// order otherwise): what a fetch with pending changes does to the
    /// objects it judges, for any list. Transient attributes may be tested and sorted by.
    ///
    /// - Throws: what a fetch with the same predicate and sort keys throws
    ///   for an object's entity (an unknown key path, a comparison that does
    ///   not fit its types, with its position); a value that cannot be read;
    ///   ``/AmberValues/AmberError/objectUnavailable(_:reason:)`` for an object of another context.
    public func filter(_ objects: [ManagedObject], matching predicate: FetchPredicate?, sortedBy sortKeys: [SortKey] = [])
        throws(AmberError) -> [ManagedObject]
    {
        var tests: [Int: (ObjectPredicate?, ObjectOrder)] = [:]
        var matched: [ManagedObject] = []
        for object in objects {
            guard object.context === self else {
                throw .objectUnavailable(object.objectID, reason: "it belongs to another context, or to none")
            }
            let entity = object.entity
            if tests[entity.index] == nil {
                tests[entity.index] = (try predicate.map { (predicate) throws(AmberError) in
                    try ObjectPredicate(predicate, entity: entity, model: model, transients: true)
                }, try ObjectOrder(sortKeys, entity: entity, model: model, transients: true))
            }
            if let test = tests[entity.index]?.0, try !test.matches(object) { continue }
            matched.append(object)
        }
        guard !sortKeys.isEmpty, let first = matched.first, let order = tests[first.entity.index]?.1 else { return matched }
        // Each object's values are read through its own entity's keys; the directions are the same for all.
        var decorated: [(object: ManagedObject, values: [ComparedValue])] = []
        for object in matched {
            decorated.append((object, try tests[object.entity.index]?.1.values(of: object) ?? []))
        }
        decorated.sort { order.precedes($0.object, $0.values, $1.object, $1.values) }
        return decorated.map(\.object)
    }
}
