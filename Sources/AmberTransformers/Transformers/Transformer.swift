import AmberValues
import Foundation

/// A named, checked conversion from values of one class to another (forward)
/// and, when reversible, back (reverse).
///
/// Amber checks a transformer twice: at bind time, its declared classes
/// must line up along each attribute's chain; at every call, what it returns
/// must be of the class (and, for struct and fixed-size opaque classes, the
/// byte size) it declared. A transformer that lies gets an error, never a
/// stored value.
public struct Transformer: Sendable {
    /// The unique name models refer to.
    public let name: String
    /// The class of the values `forward` accepts (``ValueClass/propertyListName`` for plist-like values).
    public let inputClass: String
    /// The class of the values `forward` returns.
    public let outputClass: String
    /// Where it came from, for error messages: "Swift", "built-in", a plugin's file.
    public let source: String
    let forwardFunction: @Sendable (Value) throws -> Value
    let reverseFunction: (@Sendable (Value) throws -> Value)?

    /// Whether values can be converted back; chains that store values need it.
    public var isReversible: Bool { reverseFunction != nil }

    /// A transformer named `name` from `inputClass` to `outputClass`. Pass
    /// `reverse` to make it reversible. Errors the closures throw are reported
    /// with the transformer's name and the attribute being converted.
    public init(name: String, from inputClass: String, to outputClass: String, source: String = "Swift",
                forward: @escaping @Sendable (Value) throws -> Value,
                reverse: (@Sendable (Value) throws -> Value)? = nil)
    {
        self.name = name
        self.inputClass = inputClass
        self.outputClass = outputClass
        self.source = source
        self.forwardFunction = forward
        self.reverseFunction = reverse
    }
}

/// Why a transformer call failed: it threw, or it returned something other
/// than it declared. ``error(at:)`` and ``problem(objectID:place:)`` are the
/// one conversion to what callers see.
package struct TransformerFailure: Error {
    package let transformer: Transformer
    package let message: String

    /// The error a caller sees, naming the transformer, where it came from and `place` (`Book.cover of <object>`).
    package func error(at place: String) -> AmberError {
        .transformerFailed(place: place, transformer: transformer.name, source: transformer.source, message: message)
    }

    /// The same failure as one problem of a save.
    package func problem(objectID: ObjectID?, place: String) -> SaveProblem {
        SaveProblem(objectID: objectID, place: place, rule: .transformer,
                    message: "transformer \"\(transformer.name)\" (\(transformer.source)) \(message)")
    }
}

/// A transformer together with the resolved classes it converts between, so
/// each call checks its result without a name lookup. A class: chains hold
/// and pass it around with one reference count, not a copy of every field.
package final class BoundTransformer: Sendable {
    package let transformer: Transformer
    let input: ResolvedClass
    let output: ResolvedClass

    package init(transformer: Transformer, input: ResolvedClass, output: ResolvedClass) {
        self.transformer = transformer
        self.input = input
        self.output = output
    }

    package func forward(_ value: Value) throws(TransformerFailure) -> Value {
        try call(transformer.forwardFunction, value, expecting: output, direction: "forward")
    }

    package func reverse(_ value: Value) throws(TransformerFailure) -> Value {
        guard let reverse = transformer.reverseFunction else {
            throw TransformerFailure(transformer: transformer, message: "is not reversible")
        }
        return try call(reverse, value, expecting: input, direction: "reverse")
    }

    private func call(_ function: @Sendable (Value) throws -> Value, _ value: Value, expecting: ResolvedClass,
                      direction: String) throws(TransformerFailure) -> Value
    {
        let result: Value
        do {
            result = try function(value)
        } catch {
            throw TransformerFailure(transformer: transformer, message: "\(direction) failed: \(error)")
        }
        if let mismatch = expecting.mismatch(result) {
            throw TransformerFailure(transformer: transformer,
                                     message: "\(direction) returned \(mismatch), but it declares \(expecting.name)")
        }
        return result
    }
}

/// A value class resolved to what values of it must look like.
package enum ResolvedClass: Sendable {
    case builtin(ValueClass)
    case propertyList
    case structure(StructClass)
    case opaque(OpaqueClass)

    package var name: String {
        switch self {
        case .builtin(let c): c.rawValue
        case .propertyList: ValueClass.propertyListName
        case .structure(let s): s.name
        case .opaque(let o): o.name
        }
    }

    /// nil when `value` is of this class; else a description of what it is.
    /// Null is accepted by every class (an attribute's absent value).
    package func mismatch(_ value: Value) -> String? {
        if value.isNull { return nil }
        switch self {
        case .builtin(let c):
            return value.valueClass == c ? nil : "\(value.className) \(value)"
        case .propertyList:
            return value.isPropertyList ? nil : "\(value.className) \(value), which is not plist-like"
        case .structure(let s):
            guard case .custom(let custom) = value, custom.className == s.name else { return "\(value.className) \(value)" }
            return custom.bytes.count == s.size ? nil : "\(s.name) of \(custom.bytes.count) bytes (sizeof \(s.name) is \(s.size))"
        case .opaque(let o):
            guard case .custom(let custom) = value, custom.className == o.name else { return "\(value.className) \(value)" }
            if let size = o.size, custom.bytes.count != size { return "\(o.name) of \(custom.bytes.count) bytes (\(size) expected)" }
            return nil
        }
    }

    /// Whether a transformer accepting `self` accepts values of `other` too.
    package func accepts(_ other: ResolvedClass) -> Bool {
        if name == other.name { return true }
        guard case .propertyList = self, case .builtin(let c) = other else { return false }
        return Value.propertyListClasses.contains(c)
    }
}

extension Value {
    /// The built-in classes whose values are plist-like.
    static let propertyListClasses: Set<ValueClass> = [.null, .boolean, .integer, .double, .float, .string, .binary,
                                                       .date, .uuid, .array, .dictionary]
}
