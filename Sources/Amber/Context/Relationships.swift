import AmberModel
import AmberStore
import AmberValues

/// An object's links to the objects it reached, by relationship index, valid
/// for one context generation (a rollback starts a new one): the loaded
/// members of its to-many relationships, and the destinations of its to-ones
/// (kept while the slot still holds their key). Holding them keeps a
/// prefetched or once-faulted graph alive as long as the objects that reach
/// it; the context clears every object's links when it goes, which breaks
/// the cycles inverses make.
final class Links {
    let generation: Int
    /// How many relationships the object's entity has.
    private let count: Int
    /// By relationship index (nil: not loaded / not reached); each list is
    /// made on its first use, so an object that only reaches its to-ones pays
    /// for one array, not two.
    private var memberLists: [[ManagedObject]?] = []
    /// By relationship index, the members of a long list as a set, made when
    /// one is first looked for there: adding one member to thousands is then
    /// not a walk through them all.
    private var memberSets: [Set<ObjectIdentifier>?] = []
    private var destinationObjects: [ManagedObject?] = []
    /// Lists this long or longer are looked through with a set.
    private static let setThreshold = 32

    init(generation: Int, relationships: Int) {
        self.generation = generation
        self.count = relationships
    }

    /// The loaded members of relationship `index`, if loaded.
    func members(_ index: Int) -> [ManagedObject]? { index < memberLists.count ? memberLists[index] : nil }

    func setMembers(_ members: [ManagedObject]?, _ index: Int) {
        if memberLists.isEmpty { memberLists = Array(repeating: nil, count: count) }
        memberLists[index] = members
        if index < memberSets.count { memberSets[index] = nil }
    }

    /// Whether `member` is among the loaded members of relationship `index` (false when not loaded).
    func contains(_ member: ManagedObject, _ index: Int) -> Bool {
        guard index < memberLists.count, let list = memberLists[index] else { return false }
        guard list.count >= Self.setThreshold else { return list.contains { $0 === member } }
        if memberSets.isEmpty { memberSets = Array(repeating: nil, count: count) }
        if memberSets[index] == nil { memberSets[index] = Set(list.map(ObjectIdentifier.init)) }
        return memberSets[index]?.contains(ObjectIdentifier(member)) == true
    }

    /// Adds `member` at the end of loaded relationship `index` (nothing when not loaded or a member already).
    func append(_ member: ManagedObject, _ index: Int) {
        guard index < memberLists.count, memberLists[index] != nil, !contains(member, index) else { return }
        memberLists[index]?.append(member)
        if index < memberSets.count { memberSets[index]?.insert(ObjectIdentifier(member)) }
    }

    /// Takes `member` out of loaded relationship `index`, keeping the others' order.
    func remove(_ member: ManagedObject, _ index: Int) {
        guard index < memberLists.count, let position = memberLists[index]?.firstIndex(where: { $0 === member }) else { return }
        memberLists[index]?.remove(at: position)
        if index < memberSets.count { memberSets[index]?.remove(ObjectIdentifier(member)) }
    }

    /// The destination to-one `index` reached, if any.
    func destination(_ index: Int) -> ManagedObject? { index < destinationObjects.count ? destinationObjects[index] : nil }

    func setDestination(_ destination: ManagedObject?, _ index: Int) {
        if destinationObjects.isEmpty { destinationObjects = Array(repeating: nil, count: count) }
        destinationObjects[index] = destination
    }
}

// MARK: - Reading and changing relationships

extension ManagedObject {
    /// The object to-one `relationship` points at, or nil. A saved object not
    /// read yet comes back as a fault: its row is read on first use.
    ///
    /// - Throws: ``/AmberValues/AmberError/foreignRelationship(relationship:object:)`` for
    ///   a relationship of another entity; ``/AmberValues/AmberError/invalidValue(place:expected:given:)``
    ///   for a to-many relationship.
    public func object(for relationship: Relationship) throws(AmberError) -> ManagedObject? {
        let slot = try toOneSlot(of: relationship)
        if isFault { try fire() }
        return try owner.linkedDestination(of: self, relationship, slot)
    }

    /// The object the to-one relationship named `key` points at.
    public func object(forKey key: String) throws(AmberError) -> ManagedObject? {
        try object(for: entity.relationship(named: key))
    }

    /// Points to-one `relationship` at `destination` (nil: at nothing). The
    /// inverse follows at once: the object leaves its old destination's
    /// inverse and joins the new one's (for a one-to-one, the new
    /// destination's old partner lets go of it).
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidValue(place:expected:given:)`` naming the
    ///   relationship for an object of the wrong entity, of another context,
    ///   or deleted (nothing changes); ``/AmberValues/AmberError/objectUnavailable(_:reason:)``
    ///   if this object is deleted.
    public func setObject(_ destination: ManagedObject?, for relationship: Relationship) throws(AmberError) {
        let slot = try toOneSlot(of: relationship)
        try checkChangeable()
        if let destination { try owner.check(destination, for: relationship) }
        if isFault { try fire() }
        let old = try owner.destination(of: slotValue(slot), through: relationship)
        guard old !== destination else { return }
        owner.undoStack?.enter()
        defer { owner.undoStack?.leave() }
        try owner.link(self, to: destination, replacing: old, through: relationship, slot: slot)
    }

