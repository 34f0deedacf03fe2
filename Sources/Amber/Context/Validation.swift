import AmberModel
import AmberSQLiteStore
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
            let value = object.slotValue(attribute.slot)
            let rules = attribute.validation
            if let minimum = rules.minValue, ValueOrder.compare(value, minimum) == .orderedAscending {
                fail(.minValue, "\(value) is less than the minimum \(minimum)")
            }
            if let maximum = rules.maxValue, ValueOrder.compare(value, maximum) == .orderedDescending {
                fail(.maxValue, "\(value) is greater than the maximum \(maximum)")
            }
            let length: Int? = switch value {
            case .string(let s): s.count
            case .binary(let d): d.count
            default: nil
            }
            let unit = if case .binary = value { "bytes" } else { "characters" }
            if let length, let minimum = rules.minLength, length < minimum {
                fail(.minLength, "\(length) \(unit), fewer than the minimum \(minimum)")
            }
            if let length, let maximum = rules.maxLength, length > maximum {
                fail(.maxLength, "\(length) \(unit), more than the maximum \(maximum)")
            }
            if let pattern = attribute.pattern, case .string(let s) = value, !pattern.matches(s) {
                fail(.pattern, "\(value) does not match the pattern \(pattern.source)")
            }
        }
        return problems
    }
}
