import AmberTransformers
import AmberValues
import Foundation

/// What binding resolved for one attribute; the model is built from it, so
/// nothing is resolved twice and nothing that "cannot fail" is retried.
struct AttributePlan {
    /// The value class and transformer chain (transformable and undefined attributes).
    var binding: TransformBinding?
    /// The default value, coerced to the attribute's type.
    var defaultValue: Value = .null
    /// The compiled `validation.pattern`.
    var pattern: Pattern?
    /// The parsed derivation (checked against the bound model afterwards).
    var derivation: Derivation?
    /// A computed attribute's function and sources.
    var computer: Computer?
}

/// A checked model: the class scope it was bound in and a plan per attribute
/// (`attributes[entity][attribute]`, in description order).
struct BindingPlan {
    let scope: ClassScope
    let attributes: [[AttributePlan]]
    /// `relationships[entity][relationship]`, in effective order.
    let relationships: [[RelationshipPlan]]
    /// Inheritance: parents, roots, subtrees and effective descriptions.
    let hierarchy: Hierarchy
}

/// Checks a model description as a whole and lists every problem, so a
/// model author fixes them all in one pass; a model without problems comes
/// back as the plan it is built from.
enum ModelChecker {
    /// Binds `model` against `registry`'s classes and transformers.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidModel(_:)`` listing every problem.
    static func plan(_ model: ModelDescription, registry: Registry.Contents) throws(AmberError) -> BindingPlan {
        var problems: [ModelProblem] = []
        var scope = ClassScope(registry: registry)
        for description in model.valueClasses {
            do throws(AmberError) {
                try scope.declare(description, source: "the model")
            } catch {
                let message = if case .duplicateName(_, _, let existing, _) = error { "already declared by \(existing)" } else { "\(error)" }
                problems.append(ModelProblem(place: "valueClasses.\(description.name)", message: message))
            }
        }
        if model.entities.isEmpty {
            problems.append(ModelProblem(place: "model", message: "has no entities"))
        }
        var seenEntities: Set<String> = []
        var plans: [[AttributePlan]] = []
        let hierarchy = Hierarchy(model, problems: &problems)
        for (index, entity) in hierarchy.effective.enumerated() {
            if let issue = Identifier.problem(entity.name, kind: "entity") {
                problems.append(ModelProblem(place: entity.name.isEmpty ? "entity" : Identifier.shown(entity.name), message: issue))
            } else if entity.name.lowercased().hasPrefix("sqlite_") {
                problems.append(ModelProblem(place: entity.name, message: "entity names starting with sqlite_ are reserved"))
            }
            if !seenEntities.insert(entity.name.lowercased()).inserted {
                problems.append(ModelProblem(place: entity.name, message: "duplicate entity name (names are case-insensitive)"))
            }
            plans.append(check(entity, inherited: hierarchy.inheritedAttributes[index], scope: scope, problems: &problems))
        }
        let relationships = RelationshipChecker(ModelDescription(entities: hierarchy.effective, valueClasses: model.valueClasses),
                                                hierarchy: hierarchy).plans(problems: &problems)
        guard problems.isEmpty else { throw .invalidModel(problems) }
        return BindingPlan(scope: scope, attributes: plans, relationships: relationships, hierarchy: hierarchy)
    }