    /// Points the to-one relationship named `key` at `destination`.
    public func setObject(_ destination: ManagedObject?, forKey key: String) throws(AmberError) {
        try setObject(destination, for: entity.relationship(named: key))
    }

    /// The members of to-many `relationship`, as this context sees them
    /// (pending changes included, deleted objects left out). The first read
    /// loads them in one query; later reads and changes use what was loaded.
    public func objects(for relationship: Relationship) throws(AmberError) -> [ManagedObject] {
        let relationship = try checkToMany(relationship)
        return try owner.members(of: self, relationship)
    }

    /// The members of the to-many relationship named `key`.
    public func objects(forKey key: String) throws(AmberError) -> [ManagedObject] {
        try objects(for: entity.relationship(named: key))
    }

    /// How many members to-many `relationship` has, without loading them if
    /// they are not loaded yet (one `count(*)`, corrected by pending changes).
    public func count(of relationship: Relationship) throws(AmberError) -> Int {
        let relationship = try checkToMany(relationship)
        return try owner.memberCount(of: self, relationship)
    }

    /// Adds `member` to to-many `relationship` (nothing if it is one already);
    /// the inverse follows.
    ///
    /// - Throws: as ``setObject(_:for:)`` does.
    public func add(_ member: ManagedObject, to relationship: Relationship) throws(AmberError) {
        let relationship = try checkToMany(relationship)
        try checkChangeable()
        try owner.check(member, for: relationship)
        owner.undoStack?.enter()
        defer { owner.undoStack?.leave() }
        try owner.addLink(from: self, to: member, through: relationship)
    }

    /// Removes `member` from to-many `relationship` (nothing if it is not one); the inverse follows.
    public func remove(_ member: ManagedObject, from relationship: Relationship) throws(AmberError) {
        let relationship = try checkToMany(relationship)
        try checkChangeable()
        try owner.check(member, for: relationship)
        owner.undoStack?.enter()
        defer { owner.undoStack?.leave() }
        try owner.removeLink(from: self, to: member, through: relationship)
    }

    /// Makes `members` the members of to-many `relationship`, in this order
    /// for an ordered one: those not listed leave, the others join, and the
    /// inverses follow. All or nothing: a member of the wrong entity, of
    /// another context, deleted or listed twice changes nothing.
    public func setObjects(_ members: [ManagedObject], for relationship: Relationship) throws(AmberError) {
        let relationship = try checkToMany(relationship)
        try checkChangeable()
        var wanted = Set<ObjectIdentifier>()
        for member in members {
            try owner.check(member, for: relationship)
            guard wanted.insert(ObjectIdentifier(member)).inserted else {
                throw .invalidValue(place: relationship.description, expected: "each object once", given: "\(member.objectID) twice")
            }
        }
        owner.undoStack?.enter()
        defer { owner.undoStack?.leave() }
        for old in try owner.members(of: self, relationship) where !wanted.contains(ObjectIdentifier(old)) {
            try owner.removeLink(from: self, to: old, through: relationship)
        }
        for member in members { try owner.addLink(from: self, to: member, through: relationship) }
        if relationship.isOrdered { owner.reorder(self, relationship, members) }
    }

    /// Makes the members of the to-many relationship named `key` `members`.
    public func setObjects(_ members: [ManagedObject], forKey key: String) throws(AmberError) {
        try setObjects(members, for: entity.relationship(named: key))
    }

    /// This object's slot for to-one `relationship` of its entity or of one it
    /// inherits from (nil for others and for to-manys). Hidden slots follow
    /// all of an entity's attributes, so an inherited to-one's slot moves in
    /// an entity that adds attributes: never apply a handle's slot to an object of another entity.
    func slot(of relationship: Relationship) -> Int? { entity.own(relationship)?.slot }

    /// The slot of to-one `relationship`, which must be this entity's.
    private func toOneSlot(of relationship: Relationship) throws(AmberError) -> Int {
        guard let relationship = entity.own(relationship) else {
            throw .foreignRelationship(relationship: relationship.description, object: description)
        }
        try checkInContext()
        guard let slot = relationship.slot else {
            throw .invalidValue(place: relationship.description, expected: "a to-one relationship", given: "a to-many relationship")
        }
        return slot
    }

