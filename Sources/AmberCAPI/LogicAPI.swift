import Amber
import AmberHeaders
import Foundation

/// An entity's model logic implemented by C callbacks. Its deinit runs
/// `userdata_free` exactly once: when the model drops it and no context is
/// running it any more.
final class CObjectLogic: ObjectLogic, @unchecked Sendable {  // the callbacks' userdata is the caller's to make thread-safe
    let callbacks: amber_object_logic
    let userdata: UnsafeMutableRawPointer?
    let userdataFree: amber_userdata_free_fn?

    init(_ callbacks: amber_object_logic, userdata: UnsafeMutableRawPointer?, userdataFree: amber_userdata_free_fn?) {
        self.callbacks = callbacks
        self.userdata = userdata
        self.userdataFree = userdataFree
    }

    deinit { userdataFree?(userdata) }

    /// A failure of a callback that returned `status`, with what it said through amber_logic_error.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The handle of `object` in its context (a context made through the C API).
    private func handle(_ object: ManagedObject) throws -> OpaquePointer? {
        if object.bindingWord != 0 { return OpaquePointer(bitPattern: object.bindingWord) }
        guard let context = object.hookContext.binding as? CContext else {
            throw Failure(description: "the object's context was not made through the C API, so C logic cannot be given it")
        }
        return context.handle(for: object)
    }

    /// Calls a callback that may fail, turning a nonzero status into an error.
    private func call(_ body: () throws -> Int32) throws {
        let slot = LastError.current
        slot.callbackMessage = nil
        defer { slot.callbackMessage = nil }
        let status = try body()
        guard status == 0 else {
            throw Failure(description: "returned status \(status)" + (slot.callbackMessage.map { ": \($0)" } ?? ""))
        }
    }

    /// Calls a callback that cannot fail; an object it cannot be given is skipped (only outside the C API).
    private func tell(_ object: ManagedObject, _ callback: ((OpaquePointer?, UnsafeMutableRawPointer?) -> Void)?) {
        guard let callback, let handle = try? handle(object) else { return }
        callback(handle, userdata)
    }

    func awakeFromInsert(_ object: ManagedObject) { tell(object, callbacks.awake_from_insert) }
    func awakeFromFetch(_ object: ManagedObject) { tell(object, callbacks.awake_from_fetch) }
    func didSave(_ object: ManagedObject) { tell(object, callbacks.did_save) }
    func didTurnIntoFault(_ object: ManagedObject) { tell(object, callbacks.did_turn_into_fault) }

    func willSave(_ object: ManagedObject) throws {
        guard let callback = callbacks.will_save else { return }
        try call { callback(try handle(object), userdata) }
    }

    func prepareForDeletion(_ object: ManagedObject) throws {
        guard let callback = callbacks.prepare_for_deletion else { return }
        try call { callback(try handle(object), userdata) }
    }

    func validateValue(_ value: Value, for attribute: Attribute, of object: ManagedObject) throws {
        guard let callback = callbacks.validate_value else { return }
        var cValue = amber_value()
        try CValue.write(value, to: &cValue)
        defer { CValue.release(&cValue) }
        try collecting { problems in
            try call { try attribute.name.withCString { key in callback(problems, try handle(object), key, &cValue, userdata) } }
        }
    }

    func validate(_ object: ManagedObject, for change: ObjectChange) throws {
        guard let callback = callbacks.validate else { return }
        let code = switch change {
        case .insert: Int32(AMBER_CHANGE_INSERT)
        case .update: Int32(AMBER_CHANGE_UPDATE)
        case .delete: Int32(AMBER_CHANGE_DELETE)
        }
        try collecting { problems in try call { callback(problems, try handle(object), code, userdata) } }
    }

    /// Runs `body` with a problems handle valid during the call only; the problems it collects are thrown.
    private func collecting(_ body: (OpaquePointer?) throws -> Void) throws {
        let box = CProblems()
        let problems = Handles.make(box, kind: .problems, owner: ThreadMark.currentToken)
        defer { Handles.releaseUnchecked([problems]) }
        try body(problems)
        if !box.problems.isEmpty { throw ValidationError(box.problems) }
    }
}

/// The problems one validator call reports.
final class CProblems {
    var problems: [ValidationError.Problem] = []
}

@c @implementation
public func amber_model_set_logic(_ model: OpaquePointer?, _ entity: OpaquePointer?, _ logic: UnsafePointer<amber_object_logic>?,
                                  _ userdata: UnsafeMutableRawPointer?, _ userdata_free: amber_userdata_free_fn?) -> amber_status
{
    // The version first: it says how much of the struct the caller has (only version 1 exists).
    let version = logic.map { UnsafeRawPointer($0).load(as: UInt32.self) }
    let known = version == UInt32(AMBER_OBJECT_LOGIC_VERSION)
    // From here the box owns userdata: whatever fails below, its deinit frees it exactly once.
    let box = known ? logic.map { CObjectLogic($0.pointee, userdata: userdata, userdataFree: userdata_free) } : nil
    if box == nil { userdata_free?(userdata) }
    return api { () throws(CAPIError) in
        let (wrapper, target): (CModel, CEntity) = try Handles.resolve(model, as: .model, "model", entity, as: .entity, "entity")
        if let version, !known {
            throw CAPIError(AMBER_E_INVALID_VALUE, "logic: version \(version) is not AMBER_OBJECT_LOGIC_VERSION (\(AMBER_OBJECT_LOGIC_VERSION))",
                            origin: "logic")
        }
        guard wrapper.model.entities.indices.contains(target.entity.index), wrapper.model.entities[target.entity.index] === target.entity else {
            throw CAPIError(AMBER_E_NOT_FOUND, "entity: \(target.entity.name) is an entity of another model", origin: "entity")
        }
        try core { () throws(AmberError) in try wrapper.model.setLogic(box, for: target.entity) }
    }
}

@c @implementation
public func amber_problems_add(_ problems: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ message: UnsafePointer<CChar>?) -> amber_status {
    api { () throws(CAPIError) in
        let box: CProblems = try Handles.resolve(problems, as: .problems, "problems")
        let text = try name(message, "message")
        box.problems.append(ValidationError.Problem(key: try optionalName(key, "key"), text))
    }
}

@c @implementation
public func amber_logic_error(_ message: UnsafePointer<CChar>?) {
    guard let message else { return }
    LastError.current.callbackMessage = String(decoding: UnsafeRawBufferPointer(start: message, count: strlen(message)), as: UTF8.self)
}
