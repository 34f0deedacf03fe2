import Foundation

/// Checks a model description as a whole and lists every problem, so a
/// model author fixes them all in one pass.
enum ModelChecker {
    static func problems(in model: ModelDescription, scope: ClassScope) -> [ModelProblem] {
        var problems: [ModelProblem] = []
        if model.entities.isEmpty {
            problems.append(ModelProblem(place: "model", message: "has no entities"))
        }
        var seenEntities: Set<String> = []
        for entity in model.entities {
            if let issue = nameIssue(entity.name, kind: "entity") {
                problems.append(ModelProblem(place: entity.name.isEmpty ? "entity" : entity.name, message: issue))
            } else if entity.name.lowercased().hasPrefix("sqlite_") {
                problems.append(ModelProblem(place: entity.name, message: "entity names starting with sqlite_ are reserved"))
            }
            if !seenEntities.insert(entity.name.lowercased()).inserted {
                problems.append(ModelProblem(place: entity.name, message: "duplicate entity name (names are case-insensitive)"))
            }
            problems += entityProblems(entity, scope: scope)
        }
        return problems
    }

    private static func entityProblems(_ entity: EntityDescription, scope: ClassScope) -> [ModelProblem] {
        var problems: [ModelProblem] = []
        if entity.attributes.isEmpty {
            problems.append(ModelProblem(place: entity.name, message: "has no attributes"))
        }
        var seen: Set<String> = []
        for attribute in entity.attributes {
            let place = "\(entity.name).\(attribute.name)"
            if let issue = nameIssue(attribute.name, kind: "attribute") {
                problems.append(ModelProblem(place: place, message: issue))
            }
            // Column names are case-insensitive in SQLite.
            if !seen.insert(attribute.name.lowercased()).inserted {
                problems.append(ModelProblem(place: place, message: "duplicate attribute name (names are case-insensitive)"))
            }
            problems += attributeProblems(attribute, place: place)
        }
        let byName = Dictionary(entity.attributes.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var storageUsers: [String: String] = [:]
        for attribute in entity.attributes {
            let place = "\(entity.name).\(attribute.name)"
            if let storage = attribute.storageAttribute {
                if let other = storageUsers[storage] {
                    problems.append(ModelProblem(place: place, message: "storage \(entity.name).\(storage) already keeps \(entity.name).\(other)'s encoded form"))
                }
                storageUsers[storage] = attribute.name
            }
            let binding = TransformBinding.bind(attribute, place: place, scope: scope, problems: &problems)
            problems += transformProblems(attribute, binding, place: place, entity: entity.name, byName: byName)
        }
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
        return problems
    }

    private static func attributeProblems(_ attribute: AttributeDescription, place: String) -> [ModelProblem] {
        var problems: [ModelProblem] = []
        func problem(_ message: String) { problems.append(ModelProblem(place: place, message: message)) }
        let type = attribute.type
        switch type {
        case .objectID:
            problem("type objectID needs relationships, which this version does not support yet")
        case .undefined where !attribute.isTransient:
            problem("type undefined is only allowed for transient attributes")
        default:
            break
        }
        if attribute.isTransient && attribute.isIndexed {
            problem("a transient attribute has no column and cannot be indexed")
        }
        if let value = attribute.defaultValue, type != .transformable, type != .undefined {
            do throws(AmberError) {
                _ = try type.coerce(value, place: place)
            } catch {
                problem("default value: \(error)")
            }
        }
        let rules = attribute.validation
        for (label, bound) in [("minValue", rules.minValue), ("maxValue", rules.maxValue)] {
            guard let bound else { continue }
            guard type.isNumeric || type == .date else {
                problem("\(label) applies to numbers and dates, not to \(type)")
                continue
            }
            do throws(AmberError) {
                _ = try type.coerce(bound, place: place)
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
                _ = try Pattern(pattern)
            } catch {
                problem("pattern \"\(pattern)\" is not a valid regular expression")
            }
        }
        return problems
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

    /// Names become SQL identifiers and C strings: a letter, then letters, digits or underscores.
    private static func nameIssue(_ name: String, kind: String) -> String? {
        guard let first = name.unicodeScalars.first else { return "\(kind) name is empty" }
        let isASCIILetter = { (c: Unicode.Scalar) in (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") }
        guard isASCIILetter(first),
              name.unicodeScalars.allSatisfy({ isASCIILetter($0) || ($0 >= "0" && $0 <= "9") || $0 == "_" })
        else {
            return "\(kind) name \"\(name)\" must start with a letter and use only letters, digits and _"
        }
        return nil
    }
}

/// Orders values of the same comparable class (numbers across classes).
enum ValueOrder {
    static func compare(_ a: Value, _ b: Value) -> ComparisonResult? {
        func order<T: Comparable>(_ x: T, _ y: T) -> ComparisonResult {
            x < y ? .orderedAscending : (x == y ? .orderedSame : .orderedDescending)
        }
        switch (a, b) {
        case (.int(let x), .int(let y)): return order(x, y)
        case (.date(let x), .date(let y)): return order(x, y)
        case (.string(let x), .string(let y)): return order(x, y)
        case (.decimal(let x), .decimal(let y)): return order(x, y)
        case (.decimal(let x), .int(let y)): return order(x, Decimal(y))
        case (.int(let x), .decimal(let y)): return order(Decimal(x), y)
        default:
            guard let x = a.numericDouble, let y = b.numericDouble else { return nil }
            return order(x, y)
        }
    }
}

extension Value {
    /// The value as a Double, for the numeric classes.
    var numericDouble: Double? {
        switch self {
        case .int(let i): Double(i)
        case .double(let d): d
        case .float(let f): Double(f)
        case .decimal(let d): NSDecimalNumber(decimal: d).doubleValue
        default: nil
        }
    }
}
