import AmberModel
import AmberStore
import AmberValues

// MARK: - Undo and redo

/// A context's undo and redo history (``Context/undoStack``).
///
/// Every change made through a context with a stack is recorded: values set
/// (transformable, transient and extended ones too), objects inserted and deleted
/// (with what their delete rules did), to-one and to-many relationship
/// changes and the order of ordered ones. Changes are recorded in groups:
/// each call (a set, an insert, a delete with its cascade) is a group of its
/// own unless an explicit group is open (``beginGroup(named:)``,
/// ``group(named:_:)``), which gathers everything until it ends.
///
/// ``Context/undo()`` reverts the last group and ``Context/redo()`` applies
/// it again, until a new change is made. Saving keeps the history: undoing
/// after a save makes the context dirty again with the old values (a saved
/// insert becomes a pending deletion; a saved deletion a pending insert of
/// the object under its old key). ``Context/rollback()`` clears it.
public final class UndoStack {
    /// How many groups can be undone; 0 (the default) for no limit. The
    /// oldest groups go first when the limit is reached or lowered.
    public var levelsLimit: Int {
        didSet { trim() }
    }

    /// Whether ``Context/undo()`` would revert something (an open group with changes counts).
    public var canUndo: Bool { !undoGroups.isEmpty || !(open?.steps.isEmpty ?? true) }
    /// Whether ``Context/redo()`` would apply something.
    public var canRedo: Bool { !redoGroups.isEmpty }
    /// The name of the group ``Context/undo()`` would revert ("Rename"), for a menu.
    public var undoActionName: String? { open.flatMap { $0.steps.isEmpty ? nil : $0 }?.name ?? undoGroups.last?.name }
    /// The name of the group ``Context/redo()`` would apply.
    public var redoActionName: String? { redoGroups.last?.name }
    /// How many groups can be undone now.
    public var undoCount: Int { undoGroups.count + (open?.steps.isEmpty == false ? 1 : 0) }

    /// A stack keeping at most `levelsLimit` groups (0: no limit).
    public init(levelsLimit: Int = 0) {
        self.levelsLimit = max(0, levelsLimit)
    }

    /// Opens a group: everything changed until the matching ``endGroup()``
    /// is undone and redone at once, under `name`. Groups nest; the
    /// outermost one is the one recorded.
    public func beginGroup(named name: String? = nil) {
        if depth == 0 { open = UndoGroup(name: name) } else if open?.name == nil { open?.name = name }
        depth += 1
        explicitDepth += 1
    }

    /// Closes the group ``beginGroup(named:)`` opened.
    ///
    /// - Returns: false (and nothing happens) if no group is open.
    @discardableResult
    public func endGroup() -> Bool {
        guard explicitDepth > 0 else { return false }
        explicitDepth -= 1
        leave()
        return true
    }

    /// Runs `body` inside a group named `name`, closed however `body` ends;
    /// throws what `body` throws.
    public func group<T, Failure: Error>(named name: String? = nil, _ body: () throws(Failure) -> T) throws(Failure) -> T {
        beginGroup(named: name)
        defer { endGroup() }
        return try body()
    }

    // MARK: Recording

    /// Groups that can be undone, oldest first.
    private var undoGroups: [UndoGroup] = []
    /// Groups that can be redone, the next one last.
    private var redoGroups: [UndoGroup] = []
    /// The group being recorded.
    private var open: UndoGroup?
    /// Open groups: explicit ones and the implicit one of each change call.
    private var depth = 0
    private var explicitDepth = 0
    /// Where recorded steps go: a change records its reversal for undo; while
    /// undoing, the reversals of the undone steps make the redo group.
    private var replaying: [UndoStep]?

    /// Called at the start of each changing call: opens its group if none is.
    func enter() {
        if depth == 0 { open = UndoGroup(name: nil) }
        depth += 1
    }

    /// Called at the end of each changing call: closes the group it opened.
    func leave() {
        depth -= 1
        guard depth == 0, let group = open else { return }
        open = nil
        guard !group.steps.isEmpty else { return }
        undoGroups.append(group)
        trim()
    }

    /// Set while the context tidies up after a replay: what it does then is not a change of its own.
    var isPaused = false

    /// Records the step that reverts a change just made.
    func record(_ step: UndoStep) {
        guard !isPaused else { return }
        if replaying != nil {
            replaying?.append(step)
            return
        }
        if open == nil {
            // A change outside any call that opens a group (an internal path): a group of its own.
            undoGroups.append(UndoGroup(name: nil, steps: [step]))
            trim()
        } else {
            open?.steps.append(step)
        }
        redoGroups.removeAll()
    }

