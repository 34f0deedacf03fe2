import AmberModel
import AmberValues

/// Model logic in code for one entity's objects: validators and lifecycle
/// hooks, as Core Data's managed object classes hold them. Set it with
/// `Model.setLogic(_:for:)`; it runs in every context on the
/// model, on the thread of the context doing the work, and for the objects
/// of the entities below the entity that have no logic of their own.
///
/// Every method has a default that does nothing; implement those you need.
/// Generated classes implement this for you: override the hooks of
/// ``TypedObject`` instead.
///
/// Validators report problems by throwing ``ValidationError``: the save
/// lists them with every other problem it finds. Any other error a
/// validator, ``willSave(_:)`` or ``prepareForDeletion(_:)`` throws stops
/// the save (or the deletion) at once with
/// ``/AmberValues/AmberError/hookFailed(object:hook:message:)``: nothing
/// is written (or marked deleted), and every pending change stays in the
/// context, those earlier hooks made included.
///
/// Hooks may read and change objects, insert and fetch, with two limits
/// that fail the save with `hookFailed` too: validators only check (one
/// that inserts, deletes or changes an object the save had not listed
/// fails it: make changes in `willSave`), and no hook saves its context.
public protocol ObjectLogic: AnyObject, Sendable {
    /// After `object` was inserted, before the caller sets its values.
    func awakeFromInsert(_ object: ManagedObject)
    /// After `object` first read its saved values in its context: made by a fetch, or a fault given its row.
    func awakeFromFetch(_ object: ManagedObject)
    /// Checks `value` of `attribute`, at a save: every attribute of a new
    /// object, the attributes set since the last save of a changed one.
    func validateValue(_ value: Value, for attribute: Attribute, of object: ManagedObject) throws
    /// Checks `object` as a whole before a save inserts, updates or deletes it.
    func validate(_ object: ManagedObject, for change: ObjectChange) throws
    /// At the start of a save, for each object it inserts, updates or
    /// deletes; changes made here (to any object) are saved in the same
    /// transaction, and objects they touch get `willSave` too.
    func willSave(_ object: ManagedObject) throws
    /// After a save wrote `object` (inserted, updated or deleted; a deleted
    /// object has left its context by then: its ID stays, its values are gone).
    func didSave(_ object: ManagedObject)
    /// When `object` is deleted, before its relationships' delete rules
    /// apply (for objects a cascade deletes too, all before any is marked):
    /// throwing refuses the deletion, and no object is marked.
    func prepareForDeletion(_ object: ManagedObject) throws
    /// When `object`'s values are dropped: `refresh(_:mergeChanges: false)`
    /// of a saved object, a rollback of its changes (or of its insert), or
    /// a save that deleted it. Clear caches here.
    func didTurnIntoFault(_ object: ManagedObject)
}

extension ObjectLogic {
    public func awakeFromInsert(_ object: ManagedObject) {}
    public func awakeFromFetch(_ object: ManagedObject) {}
    public func validateValue(_ value: Value, for attribute: Attribute, of object: ManagedObject) throws {}
    public func validate(_ object: ManagedObject, for change: ObjectChange) throws {}
    public func willSave(_ object: ManagedObject) throws {}
    public func didSave(_ object: ManagedObject) {}
    public func prepareForDeletion(_ object: ManagedObject) throws {}
    public func didTurnIntoFault(_ object: ManagedObject) {}
}

/// What a save does to an object, for ``ObjectLogic/validate(_:for:)``.
public enum ObjectChange: String, Sendable {
    case insert, update, delete
}

/// Problems a validator in code reports: each joins the save's list of
/// problems (rule ``/AmberValues/SaveProblem/Rule/validation``), named by
/// the object and the key, or the entity for a problem of the whole object.
public struct ValidationError: Error, Sendable, CustomStringConvertible {
    /// One problem: the key (attribute or relationship name) it concerns, and what is wrong.
    public struct Problem: Sendable, Equatable {
        /// The attribute or relationship concerned; nil for the whole object
        /// (or, from ``ObjectLogic/validateValue(_:for:of:)``, the attribute checked).
        public var key: String?
        /// A sentence saying what is wrong.
        public var message: String

        /// A problem with `key`, or with the whole object.
        public init(key: String? = nil, _ message: String) {
            self.key = key
            self.message = message
        }
    }

    /// The problems, in the order reported.
    public var problems: [Problem]

    /// One problem.
    public init(key: String? = nil, _ message: String) { problems = [Problem(key: key, message)] }

    /// Several problems at once.
    public init(_ problems: [Problem]) { self.problems = problems }

    public var description: String {
        problems.map { problem in problem.key.map { "\($0): \(problem.message)" } ?? problem.message }.joined(separator: "; ")
    }
}

/// Holds an entity's logic in the model's table (which keeps `AnyObject`s).
final class LogicEntry: Sendable {
    let logic: any ObjectLogic
    init(_ logic: any ObjectLogic) { self.logic = logic }
}

extension Model {
    /// Gives `entity`'s objects `logic` (nil removes it): from now on,
    /// in every context on this model. The entities below `entity` that
    /// have no logic of their own use it too.
    ///
    /// - Throws: ``/AmberValues/AmberError/unknownEntity(name:suggestion:)`` for an entity of another model.
    public func setLogic(_ logic: (any ObjectLogic)?, for entity: Entity) throws(AmberError) {
        guard entity.index < entities.count, entities[entity.index] === entity else {
            throw .unknownEntity(name: "\(entity.name) (of another model)", suggestion: nil)
        }
        code.set(logic.map(LogicEntry.init), for: entity, in: self)
    }

    /// The logic `entity`'s objects run: its own, or its nearest ancestor's.
    public func logic(for entity: Entity) -> (any ObjectLogic)? { logicEntry(for: entity)?.logic }

    @inline(__always)
    func logicEntry(for entity: Entity) -> LogicEntry? {
        if code.isEmpty { return nil }
        return code.code(for: entity) as? LogicEntry
    }
}