    /// This entity's handle for to-many `relationship` (its own, or inherited).
    private func checkToMany(_ relationship: Relationship) throws(AmberError) -> Relationship {
        guard let relationship = entity.own(relationship) else {
            throw .foreignRelationship(relationship: relationship.description, object: description)
        }
        try checkInContext()
        guard relationship.isToMany else {
            throw .invalidValue(place: relationship.description, expected: "a to-many relationship", given: "a to-one relationship")
        }
        return relationship
    }

    /// Relationships lead through the context: an object that left it has none to follow.
    private func checkInContext() throws(AmberError) {
        guard !isDetached else { throw .objectUnavailable(objectID, reason: Self.noContext) }
    }

    /// A deleted object refuses changes.
    private func checkChangeable() throws(AmberError) {
        guard !deletedFlag else { throw .objectUnavailable(objectID, reason: "the object is deleted") }
    }

    /// The value of `slot` now, reading a fault's row first.
    func currentSlot(_ slot: Int) throws(AmberError) -> Value {
        if isFault { try fire() }
        return slotValue(slot)
    }
}

// MARK: - The graph, kept by the context

extension Context {
    /// What a to-one slot holds for `object` (nil: null).
    func key(of object: ManagedObject?) -> Value {
        object.map { .int(rawKey(of: $0)) } ?? .null
    }

    /// The key slots and join rows hold for `object`: its primary key, or for
    /// a new object its provisional key (remembered, so the key leads back to it).
    private func rawKey(of object: ManagedObject) -> Int64 {
        if let pk = object.objectID.primaryKey { return pk }
        let key = object.temporaryKey
        if !object.isLinkTarget {
            object.isLinkTarget = true
            provisional[key] = object
        }
        return key
    }

    /// The destination of `object`'s to-one `relationship` (in `slot`),
    /// remembered on the object while its slot keeps pointing at it.
    func linkedDestination(of object: ManagedObject, _ relationship: Relationship, _ slot: Int) throws(AmberError) -> ManagedObject? {
        let value = object.slotValue(slot)
        if let links = object.links, links.generation == generation, let known = links.destination(relationship.index),
           key(of: known) == value
        {
            return known
        }
        guard let destination = try destination(of: value, through: relationship) else { return nil }
        links(of: object).setDestination(destination, relationship.index)
        return destination
    }

    /// The object a to-one slot's `value` stands for: a new object, one
    /// registered here, or a fault registered now.
    func destination(of value: Value, through relationship: Relationship) throws(AmberError) -> ManagedObject? {
        guard case .int(let key) = value else { return nil }
        return try object(of: model.destination(of: relationship), key: key)
    }

    /// The object of `entity` with primary key `key`: registered here, or a fault registered now.
    func object(of entity: Entity, primaryKey key: Int64) throws(AmberError) -> ManagedObject {
        if let known = registered(entity, key) { return known }
        // A row of an entity with sub-entities may be of any of them: read it, to make the right kind
        // (if it is gone, the fault below says so when it is used).
        if entity.subentityIndices.count > 1,
           let read = objects(from: try engine.fetchRows(of: entity, where: .primaryKey, in: [key]), of: entity).first
        {
            return read
        }
        let fault = ManagedObject(entity: entity, objectID: ObjectID(entityName: entity.name, store: store.identifier, key: .permanent(key)),
                                  context: self, values: [], version: 0, codecState: template(for: entity).fetchCodecState)
        fault.isFault = true
        register(fault, key)
        return fault
    }

    /// `destination` may be linked through `relationship`: of its destination
    /// entity, in this context, not deleted.
    func check(_ destination: ManagedObject, for relationship: Relationship) throws(AmberError) {
        let expected = model.destination(of: relationship)
        guard destination.entity.isKind(of: expected) else {
            let article = expected.name.first.map { "AEIOU".contains($0) } == true ? "an" : "a"
            throw .invalidValue(place: relationship.description, expected: "\(article) \(expected.name)", given: "\(destination.objectID)")
        }
        guard destination.context === self else {
            throw .invalidValue(place: relationship.description, expected: "an object of this context",
                                given: "\(destination.objectID), of \(destination.context == nil ? "no context" : "another context")")
        }
        guard !destination.deletedFlag else {
            throw .invalidValue(place: relationship.description, expected: "an object that is not deleted", given: "\(destination.objectID)")
        }
    }

