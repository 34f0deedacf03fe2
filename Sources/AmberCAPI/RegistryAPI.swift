import Amber
import AmberHeaders
import Foundation

/// The process-wide registry's wrapper, and its handle, made once.
private let sharedRegistryWrapper = CRegistry(.shared)
private let sharedRegistryHandle = Handles.make(sharedRegistryWrapper, kind: .registry).map { UInt(bitPattern: Int(bitPattern: $0)) } ?? 0

@c @implementation
public func amber_registry_new(_ out: UnsafeMutablePointer<OpaquePointer?>?) -> amber_status {
    api { () throws(CAPIError) in
        try require(out, "out").pointee = Handles.make(CRegistry(Registry()), kind: .registry)
    }
}

@c @implementation
public func amber_registry_shared(_ out: UnsafeMutablePointer<OpaquePointer?>?) -> amber_status {
    api { () throws(CAPIError) in
        try require(out, "out").pointee = OpaquePointer(bitPattern: sharedRegistryHandle)
    }
}

@c @implementation
public func amber_registry_free(_ registry: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        // The shared registry's handle lives for the process: freeing it is allowed and does nothing.
        if let registry, UInt(bitPattern: Int(bitPattern: registry)) == sharedRegistryHandle { return }
        try Handles.release(registry, as: .registry, "registry")
    }
}

/// Field declarations from C, checked.
func fieldDescriptions(_ fields: UnsafePointer<amber_field>?, _ fieldCount: Int) throws(CAPIError) -> [FieldDescription] {
    let checked = try count(fieldCount, "field_count")
    guard checked == 0 || fields != nil else { throw .null("fields") }
    var result: [FieldDescription] = []
    for i in 0..<checked {
        guard let field = fields?[i] else { break }
        let fieldName = try name(field.name, "fields[\(i)].name")
        guard let type = try FieldType.from(code: field.type, structName: { () throws(CAPIError) in
            try name(field.struct_name, "fields[\(i)].struct_name")
        }) else {
            throw CAPIError(AMBER_E_INVALID_DECLARATION, "fields[\(i)]: unknown field type \(field.type)", origin: fieldName)
        }
        result.append(FieldDescription(fieldName, type))
    }
    return result
}

/// Who registers through the C API, as registry messages name it (see amber_set_source_name).
enum SourceName {
    private static let name = Locked("C API")

    static var current: String { name.withLock { $0 } }

    static func set(_ given: String?) { name.withLock { $0 = given ?? "C API" } }
}

@c @implementation
public func amber_set_source_name(_ name: UnsafePointer<CChar>?) -> amber_status {
    api { () throws(CAPIError) in
        guard let name else { return SourceName.set(nil) }
        let text = try AmberCAPI.name(name, "name")
        guard !text.isEmpty else { throw CAPIError(AMBER_E_INVALID_VALUE, "name is empty", origin: "name") }
        SourceName.set(text)
    }
}

@c @implementation
public func amber_registry_declare_struct(_ registry: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                          _ fields: UnsafePointer<amber_field>?, _ field_count: Int) -> amber_status
{
    api { () throws(CAPIError) in
        let target = try Handles.registry(registry)
        let className = try AmberCAPI.name(name, "name")
        let declared = try fieldDescriptions(fields, field_count)
        try core { () throws(AmberError) in try target.declare(.structure(name: className, fields: declared), source: SourceName.current) }
    }
}

@c @implementation
public func amber_registry_declare_opaque(_ registry: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ fixed_size: Int) -> amber_status {
    api { () throws(CAPIError) in
        let target = try Handles.registry(registry)
        let className = try AmberCAPI.name(name, "name")
        try core { () throws(AmberError) in
            try target.declare(.opaque(name: className, size: fixed_size == 0 ? nil : fixed_size), source: SourceName.current)
        }
    }
}

