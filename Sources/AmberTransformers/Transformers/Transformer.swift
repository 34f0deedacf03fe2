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
    /// The class of the values `forward` accepts (``/AmberValues/ValueClass/propertyListName`` for plist-like values).
    public let inputClass: String
    /// The class of the values `forward` returns.
    public let outputClass: String
    /// Where it came from, for error messages: "Swift", "built-in", a plugin's file.
    public let source: String
    let forwardFunction: @Sendable (Value) throws -> Value
    let reverseFunction: (@Sendable (Value) throws -> Value)?
    let forwardBytes: ByteFunction?
    let reverseBytes: ByteFunction?
    /// A plugin transformer's C functions: the byte path calls them without a closure in between.
    let plugin: PluginFunctions?

    /// A conversion between byte forms (struct, opaque and Binary values)
    /// into memory the caller provides: it reads `input` and writes at most
    /// `output.count` bytes to `output`, returning how many it wrote. No
    /// ``/AmberValues/Value`` or `Data` is made per call.
    public typealias ByteFunction = @Sendable (_ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer) throws -> Int

    /// Whether values can be converted back; chains that store values need it.
    public var isReversible: Bool { reverseFunction != nil }

    /// A transformer named `name` from `inputClass` to `outputClass`. Pass
    /// `reverse` to make it reversible. Errors the closures throw are reported
    /// with the transformer's name and the attribute being converted.
    ///
    /// Between byte forms (a struct or opaque class, or Binary) a transformer
    /// may also give `forwardBytes` and `reverseBytes`, the same conversions
    /// on raw bytes: ``CheckedTransformer/forward(bytes:into:)`` calls them
    /// without building values, with the same class and size checks. Without
    /// them the byte calls go through `forward` and `reverse`.
    public init(name: String, from inputClass: String, to outputClass: String, source: String = "Swift",
                forward: @escaping @Sendable (Value) throws -> Value,
                reverse: (@Sendable (Value) throws -> Value)? = nil,
                forwardBytes: ByteFunction? = nil, reverseBytes: ByteFunction? = nil)
    {
        self.init(name: name, from: inputClass, to: outputClass, source: source, forward: forward, reverse: reverse,
                  forwardBytes: forwardBytes, reverseBytes: reverseBytes, plugin: nil)
    }

    /// A plugin's transformer, called through `functions`.
    init(name: String, from inputClass: String, to outputClass: String, source: String, plugin functions: PluginFunctions) {
        let forward = functions.forward
        var reverse: (@Sendable (Value) throws -> Value)?
        if let function = functions.reverse {
            reverse = { value in try functions.call(function, value, customClass: inputClass) }
        }
        self.init(name: name, from: inputClass, to: outputClass, source: source,
                  forward: { value in try functions.call(forward, value, customClass: outputClass) }, reverse: reverse,
                  forwardBytes: nil, reverseBytes: nil, plugin: functions)
    }

    private init(name: String, from inputClass: String, to outputClass: String, source: String,
                 forward: @escaping @Sendable (Value) throws -> Value, reverse: (@Sendable (Value) throws -> Value)?,
                 forwardBytes: ByteFunction?, reverseBytes: ByteFunction?, plugin: PluginFunctions?)
    {
        self.name = name
        self.inputClass = inputClass
        self.outputClass = outputClass
        self.source = source
        self.forwardFunction = forward
        self.reverseFunction = reverse
        self.forwardBytes = forwardBytes
        self.reverseBytes = reverseBytes
        self.plugin = plugin
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
    /// The byte forms of the two classes, for the byte path.
    private let inputForm: ResolvedClass.ByteForm?
    private let outputForm: ResolvedClass.ByteForm?
    /// A thread-safe plugin's byte functions, called with no reference count per call.
    /// Whether `reverse` has a byte function (a plugin's or a Swift one): decided once, asked per lazy decode.
    private let hasReverseBytes: Bool
    private let pluginBytes: PluginBytePath?
    /// The same functions with the sizes they are called with, per direction:
    /// a call is then two size compares, the function and a compare of what
    /// it wrote.
    private let directForward: DirectBytes?
    private let directReverse: DirectBytes?

    /// A thread-safe plugin's byte function between two byte forms, one direction.
    private struct DirectBytes: @unchecked Sendable {  // the plugin declared its functions thread-safe
        let function: PluginFunctions.BytesFunction
        let state: UnsafeMutableRawPointer?
        /// The classes' sizes; nil for a class of any size (Binary).
        let inputSize: Int?
        let outputSize: Int?
    }

    package init(transformer: Transformer, input: ResolvedClass, output: ResolvedClass) {
        self.transformer = transformer
        self.input = input
        self.output = output
        self.inputForm = input.byteForm
        self.outputForm = output.byteForm
        let pluginBytes = PluginBytePath(transformer.plugin)
        self.pluginBytes = pluginBytes
        self.hasReverseBytes = pluginBytes?.reverse != nil || transformer.plugin?.reverseBytes != nil || transformer.reverseBytes != nil
        if let pluginBytes, let inputForm, let outputForm {
            directForward = pluginBytes.forward.map {
                DirectBytes(function: $0, state: pluginBytes.state, inputSize: inputForm.size, outputSize: outputForm.size)
            }
            directReverse = transformer.reverseFunction == nil ? nil : pluginBytes.reverse.map {
                DirectBytes(function: $0, state: pluginBytes.state, inputSize: outputForm.size, outputSize: inputForm.size)
            }
        } else {
            (directForward, directReverse) = (nil, nil)
        }
    }

    package func forward(_ value: Value) throws(TransformerFailure) -> Value {
        try call(transformer.forwardFunction, value, expecting: output, direction: "forward")
    }

    package func reverse(_ value: Value) throws(TransformerFailure) -> Value {
        guard let reverse = transformer.reverseFunction else {
            throw TransformerFailure(transformer: transformer, message: "is not reversible")
        }
        // Back to a fixed-size class through the byte function, as a store decodes: no value
        // is made for the input, and the result is checked against the class's size as ever.
        if hasReverseBytes, inputForm?.size != nil {
            switch value {
            case .binary(let data):
                // Data's withUnsafeBytes rethrows untyped errors: carry the typed one out in a Result.
                let made = data.withUnsafeBytes { bytes in Result { () throws(TransformerFailure) in try reverseToValue(bytes: bytes) } }
                if let made = try made.get() { return made }
            case .custom(let custom):
                if let made = try custom.withUnsafeBytes({ (bytes) throws(TransformerFailure) in try reverseToValue(bytes: bytes) }) {
                    return made
                }
            default:
                break
            }
        }
        return try call(reverse, value, expecting: input, direction: "reverse")
    }

    /// `forward` on bytes: `input` must be a value of the input class (its
    /// size, for a fixed-size class), and the result, written to `output`, is
    /// checked against the output class's size.
    package func forward(bytes input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws(TransformerFailure) -> Int {
        if let direct = directForward, let written = try callDirect(direct, reverse: false, input, output) { return written }
        return try callBytes(reverse: false, input, output)
    }

    /// `reverse` on bytes, checked as ``forward(bytes:into:)`` is.
    package func reverse(bytes input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws(TransformerFailure) -> Int {
        if let direct = directReverse, let written = try callDirect(direct, reverse: true, input, output) { return written }
        guard transformer.reverseFunction != nil else {
            throw TransformerFailure(transformer: transformer, message: "is not reversible")
        }
        return try callBytes(reverse: true, input, output)
    }

    /// `reverse` from stored bytes to a value of a fixed-size input class,
    /// through the transformer's byte function with no `Value` made for the
    /// input; nil if that path does not apply (no byte function, or an
    /// input class without a fixed size), and then the caller uses ``reverse(_:)``.
    package func reverseToValue(bytes input: UnsafeRawBufferPointer) throws(TransformerFailure) -> Value? {
        guard hasReverseBytes, outputForm != nil, let size = inputForm?.size else { return nil }
        return try withUnsafeTemporaryAllocation(byteCount: Swift.max(size, 1), alignment: 16) {
            (buffer) throws(TransformerFailure) -> Value in
            let written = try reverse(bytes: input, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<size]))
            return self.input.value(bytes: UnsafeRawBufferPointer(rebasing: buffer[..<written]))
        }
    }


    /// The byte path either way. The sizes were worked out once, at init, and
    /// the classes are touched only to word an error: the hot path compares
    /// integers and makes no reference count.
    @inline(never)  // the slow path: keeps the direct path's frame small
    private func callBytes(reverse: Bool, _ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer)
        throws(TransformerFailure) -> Int
    {
        let (given, made) = reverse ? (outputForm, inputForm) : (inputForm, outputForm)
        guard let given, let made else {
            throw bytesFailure(reverse, "converts \(from(reverse).name) to \(to(reverse).name), and only struct, opaque and Binary values have bytes")
        }
        if let size = given.size, input.count != size {
            throw bytesFailure(reverse, "was given \(input.count) bytes, but \(from(reverse).name) values have \(size)")
        }
        if let size = made.size, output.count < size {
            throw bytesFailure(reverse, "needs \(size) bytes of output for \(to(reverse).name), the buffer holds \(output.count)")
        }
        // A byte function if there is one: a thread-safe plugin's (no lock, no
        // reference count), a plugin's behind its lock, or a Swift one.
        var called: Int?
        do {
            if let path = pluginBytes, let function = reverse ? path.reverse : path.forward {
                called = try PluginFunctions.invokeBytes(function, path.state, input, output)
            } else if let plugin = transformer.plugin, let function = reverse ? plugin.reverseBytes : plugin.forwardBytes {
                called = try plugin.callBytes(function, input, output)
            } else if let function = reverse ? transformer.reverseBytes : transformer.forwardBytes {
                called = try function(input, output)
            }
        } catch {
            throw bytesFailure(reverse, "failed: \(error)")
        }
        let written: Int
        if let called {
            written = called
        } else {
            written = try callBytesThroughValues(reverse: reverse, input, output)
        }
        try check(written: written, reverse: reverse, size: made.size, output)
        return written
    }

    /// The direct path; nil (nothing called) when the buffers' sizes do not
    /// fit, and then ``callBytes(reverse:_:_:)`` words the error.
    @inline(__always)
    private func callDirect(_ direct: DirectBytes, reverse: Bool, _ input: UnsafeRawBufferPointer,
                            _ output: UnsafeMutableRawBufferPointer) throws(TransformerFailure) -> Int?
    {
        guard input.count == direct.inputSize ?? input.count, output.count >= direct.outputSize ?? 0 else { return nil }
        let written: Int
        do {
            written = try PluginFunctions.invokeBytes(direct.function, direct.state, input, output)
        } catch {
            throw bytesFailure(reverse, "failed: \(error)")
        }
        if written != direct.outputSize ?? written || written < 0 || written > output.count {
            try check(written: written, reverse: reverse, size: direct.outputSize, output)
        }
        return written
    }

    /// What a byte function says it wrote must fit the buffer and the class's size.
    private func check(written: Int, reverse: Bool, size: Int?, _ output: UnsafeMutableRawBufferPointer) throws(TransformerFailure) {
        guard written >= 0, written <= output.count else {
            throw bytesFailure(reverse, "reported \(written) bytes written to a buffer of \(output.count)")
        }
        if let size, written != size {
            throw bytesFailure(reverse, "returned \(written) bytes, but it declares \(to(reverse).name) (\(size) bytes)")
        }
    }

    private func from(_ reverse: Bool) -> ResolvedClass { reverse ? output : input }
    private func to(_ reverse: Bool) -> ResolvedClass { reverse ? input : output }

    /// The byte path of a transformer that has only value functions: a value
    /// from the bytes, the checked call, its bytes copied out.
    private func callBytesThroughValues(reverse: Bool, _ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer)
        throws(TransformerFailure) -> Int
    {
        let (from, to) = (from(reverse), to(reverse))
        guard let function = reverse ? transformer.reverseFunction : transformer.forwardFunction else {
            throw TransformerFailure(transformer: transformer, message: "is not reversible")
        }
        let result = try call(function, from.value(bytes: input), expecting: to, direction: reverse ? "reverse" : "forward")
        guard let bytes = result.bytes else { throw bytesFailure(reverse, "returned \(result.className) \(result)") }
        guard bytes.count <= output.count else {
            throw bytesFailure(reverse, "made \(bytes.count) bytes, the buffer holds \(output.count)")
        }
        // An empty result may meet a NULL buffer of capacity 0: copy only bytes that exist.
        bytes.withUnsafeBytes { source in
            if let base = source.baseAddress, let target = output.baseAddress { target.copyMemory(from: base, byteCount: source.count) }
        }
        return bytes.count
    }

    private func bytesFailure(_ reverse: Bool, _ message: String) -> TransformerFailure {
        TransformerFailure(transformer: transformer, message: "\(reverse ? "reverse" : "forward") \(message)")
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
        // A value turned into nil would be saved as no value at all: lost in silence.
        if result.isNull, !value.isNull {
            throw TransformerFailure(transformer: transformer, message: "\(direction) returned nil for a \(value.className) value")
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
            guard value.valueClass == c else { return "\(value.className) \(value)" }
            return value.storageProblem().map { "\(value.className) \(value), but \($0)" }
        case .propertyList:
            guard value.isPropertyList else { return "\(value.className) \(value), which is not plist-like" }
            return value.storageProblem().map { "\(value.className) \(value), but \($0)" }
        case .structure(let s):
            guard case .custom(let custom) = value, custom.className == s.name else { return "\(value.className) \(value)" }
            return custom.count == s.size ? nil : "\(s.name) of \(custom.count) bytes (sizeof \(s.name) is \(s.size))"
        case .opaque(let o):
            guard case .custom(let custom) = value, custom.className == o.name else { return "\(value.className) \(value)" }
            if let size = o.size, custom.count != size { return "\(o.name) of \(custom.count) bytes (\(size) expected)" }
            return nil
        }
    }

    /// The values of a struct, opaque or Binary class are bytes; `size` is
    /// their fixed count (nil: any).
    struct ByteForm {
        let size: Int?
    }

    /// This class's byte form; nil for classes whose values are not bytes.
    var byteForm: ByteForm? {
        switch self {
        case .structure(let s): ByteForm(size: s.size)
        case .opaque(let o): ByteForm(size: o.size)
        case .builtin(.binary): ByteForm(size: nil)
        default: nil
        }
    }

    /// A value of this byte-form class holding a copy of `bytes`.
    func value(bytes: UnsafeRawBufferPointer) -> Value {
        if case .builtin = self { return .binary(Data(bytes)) }
        return .custom(CustomValue(className: name, copying: bytes))
    }

    /// Whether a transformer accepting `self` accepts values of `other` too.
    package func accepts(_ other: ResolvedClass) -> Bool {
        if name == other.name { return true }
        guard case .propertyList = self, case .builtin(let c) = other else { return false }
        return Value.propertyListClasses.contains(c)
    }
}

extension Value {
    /// The bytes of a Binary or custom value.
    var bytes: Data? {
        switch self {
        case .binary(let data): data
        case .custom(let custom): custom.bytes
        default: nil
        }
    }

    /// The built-in classes whose values are plist-like.
    static let propertyListClasses: Set<ValueClass> = [.null, .boolean, .integer, .double, .float, .string, .binary,
                                                       .date, .uuid, .array, .dictionary]
}