    /// Points `source`'s to-one `relationship` (in `slot`) at `destination`
    /// instead of `old`, and keeps the inverse in step.
    func link(_ source: ManagedObject, to destination: ManagedObject?, replacing old: ManagedObject?,
              through relationship: Relationship, slot: Int) throws(AmberError)
    {
        guard let inverse = model.inverse(of: relationship) else {
            try source.setSlot(slot, to: key(of: destination))
            return
        }
        if inverse.isToMany {
            try source.setSlot(slot, to: key(of: destination))
            if let old { forget(source, in: old, inverse) }
            if let destination { remember(source, in: destination, inverse) }
            return
        }
        guard inverse.slot != nil else { return }
        // One-to-one: the old destination lets go of the source, and the new
        // destination's old partner lets go of the new destination.
        if let old, let oldSlot = old.slot(of: inverse), try old.currentSlot(oldSlot) == key(of: source) { try old.setSlot(oldSlot, to: .null) }
        if let destination, let inverseSlot = destination.slot(of: inverse) {
            // The partner may be of the relationship's declared entity, above `relationship`'s own: use the declared handle.
            if let partner = try self.destination(of: destination.currentSlot(inverseSlot), through: inverse), partner !== source,
               let partnerSlot = partner.slot(of: model.inverse(of: inverse) ?? relationship)
            {
                try partner.setSlot(partnerSlot, to: .null)
            }
            try destination.setSlot(inverseSlot, to: key(of: source))
        }
        try source.setSlot(slot, to: key(of: destination))
    }

    /// Adds `member` to `owner`'s to-many `relationship`.
    func addLink(from owner: ManagedObject, to member: ManagedObject, through relationship: Relationship) throws(AmberError) {
        switch relationship.storage {
        case .inverseForeignKey:
            guard let inverse = model.inverse(of: relationship) else { return }
            try member.setObject(owner, for: inverse)
        case .joinTable:
            try setJoinLink(owner, member, relationship, linked: true)
        case .foreignKey:
            break
        }
    }

    /// Removes `member` from `owner`'s to-many `relationship`, if it is one.
    func removeLink(from owner: ManagedObject, to member: ManagedObject, through relationship: Relationship) throws(AmberError) {
        switch relationship.storage {
        case .inverseForeignKey:
            guard let inverse = model.inverse(of: relationship) else { return }
            if try member.object(for: inverse) === owner { try member.setObject(nil, for: inverse) }
        case .joinTable:
            try setJoinLink(owner, member, relationship, linked: false)
        case .foreignKey:
            break
        }
    }

    /// Links or unlinks `owner` and `member` through join-table `relationship`,
    /// from both sides, as a pending row (nothing if it is so already).
    private func setJoinLink(_ owner: ManagedObject, _ member: ManagedObject, _ relationship: Relationship, linked: Bool) throws(AmberError) {
        guard try isMember(member, of: owner, relationship) != linked else { return }
        for (near, far, through) in [(owner, member, relationship), (member, owner, model.inverse(of: relationship))] {
            guard let through else { continue }
            pendingLinks[joinRow(near, far, through)] = linked
            if linked { remember(far, in: near, through) } else { forget(far, in: near, through) }
        }
        // After the order forget records: undo links first, then puts the member back in place.
        undoStack?.record(.link(owner, member, relationship, linked: !linked))
    }

    /// The join-table row linking `owner` to `member` through `relationship`.
    private func joinRow(_ owner: ManagedObject, _ member: ManagedObject, _ relationship: Relationship) -> JoinRow {
        guard case .joinTable(let table, let mine, _, _) = relationship.storage else { return JoinRow(table: "", source: 0, target: 0) }
        let (ownerKey, memberKey) = (rawKey(of: owner), rawKey(of: member))
        return mine == "source" ? JoinRow(table: table, source: ownerKey, target: memberKey)
                                : JoinRow(table: table, source: memberKey, target: ownerKey)
    }

    /// The object a join row's or slot's key stands for.
    private func object(of entity: Entity, key: Int64) throws(AmberError) -> ManagedObject? {
        key < 0 ? provisional[key] : try object(of: entity, primaryKey: key)
    }

    /// `object`'s links of this generation, made (empty) if it has none.
    private func links(of object: ManagedObject) -> Links {
        if let links = object.links, links.generation == generation { return links }
        let made = Links(generation: generation, relationships: object.entity.relationships.count)
        object.links = made
        return made
    }

    /// The loaded members of `owner`'s `relationship`, if loaded in this generation.
    func loaded(_ owner: ManagedObject, _ relationship: Relationship) -> [ManagedObject]? {
        guard let links = owner.links, links.generation == generation else { return nil }
        return links.members(relationship.index)
    }

    private func setLoaded(_ members: [ManagedObject], _ owner: ManagedObject, _ relationship: Relationship) {
        links(of: owner).setMembers(members, relationship.index)
    }

    /// Notes that `owner`'s members changed (a flag on the object, so each is listed once without a table).
    private func markRelinked(_ owner: ManagedObject, _ relationship: Relationship) {
        if !owner.isRelinked { relinked.append(owner) }
        owner.relinkedRelationships.insert(relationship.index)
        owner.edits &+= 1
    }

    /// Forgets which objects' members changed (after a save or a rollback).
    func clearRelinked() {
        for owner in relinked { owner.relinkedRelationships.removeAll() }
        relinked.removeAll()
    }

    /// `member` joined `owner`'s `relationship` in memory.
    private func remember(_ member: ManagedObject, in owner: ManagedObject, _ relationship: Relationship) {
        markRelinked(owner, relationship)
        guard let links = owner.links, links.generation == generation else { return }
        links.append(member, relationship.index)
    }

