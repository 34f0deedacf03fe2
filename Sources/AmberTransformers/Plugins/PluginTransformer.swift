import AmberPluginABI
import AmberValues
import Foundation

/// A plugin transformer's function pointers and state. Its deinit calls the
/// plugin's destroy, once, when no registry or model uses the transformer.
final class PluginFunctions: @unchecked Sendable {
    typealias Function = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<amber_plugin_value>?,
                                         UnsafeMutablePointer<amber_plugin_value>?) -> Int32
    typealias BytesFunction = @convention(c) (UnsafeMutableRawPointer?, UnsafeRawPointer?, Int, UnsafeMutableRawPointer?, Int,
                                              UnsafeMutablePointer<Int>?) -> Int32
    let forward: Function
    let reverse: Function?
    let forwardBytes: BytesFunction?
    let reverseBytes: BytesFunction?
    let destroy: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?
    let state: UnsafeMutableRawPointer?
    let isThreadSafe: Bool
    /// Serializes calls of a transformer that is not thread-safe.
    private let lock: NSLock?
    init(forward: Function, reverse: Function?, forwardBytes: BytesFunction?, reverseBytes: BytesFunction?,
         destroy: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?, state: UnsafeMutableRawPointer?, threadSafe: Bool)
    {
        self.forward = forward
        self.reverse = reverse
        self.forwardBytes = forwardBytes
        self.reverseBytes = reverseBytes
        self.destroy = destroy
        self.state = state
        self.isThreadSafe = threadSafe
        self.lock = threadSafe ? nil : NSLock()
    }

    deinit { destroy?(state) }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Calls `function` on `input`; copies the result as a value (custom
    /// values get `customClass`) and releases the plugin's copy once. For a
    /// transformer that is not thread-safe the lock covers the copy and the
    /// release too: a result may live in the plugin's own state.
    func call(_ function: Function, _ input: Value, customClass: String) throws -> Value {
        lock?.lock()
        defer { lock?.unlock() }
        PluginReports.clear()
        // The result is copied while the input is still borrowed: a plugin may
        // return a pointer into its input (an identity), and a small `Data`'s
        // bytes live only as long as the borrow.
        return try PluginValue.withBorrowed(input) { borrowed in
            var output = amber_plugin_value()
            let status = withUnsafePointer(to: borrowed) { function(state, $0, &output) }
            defer { output.release?(&output) }
            guard status == AMBER_PLUGIN_OK else {
                throw Failure(description: "returned status \(status)" + PluginReports.take())
            }
            return try PluginValue.copy(output, customClass: customClass)
        }
    }
}

extension PluginFunctions {
    /// Calls a byte function: `input` in, at most `output.count` bytes out;
    /// returns how many the plugin says it wrote (the caller checks it).
    func callBytes(_ function: BytesFunction, _ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer) throws -> Int {
        lock?.lock()
        defer { lock?.unlock() }
        return try Self.invokeBytes(function, state, input, output)
    }

    /// The call itself, for a thread-safe transformer (no lock to take).
    @inline(__always)
    static func invokeBytes(_ function: BytesFunction, _ state: UnsafeMutableRawPointer?, _ input: UnsafeRawBufferPointer,
                            _ output: UnsafeMutableRawBufferPointer) throws -> Int
    {
        PluginReports.clear()
        var written = 0
        let status = function(state, input.baseAddress, input.count, output.baseAddress, output.count, &written)
        guard status == AMBER_PLUGIN_OK else {
            throw Failure(description: "returned status \(status)" + PluginReports.take())
        }
        return written
    }
}

/// A thread-safe plugin transformer's byte functions and state, copied out
/// of its ``PluginFunctions`` (which the transformer keeps alive) so the byte
/// path calls them with no reference counting.
struct PluginBytePath: @unchecked Sendable {  // the plugin declared these thread-safe
    let forward: PluginFunctions.BytesFunction?
    let reverse: PluginFunctions.BytesFunction?
    let state: UnsafeMutableRawPointer?

    /// Nil unless the plugin is thread-safe and has a byte function.
    init?(_ functions: PluginFunctions?) {
        guard let functions, functions.isThreadSafe, functions.forwardBytes != nil || functions.reverseBytes != nil else { return nil }
        (forward, reverse, state) = (functions.forwardBytes, functions.reverseBytes, functions.state)
    }
}

