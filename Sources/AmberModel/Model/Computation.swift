import AmberTransformers
import AmberValues

/// How a computed attribute gets its value: the function it names (or a
/// transformer's forward direction) over the values of its sources, in
/// slot order. Bound once with the model; contexts call ``compute(_:for:)``.
package struct Computer: Sendable {
    /// The slots of the source attributes, in the order the function takes them.
    package let sourceSlots: [Int]
    private let evaluator: Evaluator

    enum Evaluator: Sendable {
        case function(ComputeFunction)
        case transformer(BoundTransformer)
    }

    init(sourceSlots: [Int], evaluator: Evaluator) {
        self.sourceSlots = sourceSlots
        self.evaluator = evaluator
    }

    /// The value of `attribute` for source values `inputs`, checked against
    /// the attribute's type or value class.
    ///
    /// - Throws: ``/AmberValues/AmberError/computationFailed(place:function:source:message:)``
    ///   for a function that failed or returned a value the attribute cannot
    ///   hold; ``/AmberValues/AmberError/transformerFailed(place:transformer:source:message:)``
    ///   for a transformer.
    package func compute(_ inputs: [Value], for attribute: Attribute) throws(AmberError) -> Value {
        let result: Value
        let name: String, source: String
        switch evaluator {
        case .function(let function):
            (name, source) = (function.name, function.source)
            result = try function.compute(inputs, place: attribute.description)
        case .transformer(let transformer):
            (name, source) = (transformer.transformer.name, transformer.transformer.source)
            // As in a store, a transformer never sees a missing value.
            guard let input = inputs.first, !input.isNull else { return .null }
            do throws(TransformerFailure) {
                result = try transformer.forward(input)
            } catch {
                throw error.error(at: attribute.description)
            }
        }
        do throws(AmberError) {
            return try attribute.check(result)
        } catch .invalidValue(_, let expected, let given) {
            throw .computationFailed(place: attribute.description, function: name, source: source,
                                     message: "returned \(given), but the attribute holds \(expected)")
        }
    }
}

extension ModelChecker {
    /// Binds the computed attributes of `entity` (its effective description):
    /// each source an attribute of the entity that is not computed itself,
    /// the function registered in `scope` (a transformer serves for one
    /// source whose class it takes, if it gives the attribute's class).
    /// Problems are appended, each placed as `Entity.attribute`.
    static func bindComputations(_ entity: EntityDescription, scope: ClassScope, plans: inout [AttributePlan],
                                 problems: inout [ModelProblem])
    {
        let slots = Dictionary(entity.attributes.enumerated().map { ($0.element.name, $0.offset) }, uniquingKeysWith: { first, _ in first })
        for (index, attribute) in entity.attributes.enumerated() {
            guard let computation = attribute.computation else { continue }
            let place = "\(entity.name).\(attribute.name)"
            func problem(_ message: String) { problems.append(ModelProblem(place: place, message: message)) }
            var sourceSlots: [Int] = []
            if computation.sources.isEmpty { problem("a computed attribute needs at least one source attribute") }
            for name in computation.sources {
                guard let slot = slots[name] else {
                    problem("source \(entity.name).\(name): no such attribute" + AmberError.hint(nearestName(to: name, in: slots.keys.sorted())))
                    continue
                }
                if slot == index {
                    problem("a computed attribute cannot be its own source")
                } else if entity.attributes[slot].computation != nil {
                    problem("source \(entity.name).\(name) is computed itself; name its sources instead")
                } else if sourceSlots.contains(slot) {
                    problem("source \(entity.name).\(name) is named twice")
                }
                sourceSlots.append(slot)
            }
            let function = computation.function
            if let entry = scope.functions[function] {
                plans[index].computer = Computer(sourceSlots: sourceSlots, evaluator: .function(entry.item))
            } else if let entry = scope.transformers[function] {
                let transformer = entry.item
                guard sourceSlots.count == 1 else {
                    problem("transformer \"\(function)\" computes from one source, not \(computation.sources.count)")
                    continue
                }
                let source = entity.attributes[sourceSlots[0]]
                guard let input = scope.resolve(transformer.inputClass), let output = scope.resolve(transformer.outputClass) else {
                    problem("transformer \"\(function)\" (\(entry.source)) names a class that does not exist")
                    continue
                }
                guard let given = valueClass(of: source, scope: scope), let wanted = valueClass(of: attribute, scope: scope) else {
                    let vague = valueClass(of: source, scope: scope) == nil ? "\(entity.name).\(source.name)" : place
                    problem("transformer \"\(function)\" needs classes to check, but \(vague) may hold any value (give it a valueClass)")
                    continue
                }
                guard input.accepts(given) else {
                    problem("transformer \"\(function)\" takes \(input.name) but \(entity.name).\(source.name) holds \(given.name)")
                    continue
                }
                guard wanted.accepts(output) else {
                    problem("transformer \"\(function)\" gives \(output.name) but \(place) holds \(wanted.name)")
                    continue
                }
                plans[index].computer = Computer(sourceSlots: sourceSlots,
                                                 evaluator: .transformer(BoundTransformer(transformer: transformer, input: input, output: output)))
            } else {
                let known = scope.functions.keys.sorted() + scope.transformers.keys.sorted()
                problem("function \"\(function)\": no such function or transformer is registered" + AmberError.hint(nearestName(to: function, in: known)))
            }
        }
    }

    /// The class of `attribute`'s values, as transformers name classes; nil for an undefined attribute of any class.
    private static func valueClass(of attribute: AttributeDescription, scope: ClassScope) -> ResolvedClass? {
        if let name = attribute.valueClassName { return scope.resolve(name) }
        let builtin: ValueClass
        switch attribute.type {
        case .integer16, .integer32, .integer64: builtin = .integer
        case .decimal: builtin = .decimal
        case .double: builtin = .double
        case .float: builtin = .float
        case .string: builtin = .string
        case .boolean: builtin = .boolean
        case .date: builtin = .date
        case .binary: builtin = .binary
        case .uuid: builtin = .uuid
        case .uri: builtin = .uri
        case .transformable: return .propertyList
        case .undefined, .objectID: return nil
        }
        return .builtin(builtin)
    }
}

extension Entity {
    /// `keys` (attribute and relationship names) with the computed attributes
    /// whose sources are among them, in model order.
    package func addingComputedDependents(to keys: [String]) -> [String] {
        var names = Set(keys)
        for attribute in computedAttributes where attribute.computation?.sources.contains(where: names.contains) ?? false {
            names.insert(attribute.name)
        }
        guard names.count > keys.count else { return keys }
        return reportOrder(names)
    }

    /// `keys` as change reports list them: attributes and relationships in
    /// model order, then extended attributes, sorted.
    package func reportOrder(_ keys: Set<String>) -> [String] {
        let modelled = (attributes.map(\.name) + relationships.map(\.name)).filter(keys.contains)
        return modelled + keys.subtracting(modelled).sorted()
    }
}