    /// Puts `owner`'s ordered `relationship`'s members (already exactly
    /// `members`) in that order; positions are written at the next save.
    func reorder(_ owner: ManagedObject, _ relationship: Relationship, _ members: [ManagedObject]) {
        if let undo = undoStack, let old = loaded(owner, relationship) { undo.record(.order(owner, relationship, old)) }
        markRelinked(owner, relationship)
        setLoaded(members, owner, relationship)
    }

    /// `member` left `owner`'s `relationship` in memory.
    func forget(_ member: ManagedObject, in owner: ManagedObject, _ relationship: Relationship) {
        markRelinked(owner, relationship)
        guard let links = owner.links, links.generation == generation, let members = links.members(relationship.index) else { return }
        // Undo puts a member back where it was, not at the end.
        if relationship.isOrdered, let undo = undoStack { undo.record(.order(owner, relationship, members)) }
        links.remove(member, relationship.index)
    }

    /// Whether `member` is one of `owner`'s `relationship`'s members (read now
    /// if they are not loaded); a deleted object is no member, as in ``members(of:_:)``.
    private func isMember(_ member: ManagedObject, of owner: ManagedObject, _ relationship: Relationship) throws(AmberError) -> Bool {
        if loaded(owner, relationship) == nil { try loadMembers(of: [owner], relationship) }
        return !member.deletedFlag && owner.links?.contains(member, relationship.index) == true
    }

    /// The members of `owner`'s to-many `relationship`: loaded, or read now.
    func members(of owner: ManagedObject, _ relationship: Relationship) throws(AmberError) -> [ManagedObject] {
        if let members = loaded(owner, relationship) { return withoutDeleted(members) }
        try loadMembers(of: [owner], relationship)
        return loaded(owner, relationship) ?? []
    }

    /// Loads the members of `relationship` for every owner not loaded yet, in
    /// one query for them all (two for a join table: its rows, then the
    /// members not read yet), then adds this context's pending changes.
    /// `everyOwner` says the owners are every saved object of their entity
    /// (a fetch of them all), so reading every linked row finds only theirs.
    func loadMembers(of owners: [ManagedObject], _ relationship: Relationship, everyOwner: Bool = false) throws(AmberError) {
        let owners = owners.filter { loaded($0, relationship) == nil }
        guard !owners.isEmpty else { return }
        let entity = model.destination(of: relationship)
        let saved = owners.compactMap(\.objectID.primaryKey)
        // By owner key (as a slot or join row holds it), the members in order.
        var groups: [Int64: [ManagedObject]] = [:]
        switch relationship.storage {
        case .joinTable(let table, let mine, _, _):
            if !saved.isEmpty {
                let pairs = try engine.joinedPairs(through: relationship, from: saved)
                let unread = Array(Set(pairs.map(\.1).filter { registered(entity, $0) == nil }))
                let read = unread.isEmpty ? [] : objects(from: try engine.fetchRows(of: entity, where: .primaryKey, in: unread), of: entity)
                for (owner, member) in pairs { groups[owner, default: []].append(try object(of: entity, primaryKey: member)) }
                withExtendedLifetime(read) {}
            }
            for (row, added) in pendingLinks where row.table == table {
                let (near, far) = mine == "source" ? (row.source, row.target) : (row.target, row.source)
                guard let member = try object(of: entity, key: far) else { continue }
                let present = groups[near]?.contains { $0 === member } ?? false
                if added && !present { groups[near, default: []].append(member) }
                if !added && present { groups[near]?.removeAll { $0 === member } }
            }
        case .inverseForeignKey(let order):
            guard let inverse = model.inverse(of: relationship), inverse.slot != nil else { return }
            if !saved.isEmpty && everyOwner && order == nil {
                // One pass over the members' table, grouped here: cheaper than a seek per row for them all.
                for member in objects(from: try engine.fetchRows(of: entity, linkedThrough: inverse), of: entity) {
                    guard let slot = member.slot(of: inverse), case .int(let key) = member.slotValue(slot) else { continue }
                    groups[key, default: []].append(member)
                }
            } else if !saved.isEmpty {
                // Saved members as this context has them (a fetch fills faults): some may point elsewhere now.
                // Ordered by owner, so each owner's members are one run: one table write per owner, not per member.
                let rows = try engine.fetchRows(of: entity, where: .foreignKey(inverse), in: saved, orderedBy: [inverse.columnName] + (order.map { [$0] } ?? []))
                var run: [ManagedObject] = [], runKey: Int64?
                func close() {
                    guard let key = runKey, !run.isEmpty else { return }
                    groups[key] = groups[key].map { $0 + run } ?? run
                }
                for member in objects(from: rows, of: entity) {
                    guard let slot = member.slot(of: inverse), case .int(let key) = member.slotValue(slot) else { continue }
                    if key != runKey {
                        close()
                        (run, runKey) = ([], key)
                    }
                    run.append(member)
                }
                close()
            }
            let candidates = pendingObjects.filter { $0.entity.isKind(of: entity) && !$0.deletedFlag }
            if !candidates.isEmpty {
                var known = Set(groups.values.joined().map(ObjectIdentifier.init))
                for candidate in candidates where known.insert(ObjectIdentifier(candidate)).inserted {
                    if let slot = candidate.slot(of: inverse), case .int(let key) = candidate.slotValue(slot) {
                        groups[key, default: []].append(candidate)
                    }
                }
            }
        case .foreignKey:
            return
        }
        for owner in owners { setLoaded(withoutDeleted(groups[rawKey(of: owner)] ?? []), owner, relationship) }
    }