/// A transformer of a plugin, wrapped as a core transformer.
struct PluginTransformer {
    let transformer: Transformer
    let info: PluginInfo.TransformerInfo

    init(functions: PluginFunctions, name: String, input: String, output: String, file: String) {
        self.info = PluginInfo.TransformerInfo(name: name, inputClass: input, outputClass: output,
                                               isReversible: functions.reverse != nil, isThreadSafe: functions.isThreadSafe)
        self.transformer = Transformer(name: name, from: input, to: output, source: file, plugin: functions)
    }
}

/// Values across the plugin boundary.
enum PluginValue {
    struct Unsupported: Error, CustomStringConvertible {
        let description: String
    }

    private static func bytes(_ type: Int, _ buffer: UnsafeRawBufferPointer) -> amber_plugin_value {
        var value = amber_plugin_value()
        value.type = Int32(type)
        value.v.bytes.data = buffer.baseAddress
        value.v.bytes.length = buffer.count
        return value
    }

    /// Calls `body` with `value` as a plugin value borrowing Swift's memory.
    static func withBorrowed<R>(_ value: Value, _ body: (amber_plugin_value) throws -> R) throws -> R {
        var plain = amber_plugin_value()
        func text(_ type: Int, _ string: String) throws -> R {
            var copy = string
            return try copy.withUTF8 { try body(bytes(type, UnsafeRawBufferPointer($0))) }
        }
        switch value {
        case .null: plain.type = Int32(AMBER_PLUGIN_VALUE_NULL)
        case .bool(let b): plain.type = Int32(AMBER_PLUGIN_VALUE_BOOL); plain.v.integer = b ? 1 : 0
        case .int(let i): plain.type = Int32(AMBER_PLUGIN_VALUE_INT); plain.v.integer = i
        case .double(let d): plain.type = Int32(AMBER_PLUGIN_VALUE_DOUBLE); plain.v.real = d
        case .float(let f): plain.type = Int32(AMBER_PLUGIN_VALUE_FLOAT); plain.v.real = Double(f)
        case .date(let d): plain.type = Int32(AMBER_PLUGIN_VALUE_DATE); plain.v.real = d.timeIntervalSince1970
        case .string(let s): return try text(AMBER_PLUGIN_VALUE_STRING, s)
        case .decimal(let d): return try text(AMBER_PLUGIN_VALUE_DECIMAL, d.description)
        case .uri(let u): return try text(AMBER_PLUGIN_VALUE_URI, u.absoluteString)
        case .binary(let d): return try d.withUnsafeBytes { try body(bytes(AMBER_PLUGIN_VALUE_BINARY, $0)) }
        case .custom(let c): return try c.withUnsafeBytes { try body(bytes(AMBER_PLUGIN_VALUE_CUSTOM, $0)) }
        case .uuid(let u): return try withUnsafeBytes(of: u.uuid) { try body(bytes(AMBER_PLUGIN_VALUE_UUID, $0)) }
        case .objectID, .array, .dictionary:
            throw Unsupported(description: "a \(value.className) value cannot cross the plugin boundary")
        }
        return try body(plain)
    }

    /// A copy of a value a plugin returned.
    static func copy(_ value: amber_plugin_value, customClass: String) throws -> Value {
        var parts = CValueBridge.Parts(type: value.type)
        switch Int(value.type) {
        case AMBER_PLUGIN_VALUE_BOOL, AMBER_PLUGIN_VALUE_INT: parts.integer = value.v.integer
        case AMBER_PLUGIN_VALUE_DOUBLE, AMBER_PLUGIN_VALUE_FLOAT, AMBER_PLUGIN_VALUE_DATE: parts.real = value.v.real
        case CValueBridge.objectIDType, CValueBridge.propertyListType:
            throw Unsupported(description: "returned value type \(value.type), which plugins cannot return")
        default:
            (parts.data, parts.length) = (value.v.bytes.data, value.v.bytes.length)
        }
        parts.className = customClass
        do throws(CValueBridge.Problem) {
            return try CValueBridge.value(parts)
        } catch {
            throw Unsupported(description: "returned \(error)")
        }
    }

}