@c @implementation
public func amber_field_type_info(_ out_name: UnsafeMutablePointer<UnsafePointer<CChar>?>?, _ out_size: UnsafeMutablePointer<Int>?,
                                  _ out_alignment: UnsafeMutablePointer<Int>?, _ type: Int32) -> amber_status
{
    api { () throws(CAPIError) in
        guard let index = FieldType.table.firstIndex(where: { $0.code == type }) else {
            throw CAPIError(AMBER_E_NOT_FOUND, "no field type has code \(type)", origin: "type")
        }
        out_name?.pointee = fieldTypeNames[index]
        out_size?.pointee = FieldType.table[index].size
        out_alignment?.pointee = FieldType.table[index].alignment
    }
}

/// The table's names as static C strings, made once and never freed (immutable, so shared safely).
nonisolated(unsafe) private let fieldTypeNames: [UnsafePointer<CChar>?] = FieldType.table.map { UnsafePointer(strdup($0.name)) }

/// Writes a struct layout through the out-parameters of the two layout functions.
func describe(_ layout: StructClass, strings: CStringPool, size: UnsafeMutablePointer<Int>?, alignment: UnsafeMutablePointer<Int>?,
              fields: UnsafeMutablePointer<amber_field_info>?, fieldCount: UnsafeMutablePointer<Int>?,
              capacity: Int) throws(CAPIError)
{
    let sizeOut = try require(size, "out_size"), alignmentOut = try require(alignment, "out_alignment")
    let countOut = try require(fieldCount, "out_field_count")
    countOut.pointee = layout.fields.count
    guard layout.fields.count <= capacity else {
        throw CAPIError(AMBER_E_BUFFER_TOO_SMALL, "\(layout.name) has \(layout.fields.count) fields; capacity is \(capacity)",
                        origin: layout.name)
    }
    guard let fields else { throw .null("out_fields") }
    for (i, field) in layout.fields.enumerated() {
        var nested: UnsafePointer<CChar>?
        if case .structure(let inner) = field.type { nested = strings.cString(inner) }
        fields[i] = amber_field_info(name: strings.cString(field.name), type: field.type.info.code,
                                     struct_name: nested, offset: field.offset)
    }
    sizeOut.pointee = layout.size
    alignmentOut.pointee = layout.alignment
}

@c @implementation
public func amber_registry_struct_layout(_ out_size: UnsafeMutablePointer<Int>?, _ out_alignment: UnsafeMutablePointer<Int>?,
                                         _ out_fields: UnsafeMutablePointer<amber_field_info>?,
                                         _ out_field_count: UnsafeMutablePointer<Int>?, _ capacity: Int,
                                         _ registry: OpaquePointer?, _ name: UnsafePointer<CChar>?) -> amber_status
{
    api { () throws(CAPIError) in
        let wrapper: CRegistry = registry == nil ? sharedRegistryWrapper : try Handles.resolve(registry, as: .registry, "registry")
        let className = try AmberCAPI.name(name, "name")
        guard let layout = wrapper.registry.structClass(named: className) else {
            throw CAPIError(AMBER_E_NOT_FOUND, "\(className): no such struct class", origin: className)
        }
        try describe(layout, strings: wrapper.strings, size: out_size, alignment: out_alignment, fields: out_fields,
                     fieldCount: out_field_count, capacity: capacity)
    }
}

/// A transformer implemented by C function pointers. Its deinit runs
/// `userdata_free`, so it runs exactly once: when registration fails (the
/// transformer is dropped at once) or when nothing uses the transformer any more.
final class CTransformerFunctions: @unchecked Sendable {
    let forwardFunction: amber_transform_fn
    let reverseFunction: amber_transform_fn?
    let releaseFunction: amber_release_fn?
    let userdata: UnsafeMutableRawPointer?
    let userdataFree: amber_userdata_free_fn?

    init(forward: amber_transform_fn, reverse: amber_transform_fn?, release: amber_release_fn?,
         userdata: UnsafeMutableRawPointer?, userdataFree: amber_userdata_free_fn?)
    {
        self.forwardFunction = forward
        self.reverseFunction = reverse
        self.releaseFunction = release
        self.userdata = userdata
        self.userdataFree = userdataFree
    }