    /// `members` less the deleted ones (the same array when none is: no copy).
    private func withoutDeleted(_ members: [ManagedObject]) -> [ManagedObject] {
        members.contains(where: \.deletedFlag) ? members.filter { !$0.deletedFlag } : members
    }

    /// Reads what `keyPaths` lead to from `objects` (all of `entity`): per
    /// relationship, one query for every object of the level before.
    /// `everyObject` says `objects` are every saved object of `entity`.
    func prefetch(_ keyPaths: [String], from objects: [ManagedObject], of entity: Entity, everyObject: Bool) throws(AmberError) {
        for path in keyPaths {
            var level = objects, current = entity
            let names = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            for (step, name) in names.enumerated() {
                let relationship = try current.relationship(named: name)
                let last = step == names.count - 1
                let destination = model.destination(of: relationship)
                var next: [ManagedObject] = []
                if relationship.slot != nil {
                    let keys = level.compactMap { object -> Int64? in
                        guard !object.isFault, let slot = object.slot(of: relationship), case .int(let key) = object.slotValue(slot), key > 0
                        else { return nil }
                        return key
                    }
                    let unread = Array(Set(keys.filter { registered(destination, $0)?.isFault ?? true }))
                    // Held until each source remembers its destination (the registry does not retain them).
                    let read = unread.isEmpty ? [] : self.objects(from: try engine.fetchRows(of: destination, where: .primaryKey, in: unread), of: destination)
                    for object in level { if let end = try object.object(for: relationship) { next.append(end) } }
                    withExtendedLifetime(read) {}
                } else {
                    try loadMembers(of: level, relationship, everyOwner: everyObject && step == 0)
                    // The last step's members are loaded and kept by their owners; only a next step needs them listed.
                    if !last { next = level.flatMap { loaded($0, relationship) ?? [] } }
                }
                guard !last else { break }
                var seen = Set<ObjectIdentifier>()
                level = next.filter { seen.insert(ObjectIdentifier($0)).inserted }
                current = destination
            }
        }
    }

    /// How many members `owner`'s to-many `relationship` has, without loading them.
    func memberCount(of owner: ManagedObject, _ relationship: Relationship) throws(AmberError) -> Int {
        if let members = loaded(owner, relationship) { return members.count { !$0.deletedFlag } }
        if case .joinTable(let table, _, _, _) = relationship.storage {
            // Saved links are counted unless this context changed some of this table's or deleted a destination.
            let destination = model.destination(of: relationship)
            guard let pk = owner.objectID.primaryKey, !pendingLinks.keys.contains(where: { $0.table == table }),
                  !pendingObjects.contains(where: { $0.entity.isKind(of: destination) && $0.deletedFlag })
            else { return try members(of: owner, relationship).count }
            return try engine.joinedCount(through: relationship, from: pk)
        }
        guard let inverse = model.inverse(of: relationship), inverse.slot != nil else { return 0 }
        guard let pk = owner.objectID.primaryKey else { return try members(of: owner, relationship).count }
        let entity = model.destination(of: relationship), ownerKey = Value.int(pk)
        var count = try engine.count(of: entity, through: inverse, to: pk)
        // Pending objects moved in or out since they were read (or are new, or deleted).
        // Members may be of entities below the destination: they share its table and the inverse's slot.
        for candidate in pendingObjects where candidate.entity.isKind(of: entity) {
            guard let slot = candidate.slot(of: inverse) else { continue }
            let stored = !candidate.insertedFlag && (candidate.committed?[slot] ?? candidate.slotValue(slot)) == ownerKey
            let here = !candidate.deletedFlag && candidate.slotValue(slot) == ownerKey
            count += (here ? 1 : 0) - (stored ? 1 : 0)
        }
        return count
    }

    /// The other ends of `object`'s `relationship`, not deleted.
    func destinations(of object: ManagedObject, _ relationship: Relationship) throws(AmberError) -> [ManagedObject] {
        if relationship.isToMany { return try members(of: object, relationship) }
        guard let slot = relationship.slot, let destination = try destination(of: object.currentSlot(slot), through: relationship),
              !destination.deletedFlag
        else { return [] }
        return [destination]
    }

