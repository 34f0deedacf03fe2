import AmberModel
import AmberStore
import AmberTransformers
import AmberValues

/// The rules checked for each inserted or changed object before a save.
enum Validation {
    /// Every rule `object` breaks, in attribute order.
    static func problems(in object: ManagedObject) -> [SaveProblem] {
        var problems: [SaveProblem] = []
        for attribute in object.entity.checkedAttributes {
            func fail(_ rule: SaveProblem.Rule, _ message: String) {
                problems.append(SaveProblem(objectID: object.objectID, place: attribute.description, rule: rule, message: message))
            }
            guard object.hasValue(attribute) else {
                if !attribute.isOptional { fail(.required, "a value is required, found nil") }
                continue
            }
            for (rule, message) in attribute.violations(of: object.slotValue(attribute.slot)) { fail(rule, message) }
        }
        return problems
    }
}