    /// Drops the open group's steps that concern `objects` (a refused batch of new objects that left the context).
    func forget(_ objects: [ManagedObject]) {
        let gone = Set(objects.map(ObjectIdentifier.init))
        open?.steps.removeAll { gone.contains(ObjectIdentifier($0.object)) }
    }

    /// Empties the history (after a rollback).
    func removeAll() {
        undoGroups.removeAll()
        redoGroups.removeAll()
        if open != nil { open?.steps.removeAll() }
    }

    private func trim() {
        guard levelsLimit > 0, undoGroups.count > levelsLimit else { return }
        undoGroups.removeFirst(undoGroups.count - levelsLimit)
    }

    // MARK: Replaying

    /// The group to undo (closing an open one first), taken off the stack.
    func takeUndo() -> UndoGroup? {
        if let group = open, !group.steps.isEmpty {
            open?.steps.removeAll()
            redoGroups.removeAll()
            return group
        }
        return undoGroups.popLast()
    }

    func takeRedo() -> UndoGroup? { redoGroups.popLast() }

    /// Replays `group`'s steps newest first with `apply`, gathering the
    /// reversals they record into the group that undoes the replay.
    func replay(_ group: UndoGroup, _ apply: (UndoStep) throws(AmberError) -> Void) throws(AmberError) -> UndoGroup {
        replaying = []
        defer { replaying = nil }
        for step in group.steps.reversed() { try apply(step) }
        return UndoGroup(name: group.name, steps: replaying ?? [])
    }

    /// Puts a replayed group where the next undo (`undone` false) or redo finds it.
    func push(_ group: UndoGroup, undone: Bool) {
        if undone {
            redoGroups.append(group)
        } else {
            undoGroups.append(group)
            trim()
        }
    }
}

/// The changes one undo reverts.
struct UndoGroup {
    var name: String?
    var steps: [UndoStep] = []
}

/// One recorded change, as the step that reverts it.
enum UndoStep {
    /// Set `attribute` back to `value`.
    case value(ManagedObject, Attribute, Value)
    /// Set extended attribute `key` back to `value` (null: remove it).
    case extended(ManagedObject, String, Value)
    /// Put `value` back in a to-one slot; `target`, if any, is the new object
    /// whose key the slot held (its key changes when it is saved).
    case slot(ManagedObject, Int, Value, target: ManagedObject?)
    /// Make the object alive again (undelete, or insert anew) or not (delete).
    case existence(ManagedObject, alive: Bool)
    /// Link or unlink two objects through a join-table relationship.
    case link(ManagedObject, ManagedObject, Relationship, linked: Bool)
    /// Put an ordered to-many relationship's members back in this order.
    case order(ManagedObject, Relationship, [ManagedObject])

    /// The objects the step needs in the context.
    var objects: [ManagedObject] {
        switch self {
        case .slot(let object, _, _, let target?): [object, target]
        case .link(let owner, let member, _, _): [owner, member]
        default: [object]
        }
    }

    /// The object the step changes.
    var object: ManagedObject {
        switch self {
        case .value(let object, _, _), .extended(let object, _, _), .slot(let object, _, _, _), .existence(let object, _), .link(let object, _, _, _),
             .order(let object, _, _):
            object
        }
    }
}

extension Context {
    /// Reverts the last group of changes (see ``UndoStack``); what it
    /// changed becomes pending again, and ``redo()`` can apply it again.
    ///
    /// - Returns: false if there is nothing to undo (no stack, an empty
    ///   one, or one past its levels limit): nothing changed.
    /// - Throws: ``/AmberValues/AmberError/objectUnavailable(_:reason:)`` if an object to
    ///   restore lost its key to a newer object; a store error reading a
    ///   relationship. Nothing is changed then.
    @discardableResult
    public func undo() throws(AmberError) -> Bool {
        try replayNext(undoing: true)
    }

    /// Applies again the last group ``undo()`` reverted.
    ///
    /// - Returns: false if there is nothing to redo (a change since the last undo clears it).
    /// - Throws: as ``undo()``.
    @discardableResult
    public func redo() throws(AmberError) -> Bool {
        try replayNext(undoing: false)
    }