    deinit { userdataFree?(userdata) }

    /// A core transformer whose closures keep this box (and so the userdata) alive.
    func transformer(name: String, from input: String, to output: String) -> Transformer {
        let reverseClosure: (@Sendable (Value) throws -> Value)?
        if let reverse = reverseFunction {
            reverseClosure = { [self] value in try call(reverse, value) }
        } else {
            reverseClosure = nil
        }
        let forward = forwardFunction
        return Transformer(name: name, from: input, to: output, source: SourceName.current,
                           forward: { [self] value in try call(forward, value) }, reverse: reverseClosure)
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Calls `function` with `input`, copies its result and releases it.
    func call(_ function: amber_transform_fn, _ input: Value) throws -> Value {
        var cInput = amber_value()
        try CValue.write(input, to: &cInput)
        defer { CValue.release(&cInput) }
        var cOutput = amber_value()
        let slot = LastError.current
        slot.callbackMessage = nil
        let status = function(&cOutput, &cInput, userdata)
        guard status == AMBER_OK else {
            defer { slot.callbackMessage = nil }
            throw Failure(description: "returned status \(status)" + (slot.callbackMessage.map { ": \($0)" } ?? ""))
        }
        defer { releaseFunction?(&cOutput, userdata) }
        return try withUnsafePointer(to: cOutput) { (pointer) throws(CAPIError) -> Value in
            try CValue.read(pointer, "the transformer's output")
        }
    }
}

@c @implementation
public func amber_registry_register_transformer(_ registry: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                                _ input_class: UnsafePointer<CChar>?, _ output_class: UnsafePointer<CChar>?,
                                                _ forward: amber_transform_fn?, _ reverse: amber_transform_fn?,
                                                _ release: amber_release_fn?, _ userdata: UnsafeMutableRawPointer?,
                                                _ userdata_free: amber_userdata_free_fn?) -> amber_status
{
    registerTransformer(registry, name, input_class, output_class, forward, reverse, release, userdata, userdata_free, replacing: false)
}

@c @implementation
public func amber_registry_replace_transformer(_ registry: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                               _ input_class: UnsafePointer<CChar>?, _ output_class: UnsafePointer<CChar>?,
                                               _ forward: amber_transform_fn?, _ reverse: amber_transform_fn?,
                                               _ release: amber_release_fn?, _ userdata: UnsafeMutableRawPointer?,
                                               _ userdata_free: amber_userdata_free_fn?) -> amber_status
{
    registerTransformer(registry, name, input_class, output_class, forward, reverse, release, userdata, userdata_free, replacing: true)
}

private func registerTransformer(_ registry: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                 _ input_class: UnsafePointer<CChar>?, _ output_class: UnsafePointer<CChar>?,
                                 _ forward: amber_transform_fn?, _ reverse: amber_transform_fn?,
                                 _ release: amber_release_fn?, _ userdata: UnsafeMutableRawPointer?,
                                 _ userdata_free: amber_userdata_free_fn?, replacing: Bool) -> amber_status
{
    guard let forward else {
        userdata_free?(userdata)
        return api { () throws(CAPIError) in throw .null("forward") }
    }
    // From here the box owns userdata: whatever fails below, its deinit frees it exactly once.
    let box = CTransformerFunctions(forward: forward, reverse: reverse, release: release, userdata: userdata,
                                    userdataFree: userdata_free)
    return api { () throws(CAPIError) in
        let target = try Handles.registry(registry)
        let transformerName = try AmberCAPI.name(name, "name")
        let input = try AmberCAPI.name(input_class, "input_class")
        let output = try AmberCAPI.name(output_class, "output_class")
        try core { () throws(AmberError) in
            try target.register(box.transformer(name: transformerName, from: input, to: output), replacing: replacing)
        }
    }
}

/// A compute function implemented by a C function pointer; like
/// ``CTransformerFunctions``, its deinit runs `userdata_free` exactly once.
final class CComputeFunction: @unchecked Sendable {
    let function: amber_compute_fn
    let releaseFunction: amber_release_fn?
    let userdata: UnsafeMutableRawPointer?
    let userdataFree: amber_userdata_free_fn?

