import AmberModel
import AmberValues

// Where contexts run the model's logic in code (see ObjectLogic). Every
// entry point checks first that the model has any, so a model without
// logic pays one atomic load per call.
extension Context {
    /// How many rounds of `willSave` one save runs before it gives up: each
    /// round calls the objects earlier rounds' hooks changed or inserted.
    static let maximumWillSaveRounds = 100

    /// Calls `willSave` on every object the save will insert, update or
    /// delete, and again on those the hooks touch, until a round touches no new one.
    func runWillSave() throws(AmberError) {
        var called = Set<ObjectIdentifier>()
        var last: ManagedObject?
        for _ in 0..<Self.maximumWillSaveRounds {
            let due = pending.filter { $0.hasChanges && !called.contains(ObjectIdentifier($0)) }
            if due.isEmpty { return }
            for object in due {
                called.insert(ObjectIdentifier(object))
                guard let entry = model.logicEntry(for: object.entity) else { continue }
                last = object
                try running("willSave", of: object) { try entry.logic.willSave(object) }
            }
        }
        // Only reached after a round called a hook: rounds without one add no objects, so the loop returned.
        guard let last else { return }
        throw .hookFailed(object: last.objectID, hook: "willSave",
                          message: "hooks kept changing or inserting objects for \(Self.maximumWillSaveRounds) rounds; this one's was the last called")
    }

    /// The problems `entry`'s validators report for `object`, which the save will `change`.
    func validationProblems(of object: ManagedObject, _ change: ObjectChange, _ entry: LogicEntry) throws(AmberError) -> [SaveProblem] {
        var problems: [SaveProblem] = []
        let entity = object.entity
        func collect(_ attribute: Attribute?, _ run: () throws -> Void) throws(AmberError) {
            do {
                try withinHook(run)
            } catch let reported as ValidationError {
                for problem in reported.problems {
                    let place = (problem.key ?? attribute?.name).map { "\(entity.name).\($0)" } ?? entity.name
                    problems.append(SaveProblem(objectID: object.objectID, place: place, rule: .validation, message: problem.message))
                }
            } catch let error as AmberError {
                throw error
            } catch {
                throw .hookFailed(object: object.objectID, hook: attribute.map { "validateValue(\($0.name))" } ?? "validate(for: \(change))",
                                  message: "\(error)")
            }
        }
        if change != .delete {
            for attribute in entity.attributes where change == .insert || object.changedSlots.contains(attribute.slot) {
                let value = try object.value(for: attribute)
                try collect(attribute) { try entry.logic.validateValue(value, for: attribute, of: object) }
            }
        }
        try collect(nil) { try entry.logic.validate(object, for: change) }
        return problems
    }

    /// Calls `prepareForDeletion` on `object` and on every object deleting
    /// it would cascade to, before any is marked: a hook that throws leaves
    /// every object as it was.
    func prepareForDeletion(of object: ManagedObject) throws(AmberError) {
        var work = [object], seen = Set<ObjectIdentifier>()
        // Bounded by the objects the cascade reaches: each is visited once.
        while let next = work.popLast() {
            guard !next.deletedFlag, seen.insert(ObjectIdentifier(next)).inserted else { continue }
            if let entry = model.logicEntry(for: next.entity) {
                try running("prepareForDeletion", of: next) { try entry.logic.prepareForDeletion(next) }
            }
            for relationship in next.entity.relationships where relationship.deleteRule == .cascade {
                work += try destinations(of: next, relationship)
            }
        }
    }

    /// Fails the save if validators (or hooks they set off, such as
    /// `awakeFromFetch`) inserted, deleted or changed an object the save had
    /// not listed: it would be left out of the write, or taken as written.
    func checkValidatorsChangedNothing(_ changes: ChangeSet<ManagedObject>) throws(AmberError) {
        let listed = changes.inserts.count + changes.updates.count + changes.deletes.count
        let due = pending.filter(\.hasChanges)
        guard due.count != listed else { return }
        let known = Set((changes.inserts + changes.updates + changes.deletes).map(ObjectIdentifier.init))
        let object = due.first { !known.contains(ObjectIdentifier($0)) } ?? due.last
        throw .hookFailed(object: object?.objectID, hook: "validate",
                          message: "validators may only check: one inserted, deleted or changed an object the save had not listed "
                              + "(make changes in willSave); nothing was saved")
    }

    /// Calls `hook` on each of `objects` that has logic.
    func tell(_ objects: [ManagedObject], _ hook: (any ObjectLogic, ManagedObject) -> Void) {
        if model.code.isEmpty { return }
        for object in objects {
            guard let entry = model.logicEntry(for: object.entity) else { continue }
            withinHook { hook(entry.logic, object) }
        }
    }

    /// Runs `body`, a hook of `object`, turning an error it throws into ``/AmberValues/AmberError/hookFailed(object:hook:message:)``.
    func running(_ hook: String, of object: ManagedObject, _ body: () throws -> Void) throws(AmberError) {
        do {
            try withinHook(body)
        } catch let error as AmberError {
            throw error
        } catch {
            throw .hookFailed(object: object.objectID, hook: hook, message: "\(error)")
        }
    }

    /// Runs `body` as a hook: a save it starts is refused (see `hookDepth`).
    func withinHook<E: Error>(_ body: () throws(E) -> Void) throws(E) {
        hookDepth += 1
        defer { hookDepth -= 1 }
        try body()
    }
}