    // MARK: Delete rules

    /// Marks `object` deleted and applies its relationships' delete rules:
    /// cascading to destinations (iteratively, each object once), and
    /// taking deleted objects out of their destinations' inverses.
    func deleteApplyingRules(_ object: ManagedObject) throws(AmberError) {
        var work = [object]
        while let next = work.popLast() {
            guard !next.deletedFlag else { continue }
            if next.isFault { try next.fire() }
            // The ends as they are before the object goes (a deleted object has none).
            let allEnds = try next.entity.relationships.map { (relationship) throws(AmberError) in
                try self.destinations(of: next, relationship)
            }
            if let undo = undoStack {
                for (relationship, ends) in zip(next.entity.relationships, allEnds) {
                    // Recorded first, so replayed last: once the links are back, the order they had.
                    if relationship.isOrdered, !ends.isEmpty { undo.record(.order(next, relationship, ends)) }
                    // Its join-table rows go at the save: undo links it again after bringing it back.
                    guard case .joinTable = relationship.storage else { continue }
                    for end in ends { undo.record(.link(next, end, relationship, linked: true)) }
                }
                undo.record(.existence(next, alive: true))
            }
            next.deletedFlag = true
            track(next)
            for (relationship, ends) in zip(next.entity.relationships, allEnds) {
                if relationship.deleteRule == .cascade { work += ends }
                guard let inverse = model.inverse(of: relationship) else { continue }
                for end in ends {
                    if inverse.isToMany {
                        forget(next, in: end, inverse)
                    } else if relationship.deleteRule == .nullify, let inverseSlot = end.slot(of: inverse),
                              !end.deletedFlag, try end.currentSlot(inverseSlot) == key(of: next)
                    {
                        try end.setSlot(inverseSlot, to: .null)
                    }
                }
            }
        }
    }

    // MARK: Saving

    /// The to-one rules `object` (inserted or updated) breaks: a required
    /// relationship left empty, or one pointing at a deleted object or a new
    /// object that is not being saved.
    func toOneProblems(of object: ManagedObject) -> [SaveProblem] {
        var problems: [SaveProblem] = []
        func problem(_ relationship: Relationship, _ rule: SaveProblem.Rule, _ message: String) {
            problems.append(SaveProblem(objectID: object.objectID, place: relationship.description, rule: rule, message: message))
        }
        for relationship in object.entity.toOneRelationships {
            guard let slot = relationship.slot else { continue }
            guard case .int(let key) = object.slotValue(slot) else {
                if !relationship.isOptional { problem(relationship, .required, "is required") }
                continue
            }
            let end = key < 0 ? provisional[key] : registered(model.destination(of: relationship), key)
            if key < 0, end == nil || end?.deletedFlag == true || end?.isDetached == true {
                problem(relationship, .relationship, "points at a new object that is not being saved")
            } else if let end, end.deletedFlag {
                problem(relationship, .relationship, "points at \(end.objectID), which is deleted")
            }
        }
        return problems
    }

    /// The other relationship rules a save would break (``toOneProblems(of:)``
    /// checks each written object): counts, deny rules, and saved rows that
    /// point at objects this save deletes.
    func relationshipProblems(_ changes: ChangeSet<ManagedObject>) throws(AmberError) -> [SaveProblem] {
        var problems: [SaveProblem] = []
        func problem(_ object: ManagedObject, _ relationship: Relationship, _ rule: SaveProblem.Rule, _ message: String) {
            problems.append(SaveProblem(objectID: object.objectID, place: relationship.description, rule: rule, message: message))
        }
        // Counts, for every object whose members may have changed. Their members
        // are loaded for all of them at once per relationship first: counting
        // one by one would scan the pending objects once per owner.
        var counted = Set<ObjectIdentifier>(), targets: [ManagedObject] = []
        for list in [changes.inserts, changes.updates, relinked] {
            targets += list.filter { !$0.entity.countedRelationships.isEmpty && !$0.deletedFlag && !$0.isDetached
                && counted.insert(ObjectIdentifier($0)).inserted }
        }
        var owners: [ObjectIdentifier: (Relationship, [ManagedObject])] = [:]
        for object in targets {
            for relationship in object.entity.countedRelationships {
                owners[ObjectIdentifier(relationship), default: (relationship, [])].1.append(object)
            }
        }
        for (relationship, list) in owners.values { try loadMembers(of: list, relationship) }
        for object in targets {
            for relationship in object.entity.countedRelationships {
                let count = try memberCount(of: object, relationship)
                // As in Core Data, an optional relationship may be empty whatever its minimum.
                if let low = relationship.minCount, count < low, count > 0 || !relationship.isOptional {
                    problem(object, relationship, .count, "has \(count) \(count == 1 ? "member" : "members"), fewer than its minimum of \(low)")
                }
                if let high = relationship.maxCount, count > high {
                    problem(object, relationship, .count, "has \(count) members, more than its maximum of \(high)")
                }
            }
        }
        for object in changes.deletes {
            for relationship in object.entity.relationships where relationship.deleteRule == .deny {
                let ends = try destinations(of: object, relationship)
                if !ends.isEmpty {
                    problem(object, relationship, .deny, "has the deny rule and still points at \(ends.count == 1 ? "\(ends[0].objectID)" : "\(ends.count) objects")")
                }
            }
        }
        problems += try linksIntoDeleted(changes.deletes)
        return problems
    }