    init(_ function: amber_compute_fn, release: amber_release_fn?, userdata: UnsafeMutableRawPointer?, userdataFree: amber_userdata_free_fn?) {
        self.function = function
        self.releaseFunction = release
        self.userdata = userdata
        self.userdataFree = userdataFree
    }

    deinit { userdataFree?(userdata) }

    /// Calls the function with `inputs`, copies its result and releases it.
    func call(_ inputs: [Value]) throws -> Value {
        var cInputs = [amber_value](repeating: amber_value(), count: inputs.count)
        defer { for i in cInputs.indices { CValue.release(&cInputs[i]) } }
        for (i, input) in inputs.enumerated() { try CValue.write(input, to: &cInputs[i]) }
        var cOutput = amber_value()
        let slot = LastError.current
        slot.callbackMessage = nil
        let status = cInputs.withUnsafeBufferPointer { function(&cOutput, $0.baseAddress, inputs.count, userdata) }
        guard status == AMBER_OK else {
            defer { slot.callbackMessage = nil }
            throw CTransformerFunctions.Failure(description: "returned status \(status)" + (slot.callbackMessage.map { ": \($0)" } ?? ""))
        }
        defer { releaseFunction?(&cOutput, userdata) }
        return try withUnsafePointer(to: cOutput) { (pointer) throws(CAPIError) -> Value in
            try CValue.read(pointer, "the function's output")
        }
    }
}

@c @implementation
public func amber_registry_register_function(_ registry: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ function: amber_compute_fn?,
                                             _ release: amber_release_fn?, _ userdata: UnsafeMutableRawPointer?,
                                             _ userdata_free: amber_userdata_free_fn?) -> amber_status
{
    guard let function else {
        userdata_free?(userdata)
        return api { () throws(CAPIError) in throw .null("function") }
    }
    // From here the box owns userdata: whatever fails below, its deinit frees it exactly once.
    let box = CComputeFunction(function, release: release, userdata: userdata, userdataFree: userdata_free)
    return api { () throws(CAPIError) in
        let target = try Handles.registry(registry)
        let functionName = try AmberCAPI.name(name, "name")
        try core { () throws(AmberError) in try target.register(ComputeFunction(functionName, source: SourceName.current) { try box.call($0) }) }
    }
}

@c @implementation
public func amber_registry_load_plugin(_ registry: OpaquePointer?, _ path: UnsafePointer<CChar>?,
                                       _ configuration: UnsafePointer<CChar>?) -> amber_status
{
    api { () throws(CAPIError) in
        let target = try Handles.registry(registry)
        let file = try name(path, "path")
        let settings = try optionalName(configuration, "configuration")
        _ = try core { () throws(AmberError) in try target.loadPlugin(at: file, configuration: settings) }
    }
}

@c @implementation
public func amber_registry_load_plugin_directory(_ out_count: UnsafeMutablePointer<Int>?, _ registry: OpaquePointer?,
                                                 _ directory: UnsafePointer<CChar>?,
                                                 _ configuration: UnsafePointer<CChar>?) -> amber_status
{
    api { () throws(CAPIError) in
        let count = try require(out_count, "out_count")
        let target = try Handles.registry(registry)
        let folder = try name(directory, "directory")
        let settings = try optionalName(configuration, "configuration")
        // Set on a refusal too: the plugins loaded before it stay loaded, and the caller learns how many.
        var loaded: [PluginInfo] = []
        defer { count.pointee = loaded.count }
        try core { () throws(AmberError) in try target.loadPlugins(inDirectory: folder, configuration: settings, into: &loaded) }
    }
}

@c @implementation
public func amber_transformer_error(_ message: UnsafePointer<CChar>?) {
    guard let message else { return }
    LastError.current.callbackMessage = String(decoding: UnsafeRawBufferPointer(start: message, count: strlen(message)), as: UTF8.self)
}