    /// Replays the group undo (or redo) would take, and puts its reverse
    /// where redo (or undo) finds it; a group that cannot be replayed goes
    /// back where it was.
    private func replayNext(undoing: Bool) throws(AmberError) -> Bool {
        guard let stack = undoStack, let group = undoing ? stack.takeUndo() : stack.takeRedo() else { return false }
        do throws(AmberError) {
            stack.push(try replay(group, on: stack), undone: undoing)
        } catch {
            stack.push(group, undone: !undoing)
            throw error
        }
        return true
    }

    /// Applies `group`'s steps, newest first, after checking every object it
    /// would bring back can come back; then to-many relationships are read
    /// again, keeping the order of ordered ones with pending positions.
    private func replay(_ group: UndoGroup, on stack: UndoStack) throws(AmberError) -> UndoGroup {
        // Every object the steps touch must be here, or come back through an earlier step: else nothing is changed.
        var returning = Set<ObjectIdentifier>()
        for step in group.steps.reversed() {
            if case .existence(let object, true) = step, object.isDetached {
                try checkCanReturn(object)
                returning.insert(ObjectIdentifier(object))
            }
            for object in step.objects where object.isDetached && !returning.contains(ObjectIdentifier(object)) {
                throw .objectUnavailable(object.objectID, reason: "it left the context (deleted in the store), so the change cannot be undone or redone")
            }
        }
        let reverse = try stack.replay(group) { (step) throws(AmberError) in try apply(step) }
        // Restored slots and revived objects change inverses no cache followed: read members again,
        // keeping the pending order of ordered relationships (the one the replay left).
        let orders = pendingOrders()
        generation += 1
        stack.isPaused = true
        defer { stack.isPaused = false }
        for (owner, relationship, members) in orders where !owner.isDetached {
            let now = try self.members(of: owner, relationship)
            let kept = members.filter { member in now.contains { $0 === member } }
            reorder(owner, relationship, kept + now.filter { member in !kept.contains { $0 === member } })
        }
        return reverse
    }

    private func apply(_ step: UndoStep) throws(AmberError) {
        switch step {
        case .value(let object, let attribute, let value):
            try object.setValue(value, for: attribute)
        case .extended(let object, let key, let value):
            try object.setValue(value, forExtendedKey: key)
        case .slot(let object, let slot, let value, let target):
            try object.setSlot(slot, to: target.map { key(of: $0) } ?? value)
        case .existence(let object, let alive):
            alive ? revive(object) : markDeleted(object)
        case .link(let owner, let member, let relationship, let linked):
            if linked { try addLink(from: owner, to: member, through: relationship) } else { try removeLink(from: owner, to: member, through: relationship) }
        case .order(let owner, let relationship, let members):
            // As recorded, even with members later steps bring back: the tidy-up after the replay keeps only members.
            _ = try self.members(of: owner, relationship)
            reorder(owner, relationship, members)
        }
    }

    /// The ordered relationships with pending positions, and their orders now.
    private func pendingOrders() -> [(ManagedObject, Relationship, [ManagedObject])] {
        var orders: [(ManagedObject, Relationship, [ManagedObject])] = []
        for owner in relinked {
            for relationship in owner.entity.relationships where relationship.isOrdered {
                if let members = loaded(owner, relationship) {
                    orders.append((owner, relationship, members))
                }
            }
        }
        return orders
    }

    /// Refuses to bring back a saved and deleted object whose key a newer row took.
    private func checkCanReturn(_ object: ManagedObject) throws(AmberError) {
        guard let pk = object.objectID.primaryKey else { return }
        var taken = registered(object.entity, pk).map { $0 !== object } ?? false
        if !taken { taken = try !engine.versions(in: object.entity.rootIndex, of: [pk]).isEmpty }
        if taken {
            throw .objectUnavailable(object.objectID, reason: "its key belongs to a newer object now, so it cannot be restored")
        }
    }

    /// Marks `object` deleted (undoing its insert, or redoing its deletion),
    /// without delete rules: the group's other steps restore its relationships.
    func markDeleted(_ object: ManagedObject) {
        undoStack?.record(.existence(object, alive: true))
        object.deletedFlag = true
        track(object)
    }

    /// Brings `object` back: clears its deletion mark, or, if it left the
    /// context (its deletion was saved, or it was new and dropped), makes it
    /// a new object again under its old key, if it had one.
    private func revive(_ object: ManagedObject) {
        undoStack?.record(.existence(object, alive: false))
        if object.isDetached {
            object.rejoinContext()
            if let pk = object.objectID.primaryKey { register(object, pk) }
        }
        // What it linked to while it was gone may have moved: its members are read again.
        object.links = nil
        object.deletedFlag = false
        track(object)
    }
}