    /// Saved rows that would still point at an object this save deletes
    /// (through a one-way to-one, or one whose inverse did not let go).
    private func linksIntoDeleted(_ deletes: [ManagedObject]) throws(AmberError) -> [SaveProblem] {
        // By hierarchy (keys are unique per table): a link to a parent entity may point at a sub-entity's object.
        var deleted: [Int: [Int64: ObjectID]] = [:]
        for object in deletes { if let pk = object.objectID.primaryKey { deleted[object.entity.rootIndex, default: [:]][pk] = object.objectID } }
        guard !deleted.isEmpty else { return [] }
        var problems: [SaveProblem] = []
        for source in model.entities {
            // A one-way to-many still listing an object this save deletes (unless this context removed it).
            for relationship in source.relationships where relationship.inverseIndex == nil {
                guard case .joinTable(let table, let mine, _, _) = relationship.storage,
                      let gone = deleted[model.destination(of: relationship).rootIndex] else { continue }
                for (owner, member) in try engine.joinedLinks(through: relationship, to: Array(gone.keys)) {
                    let row = mine == "source" ? JoinRow(table: table, source: owner, target: member) : JoinRow(table: table, source: member, target: owner)
                    if pendingLinks[row] == false || registered(source, owner)?.deletedFlag == true { continue }
                    let id = ObjectID(entityName: source.name, store: store.identifier, key: .permanent(owner))
                    problems.append(SaveProblem(objectID: id, place: relationship.description, rule: .relationship,
                                                message: "still lists \(gone[member].map { "\($0)" } ?? "\(member)"), which this save deletes"))
                }
            }
            for relationship in source.relationships {
                guard relationship.slot != nil, let gone = deleted[model.destination(of: relationship).rootIndex] else { continue }
                for (pk, target) in try engine.links(of: source, through: relationship, to: Array(gone.keys)) {
                    if let here = registered(source, pk), here.deletedFlag || here.slot(of: relationship).map(here.slotValue) != .int(target) { continue }
                    let id = ObjectID(entityName: source.name, store: store.identifier, key: .permanent(pk))
                    problems.append(SaveProblem(objectID: id, place: relationship.description, rule: .relationship,
                                                message: "points at \(gone[target].map { "\($0)" } ?? "\(target)"), which this save deletes"))
                }
            }
        }
        return problems
    }

    /// Puts this save's join-table rows and ordered positions into `changes`:
    /// links whose ends are both saved or being inserted, and the position of
    /// every member of each ordered relationship whose members changed.
    func addLinks(to changes: inout ChangeSet<ManagedObject>) throws(AmberError) {
        for (row, added) in pendingLinks {
            let dropped = [row.source, row.target].contains { key in
                key < 0 && (provisional[key].map { !$0.insertedFlag || $0.deletedFlag } ?? true)
            }
            if !dropped { changes.links[row] = added }
        }
        for owner in relinked where !owner.deletedFlag && !owner.isDetached {
            for relationship in owner.entity.relationships where relationship.isOrdered {
                let ownerKey = rawKey(of: owner)
                for (position, member) in try members(of: owner, relationship).enumerated() {
                    switch relationship.storage {
                    case .joinTable(let table, let mine, let theirs, let order?):
                        changes.positions.append(Position(table: table, keyColumn: mine, key: ownerKey, otherColumn: theirs,
                                                          other: rawKey(of: member), orderColumn: order, position: Int64(position)))
                    case .inverseForeignKey(let order?):
                        changes.positions.append(Position(table: model.root(of: model.destination(of: relationship)).name, keyColumn: "_pk",
                                                          key: rawKey(of: member), otherColumn: nil, other: 0, orderColumn: order,
                                                          position: Int64(position)))
                    default:
                        break
                    }
                }
            }
        }
    }

    /// After COMMIT: `object`'s to-one slots that held new objects'
    /// provisional keys get their primary keys (`keys`).
    func resolveProvisionalKeys(of object: ManagedObject, _ keys: ProvisionalKeys) {
        guard object.row == nil else { return }
        for relationship in object.entity.toOneRelationships {
            guard let slot = relationship.slot, case .int(let key) = object.slotValue(slot), key < 0, let pk = keys[key] else { continue }
            object.values[slot] = .int(pk)
        }
    }
}
