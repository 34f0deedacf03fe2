import AmberValues

/// A function that computes a transient attribute's value from the values
/// of its source attributes (a computed attribute, declared with
/// `computed(by:from:)`). Register it by name in a ``Registry`` before
/// binding a model that names it:
///
/// ```swift
/// try Registry.shared.register(ComputeFunction("publishMonth") { sources in
///     guard case .date(let date) = sources[0] else { return .null }
///     return .string(monthTitle(date))
/// })
/// ```
///
/// The function receives one value per source, in the order the attribute
/// lists them, and returns the attribute's value; the result is checked
/// against the attribute's type or value class on every call. It may run on
/// any thread that reads the attribute, so it must not keep mutable state
/// without synchronising it.
public struct ComputeFunction: Sendable {
    /// The name models use.
    public let name: String
    /// Where it came from ("Swift", "C", "Python", a plugin's path), for messages.
    public let source: String
    private let body: @Sendable ([Value]) throws -> Value

    /// A function named `name`; `body` throws to report that it cannot compute a value.
    public init(_ name: String, source: String = "Swift", _ body: @escaping @Sendable ([Value]) throws -> Value) {
        self.name = name
        self.source = source
        self.body = body
    }

    /// Runs the function for `place` (`Book.publishMonth`).
    ///
    /// - Throws: ``/AmberValues/AmberError/computationFailed(place:function:source:message:)``
    ///   with what the function threw.
    package func compute(_ sources: [Value], place: @autoclosure () -> String) throws(AmberError) -> Value {
        do {
            return try body(sources)
        } catch {
            throw .computationFailed(place: place(), function: name, source: source, message: "failed: \(error)")
        }
    }
}

extension Registry {
    /// Registers `function` under its name, which no other function or
    /// transformer of this registry may have (a computed attribute names
    /// either).
    ///
    /// - Throws: ``/AmberValues/AmberError/duplicateName(kind:name:existing:refused:)``
    ///   naming both sources; ``/AmberValues/AmberError/invalidDeclaration(place:message:)``
    ///   for a name that is not an identifier.
    public func register(_ function: ComputeFunction) throws(AmberError) {
        guard Identifier.isValid(function.name) else {
            throw .invalidDeclaration(place: "function \"\(function.name)\"", message: Identifier.rule)
        }
        try update { (contents) throws(AmberError) in
            if let existing = contents.functions[function.name] {
                throw .duplicateName(kind: "function", name: function.name, existing: existing.source, refused: function.source)
            }
            if let existing = contents.transformers[function.name] {
                throw .duplicateName(kind: "function", name: function.name, existing: "transformer from \(existing.source)",
                                     refused: function.source)
            }
            contents.functions[function.name] = Entry(item: function, source: function.source)
        }
    }

    /// The names of the functions registered here.
    public var functionNames: [String] { snapshot().functions.keys.sorted() }
}
