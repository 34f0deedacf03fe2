import AmberModel
import AmberValues

/// The model logic of a class in use (`Model.use(_:)`): each
/// call makes the object as that class and calls its override.
final class TypedLogic: ObjectLogic {
    let type: TypedObject.Type

    init(_ type: TypedObject.Type) { self.type = type }

    /// `object` as the class. Checked for the entity and every entity below it when the class was put in use.
    private func view(_ object: ManagedObject) throws(AmberError) -> TypedObject { try type.resolved(for: object.entity).make(object) }

    func awakeFromInsert(_ object: ManagedObject) { (try? view(object))?.awakeFromInsert() }
    func awakeFromFetch(_ object: ManagedObject) { (try? view(object))?.awakeFromFetch() }
    func didSave(_ object: ManagedObject) { (try? view(object))?.didSave() }
    func didTurnIntoFault(_ object: ManagedObject) { (try? view(object))?.didTurnIntoFault() }
    func willSave(_ object: ManagedObject) throws { try view(object).willSave() }
    func prepareForDeletion(_ object: ManagedObject) throws { try view(object).prepareForDeletion() }

    func validateValue(_ value: Value, for attribute: Attribute, of object: ManagedObject) throws {
        try view(object).validateValue(value, forKey: attribute.name)
    }

    func validate(_ object: ManagedObject, for change: ObjectChange) throws {
        let typed = try view(object)
        switch change {
        case .insert: try typed.validateForInsert()
        case .update: try typed.validateForUpdate()
        case .delete: try typed.validateForDelete()
        }
    }
}

extension Model {
    /// Puts `classes` in use: each is the class its entity's objects come as
    /// (typed fetches of a superclass too), and its model logic (the hooks
    /// of ``TypedObject`` it overrides) runs for its entity's objects in
    /// every context on this model, and for those of the entities below
    /// that have no class in use. Pass subclasses of generated classes that
    /// hold model logic: `try model.use(LoggedBook.self)`.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidDeclaration(place:message:)`` for a class
    ///   whose entity the model lacks, or that does not fit it or an entity below it; nothing is put in use then.
    public func use(_ classes: TypedObject.Type...) throws(AmberError) {
        var checked: [(TypedObject.Type, Entity)] = []
        for type in classes {
            guard !type.entityName.isEmpty, let entity = try? entity(named: type.entityName) else {
                throw .invalidDeclaration(place: "class \(type)", message: "reads \(type.entityName.isEmpty ? "no entity" : type.entityName + " objects"); the model has no such entity")
            }
            // Resolved for every entity it may run for now, so no hook finds a misfit later.
            for below in entity.subentityIndices.map({ entities[$0] }) { _ = try type.resolved(for: below) }
            checked.append((type, entity))
        }
        for (type, entity) in checked { try setLogic(TypedLogic(type), for: entity) }
    }

}

extension Entity {
    /// The class put in use for this entity itself, if any.
    var classInUse: TypedObject.Type? { ((codeSlot.own as? LogicEntry)?.logic as? TypedLogic)?.type }
}
