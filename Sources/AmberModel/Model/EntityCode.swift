import Synchronization

/// The code layers above attach to a model's entities (Amber: validators and
/// lifecycle hooks). Code set for an entity also runs for the objects of
/// the entities below it that have none of their own, as a subclass
/// inherits its superclass's methods. Thread-safe: a bound model is shared
/// across threads, and code may be set while contexts work.
package final class EntityCode: Sendable {
    /// Whether any entity has code: the check a context makes on its hot paths (insert, fetch) first.
    private let anySet = Atomic<Bool>(false)
    /// Held while code is set, so two threads setting code do not interleave their updates.
    private let setting = Mutex<Void>(())

    init() {}

    /// Whether no entity has code (a lock-free read).
    @inline(__always)
    package var isEmpty: Bool { !anySet.load(ordering: .acquiring) }

    /// The code that runs for `entity`'s objects: its own, or its nearest ancestor's.
    package func code(for entity: Entity) -> (AnyObject & Sendable)? {
        if isEmpty { return nil }
        return entity.codeSlot.state.withLock { $0.effective }
    }

    /// Gives `entity` `code` (nil removes it), in `model`; the entities below it follow.
    package func set(_ code: (AnyObject & Sendable)?, for entity: Entity, in model: Model) {
        // Replaced code is released after the locks are let go: its release may run a binding's
        // cleanup (a C userdata_free), which may call back in.
        var replaced: [(AnyObject & Sendable)?] = []
        setting.withLock { _ in
            entity.codeSlot.state.withLock { state in
                replaced.append(state.own)
                state.own = code
            }
            entity.codeSlot.hasOwn.store(code != nil, ordering: .releasing)
            // Each entity takes its own code, else its nearest ancestor's (`ancestors` runs nearest first).
            let owns = model.entities.map { $0.codeSlot.own }
            for candidate in model.entities {
                let effective = ([candidate] + candidate.ancestors).lazy.compactMap { owns[$0.index] }.first
                candidate.codeSlot.state.withLock { state in
                    replaced.append(state.effective)
                    state.effective = effective
                }
            }
            anySet.store(owns.contains { $0 != nil }, ordering: .releasing)
        }
        replaced.removeAll()
    }
}

/// One entity's code (see ``EntityCode``).
package final class EntityCodeSlot: Sendable {
    fileprivate let state = Mutex<(own: (AnyObject & Sendable)?, effective: (AnyObject & Sendable)?)>((nil, nil))
    /// Whether `own` is set: read without the lock by typed reads, which ask on every object they make.
    fileprivate let hasOwn = Atomic<Bool>(false)

    init() {}

    /// The code the entity was given itself (nil if none, even if an ancestor has some).
    package var own: (AnyObject & Sendable)? { hasOwn.load(ordering: .acquiring) ? state.withLock { $0.own } : nil }
}