    /// Checks an entity's effective description; the first `inherited`
    /// attributes were checked (and are reported) with the entity that declares them.
    private static func check(_ entity: EntityDescription, inherited: Int, scope: ClassScope,
                              problems reported: inout [ModelProblem]) -> [AttributePlan]
    {
        var problems: [ModelProblem] = []
        defer {
            let inheritedPlaces = Set(entity.attributes.prefix(inherited).map { "\(entity.name).\($0.name)" })
            reported += problems.filter { !inheritedPlaces.contains($0.place) }
        }
        // An entity with no properties is allowed, as Core Data allows it: its
        // rows hold only the key, the entity and the version, and its objects
        // still have identities, relationships pointing at them, and sub-entities.
        var plans = [AttributePlan](repeating: AttributePlan(), count: entity.attributes.count)
        var seen: Set<String> = []
        for (index, attribute) in entity.attributes.enumerated() {
            let place = "\(Identifier.shown(entity.name)).\(Identifier.shown(attribute.name))"
            if let issue = Identifier.problem(attribute.name, kind: "attribute") {
                problems.append(ModelProblem(place: place, message: issue))
            }
            // Column names are case-insensitive in SQLite.
            if !seen.insert(attribute.name.lowercased()).inserted {
                problems.append(ModelProblem(place: place, message: "duplicate attribute name (names are case-insensitive)"))
            }
            checkRules(attribute, place: place, plan: &plans[index], problems: &problems)
        }
        let byName = Dictionary(entity.attributes.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var storageUsers: [String: String] = [:]
        for (index, attribute) in entity.attributes.enumerated() {
            let place = "\(entity.name).\(attribute.name)"
            if let storage = attribute.storageAttribute {
                if let other = storageUsers[storage] {
                    problems.append(ModelProblem(place: place, message: "storage \(entity.name).\(storage) already keeps \(entity.name).\(other)'s encoded form"))
                }
                storageUsers[storage] = attribute.name
            }
            let binding = TransformBinding.bind(attribute, place: place, scope: scope, problems: &problems)
            problems += transformProblems(attribute, binding, place: place, entity: entity.name, byName: byName)
            plans[index].binding = binding
        }
        bindComputations(entity, scope: scope, plans: &plans, problems: &problems)
        for (kind, lists) in [("indexes", entity.indexes), ("uniquenessConstraints", entity.uniquenessConstraints)] {
            for (i, names) in lists.enumerated() {
                let place = "\(entity.name).\(kind)[\(i)]"
                if names.isEmpty { problems.append(ModelProblem(place: place, message: "names no attributes")) }
                if Set(names).count != names.count {
                    problems.append(ModelProblem(place: place, message: "names an attribute twice"))
                }
                for name in names {
                    guard let attribute = byName[name] else {
                        problems.append(ModelProblem(
                            place: place,
                            message: "\(entity.name).\(name): no such attribute"
                                + AmberError.hint(nearestName(to: name, in: byName.keys.sorted()))))
                        continue
                    }
                    if attribute.isTransient {
                        problems.append(ModelProblem(place: place, message: "\(entity.name).\(name) is transient and has no column"))
                    }
                }
            }
        }
        return plans
    }

    /// Type, default and validation rules; what they resolve goes into `plan`.
    private static func checkRules(_ attribute: AttributeDescription, place: String, plan: inout AttributePlan,
                                   problems: inout [ModelProblem])
    {
        func problem(_ message: String) { problems.append(ModelProblem(place: place, message: message)) }
        let type = attribute.type
        switch type {
        case .objectID:
            problem("type objectID is not an attribute type; point at other objects with a relationship")
        case .undefined where !attribute.isTransient:
            problem("type undefined is only allowed for transient attributes")
        default:
            break
        }
        if attribute.isTransient && attribute.isIndexed {
            problem("a transient attribute has no column and cannot be indexed")
        }
        if attribute.allowsExternalStorage, type != .binary, type != .transformable {
            problem("external storage is for binary and transformable attributes, not \(type)")
        }
        if let expression = attribute.derivation {
            do throws(Derivation.Problem) {
                plan.derivation = try Derivation(parsing: expression)
            } catch {
                problem("derived expression \"\(expression)\", at \(error.position): \(error.message)")
            }
            let derivable: Set<AttributeType> = [.integer16, .integer32, .integer64, .double, .float, .string, .boolean, .date, .uuid]
            if attribute.isTransient { problem("a derived attribute is stored; it cannot be transient") }
            if !derivable.contains(type) { problem("a derived attribute is a number, string, boolean, date or UUID, not \(type)") }
            if attribute.defaultValue != nil || !attribute.validation.isEmpty || !attribute.isOptional {
                problem("a derived attribute takes no default, validation rules or required flag: the store computes its value")
            }
            if !attribute.transformerNames.isEmpty || attribute.valueClassName != nil || attribute.storageAttribute != nil {
                problem("a derived attribute takes no value class, transformers or storage")
            }
        }
        if attribute.computation != nil {
            if !attribute.isTransient { problem("a computed attribute is transient: its value is never stored") }
            if attribute.derivation != nil { problem("an attribute is either derived (by the store) or computed (by a function), not both") }
            if type == .transformable { problem("a computed attribute is never stored; make it undefined (with a valueClass) to hold values of a custom class") }
            if attribute.defaultValue != nil || !attribute.validation.isEmpty || !attribute.isOptional {
                problem("a computed attribute takes no default, validation rules or required flag: its function gives its value")
            }
            if !attribute.transformerNames.isEmpty || attribute.storageAttribute != nil {
                problem("a computed attribute takes no transformers or storage: its value is never stored")
            }
        }
        if let value = attribute.defaultValue {
            do throws(AmberError) {
                // Transformable and undefined defaults pass through; their class is checked with the binding.
                plan.defaultValue = try type.coerce(value, place: place)
                if value.isNaN, !attribute.isTransient {
                    problem("default value: NaN, which a store cannot keep (SQLite stores NULL)")
                }
            } catch {
                problem("default value: \(error)")
            }
        }
        let rules = attribute.validation
        for (label, written) in [("default value", attribute.defaultValue), ("minValue", rules.minValue), ("maxValue", rules.maxValue)] {
            if let written, !JSONReader.readsBack(written, as: type) {
                problem("\(label): \(written) cannot be written into the model file and read back as the same \(type)")
            }
        }
        for (label, bound) in [("minValue", rules.minValue), ("maxValue", rules.maxValue)] {
            guard let bound else { continue }
            guard type.isNumeric || type == .date else {
                problem("\(label) applies to numbers and dates, not to \(type)")
                continue
            }
            do throws(AmberError) {
                _ = try type.coerce(bound, place: place, storing: false)
            } catch {
                problem("\(label): \(error)")
            }
        }
        if let low = rules.minValue, let high = rules.maxValue,
           let order = ValueOrder.compare(low, high), order == .orderedDescending
        {
            problem("minValue \(low) is greater than maxValue \(high)")
        }
        if rules.minLength != nil || rules.maxLength != nil {
            if type != .string && type != .binary {
                problem("minLength/maxLength apply to strings and binary, not to \(type)")
            }
            if let low = rules.minLength, low < 0 { problem("minLength \(low) is negative") }
            if let low = rules.minLength, let high = rules.maxLength, low > high {
                problem("minLength \(low) is greater than maxLength \(high)")
            }
        }
        if let pattern = rules.pattern {
            if type != .string { problem("pattern applies to strings, not to \(type)") }
            do {
                plan.pattern = try Pattern(pattern)
            } catch {
                problem("pattern \"\(pattern)\" is not a valid regular expression")
            }
        }
        // A default its own rules refuse would make every new object fail its first save.
        if !plan.defaultValue.isNull {
            for (_, message) in Attribute.violations(of: plan.defaultValue, rules: rules, pattern: plan.pattern) {
                problem("default value: \(message)")
            }
        }
    }

    /// Rules for attributes with value classes and transformers, given what binding resolved.
    private static func transformProblems(_ attribute: AttributeDescription, _ binding: TransformBinding?, place: String,
                                          entity: String, byName: [String: AttributeDescription]) -> [ModelProblem]
    {
        var problems: [ModelProblem] = []
        // Other types got one problem for naming a class, transformer or storage at all.
        guard attribute.type == .transformable || attribute.type == .undefined else { return problems }
        func problem(_ message: String) { problems.append(ModelProblem(place: place, message: message)) }
        let hasChain = !(binding?.chain.isEmpty ?? true)
        if (attribute.decodePolicy != .lazy || attribute.encodePolicy != .onSave) && binding != nil && !hasChain {
            problem("decode and encode policies apply to attributes with transformers")
        }
        if let value = attribute.defaultValue, let valueClass = binding?.valueClass, let mismatch = valueClass.mismatch(value) {
            problem("default value: expected \(valueClass.name), given \(mismatch)")
        }
        guard attribute.isTransient else {
            if attribute.storageAttribute != nil {
                problem("storage names where a transient attribute keeps its encoded form; \(place) is not transient")
            }
            return problems
        }
        switch (attribute.storageAttribute, hasChain) {
        case (nil, true):
            problem("a transient attribute with transformers needs storage: the persistent attribute that keeps its encoded form")
        case (let name?, _):
            guard let storage = byName[name] else {
                problem("storage \(entity).\(name): no such attribute" + AmberError.hint(nearestName(to: name, in: byName.keys.sorted())))
                break
            }
            if !hasChain && binding != nil { problem("storage needs transformers to convert between the two attributes") }
            if storage.isTransient { problem("storage \(entity).\(name) is transient; it must be stored") }
            if let stored = binding?.storedType, stored != storage.type {
                problem("storage \(entity).\(name) is \(storage.type), but the chain produces \(stored)")
            }
        default:
            break
        }
        return problems
    }
}
