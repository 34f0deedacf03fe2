import AmberValues

/// The classes and transformers a model can name while it is bound: a
/// registry's, plus value classes declared on top of them (by the model).
package struct ClassScope {
    package private(set) var classes: [String: Registry.Entry<ResolvedClass>]
    package let transformers: [String: Registry.Entry<Transformer>]
    /// The functions computed attributes name.
    package let functions: [String: Registry.Entry<ComputeFunction>]

    /// The registry's classes, transformers and functions, as of `contents`.
    package init(registry contents: Registry.Contents) {
        self.classes = contents.classes
        self.transformers = contents.transformers
        self.functions = contents.functions
    }

    /// Declares a class on top of the registry's, as `source` ("the model").
    ///
    /// - Throws: ``/AmberValues/AmberError/duplicateName(kind:name:existing:refused:)`` for
    ///   a name the registry or an earlier declaration holds;
    ///   ``/AmberValues/AmberError/invalidDeclaration(place:message:)`` for a bad declaration.
    package mutating func declare(_ description: ValueClassDescription, source: String) throws(AmberError) {
        if let existing = classes[description.name] {
            throw .duplicateName(kind: "value class", name: description.name, existing: existing.source, refused: source)
        }
        let known = classes
        let resolved = try ValueClassResolver.resolve(description) { known[$0]?.item }
        classes[description.name] = Registry.Entry(item: resolved, source: source)
    }

    /// A class by name: built-in, the plist pseudo-class, or custom.
    package func resolve(_ name: String) -> ResolvedClass? {
        if name == ValueClass.propertyListName { return .propertyList }
        if let builtin = ValueClass(rawValue: name), builtin != .custom { return .builtin(builtin) }
        return classes[name]?.item
    }

    /// Every class name, for suggestions.
    package var classNames: [String] {
        ValueClass.allCases.filter { $0 != .custom }.map(\.rawValue) + [ValueClass.propertyListName] + classes.keys.sorted()
    }
}
