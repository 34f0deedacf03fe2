import AmberValues

/// A registered transformer, ready to call outside a store with the checks a
/// store applies: every result must be of the class (and size) the
/// transformer declares.
public struct CheckedTransformer: Sendable {
    let bound: BoundTransformer

    /// The transformer's name.
    public var name: String { bound.transformer.name }

    /// Converts `value` from the input class to the output class.
    ///
    /// - Throws: ``/AmberValues/AmberError/transformerFailed(place:transformer:source:message:)``
    ///   for a value of another class (nothing is called) or a failed call.
    public func forward(_ value: Value) throws(AmberError) -> Value {
        // Nil stays nil without a call, as in a store: no transformer ever sees a missing value.
        if value.isNull { return .null }
        return try named { () throws(TransformerFailure) in
            try check(value, is: bound.input, direction: "forward")
            return try bound.forward(value)
        }
    }

    /// Converts the bytes of a value of the input class (a struct, opaque or
    /// Binary class) into `output`, without building values, and returns the
    /// number of bytes written. `input` must have the input class's size, the
    /// buffer room for the output class's; the result is checked against it.
    ///
    /// - Throws: ``/AmberValues/AmberError/transformerFailed(place:transformer:source:message:)``
    ///   naming what did not fit, or the transformer's own failure.
    public func forward(bytes input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws(AmberError) -> Int {
        try named { () throws(TransformerFailure) in try bound.forward(bytes: input, into: output) }
    }

    /// ``forward(bytes:into:)`` in the other direction.
    public func reverse(bytes input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws(AmberError) -> Int {
        try named { () throws(TransformerFailure) in try bound.reverse(bytes: input, into: output) }
    }

    /// Runs a call, naming this transformer as the place of its failure.
    @inline(__always)
    private func named<T>(_ body: () throws(TransformerFailure) -> T) throws(AmberError) -> T {
        do throws(TransformerFailure) {
            return try body()
        } catch {
            throw error.error(at: name)
        }
    }

    /// A store checks values against the attribute's class when they are set;
    /// a direct call checks its argument here, before the transformer sees it.
    private func check(_ value: Value, is expected: ResolvedClass, direction: String) throws(TransformerFailure) {
        if let mismatch = expected.mismatch(value) {
            throw TransformerFailure(transformer: bound.transformer,
                                     message: "\(direction) takes \(expected.name), not \(mismatch); nothing was called")
        }
    }

    /// The input class's name.
    public var inputClass: String { bound.input.name }
    /// The output class's name.
    public var outputClass: String { bound.output.name }
    /// The byte size of every input value (struct and fixed-size opaque classes); nil otherwise.
    public var inputSize: Int? { bound.input.byteForm?.size }
    /// The byte size of every output value (struct and fixed-size opaque classes); nil otherwise.
    public var outputSize: Int? { bound.output.byteForm?.size }

    /// Converts `value` back from the output class to the input class.
    public func reverse(_ value: Value) throws(AmberError) -> Value {
        if value.isNull { return .null }
        return try named { () throws(TransformerFailure) in
            try check(value, is: bound.output, direction: "reverse")
            return try bound.reverse(value)
        }
    }
}

extension Registry {
    /// The transformer named `name`, with its classes resolved.
    ///
    /// - Throws: ``/AmberValues/AmberError/unknownTransformer(name:suggestion:)`` with the
    ///   nearest name; ``/AmberValues/AmberError/invalidDeclaration(place:message:)`` if it
    ///   names a value class that is not declared.
    public func transformer(named name: String) throws(AmberError) -> CheckedTransformer {
        let scope = ClassScope(registry: snapshot())
        guard let entry = scope.transformers[name] else {
            throw .unknownTransformer(name: name, suggestion: nearestName(to: name, in: scope.transformers.keys.sorted()))
        }
        let transformer = entry.item
        guard let input = scope.resolve(transformer.inputClass), let output = scope.resolve(transformer.outputClass) else {
            throw .invalidDeclaration(place: "transformer \"\(name)\"", message: "names a value class that is not declared")
        }
        return CheckedTransformer(bound: BoundTransformer(transformer: transformer, input: input, output: output))
    }
}
