import AmberTransformers
import AmberValues

/// What binding decided for an attribute that has a value class or transformers.
struct TransformBinding {
    /// The class values must have when set (nil: any value).
    let valueClass: ResolvedClass?
    /// The chain, first link first; empty for an undefined attribute with no transformers.
    let chain: [BoundTransformer]
    /// The storable type at the end of the chain (the column's type).
    let storedType: AttributeType?

    /// The storable classes a chain may end in, and the column type each gives.
    static let storable: [ValueClass: AttributeType] = [.binary: .binary, .string: .string, .integer: .integer64, .double: .double]

    /// Binds `attribute`'s value class and chain in `scope`; appends every problem found.
    static func bind(_ attribute: AttributeDescription, place: String, scope: ClassScope,
                     problems: inout [ModelProblem]) -> TransformBinding?
    {
        func problem(_ message: String) { problems.append(ModelProblem(place: place, message: message)) }
        let takesTransforms = attribute.type == .transformable || attribute.type == .undefined
        guard takesTransforms else {
            if attribute.valueClassName != nil || !attribute.transformerNames.isEmpty || attribute.storageAttribute != nil {
                problem("valueClass, transformer and storage apply to transformable and undefined attributes, not to \(attribute.type)")
            }
            return nil
        }
        var valueClass: ResolvedClass?
        if let name = attribute.valueClassName {
            valueClass = scope.resolve(name)
            if valueClass == nil {
                let suggestion = nearestName(to: name, in: scope.classNames)
                problem("\(name): no such value class" + (suggestion.map { AmberError.hint($0) } ?? Self.howToDeclare))
                return nil
            }
        } else if attribute.type == .transformable {
            valueClass = .propertyList
        }
        var names = attribute.transformerNames
        if attribute.type == .transformable && names.isEmpty { names = [Registry.archiveTransformerName] }
        if attribute.type == .undefined && names.isEmpty { return TransformBinding(valueClass: valueClass, chain: [], storedType: nil) }

        var chain: [BoundTransformer] = []
        var current = valueClass ?? .propertyList
        var failed = false
        for (link, name) in names.enumerated() {
            guard let entry = scope.transformers[name] else {
                // A near name is most likely a misspelling; otherwise say how to supply the transformer.
                let suggestion = nearestName(to: name, in: scope.transformers.keys.sorted())
                problem("\(name): no such transformer" + (suggestion.map { AmberError.hint($0) } ?? Self.howToSupply(name)))
                failed = true
                continue
            }
            let transformer = entry.item
            guard let input = scope.resolve(transformer.inputClass), let output = scope.resolve(transformer.outputClass) else {
                let missing = scope.resolve(transformer.inputClass) == nil ? transformer.inputClass : transformer.outputClass
                problem("transformer \"\(name)\" (\(entry.source)) names \(missing): no such value class"
                        + AmberError.hint(nearestName(to: missing, in: scope.classNames)))
                failed = true
                continue
            }
            if !failed && !input.accepts(current) {
                problem("link \(link + 1), transformer \"\(name)\" takes \(input.name) but receives \(current.name)"
                        + (link == 0 ? " (the attribute's value class)" : " from \"\(names[link - 1])\""))
                failed = true
            }
            if !transformer.isReversible {
                problem("transformer \"\(name)\" is not reversible, so stored values could never be read back")
                failed = true
            }
            chain.append(BoundTransformer(transformer: transformer, input: input, output: output))
            current = output
        }
        guard !failed else { return nil }
        guard case .builtin(let end) = current, let storedType = storable[end] else {
            problem("the chain ends in \(current.name), which cannot be stored; it must end in Binary, String, Integer or Double")
            return nil
        }
        return TransformBinding(valueClass: valueClass, chain: chain, storedType: storedType)
    }

    /// How to give a model a value class it names that nobody declared.
    static let howToDeclare = "; declare it before binding the model: in the model file's valueClasses, with Registry.declare(_:), "
        + "amber_registry_declare_struct or amber_registry_declare_opaque, registry.declare_struct or registry.declare_opaque, "
        + "or by loading the plugin that provides it (amber --plugin FILE)"

    /// How to give a model the transformer `name` it names: register one
    /// before binding, or read an Xcode archive transformer as Amber's own.
    static func howToSupply(_ name: String) -> String {
        "; register one before binding the model: a plugin (amber --plugin FILE, Registry.loadPlugin(at:), amber_registry_load_plugin, "
            + "registry.load_plugin) or a transformer written in Swift, C or Python. If \(name) subclasses "
            + "NSSecureUnarchiveFromDataTransformer, Amber's keyed archive reads it: import the Xcode model with --secure-unarchiver \(name) "
            + "(XcodeImportOptions.secureUnarchiverSubclasses), or give the amber CLI --transformer \(name)=archive (=binary hands over "
            + "the stored bytes); the archive takes PropertyList values: numbers, strings, dates, data, arrays and dictionaries of them"
    }
}
