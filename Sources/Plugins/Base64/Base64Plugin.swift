import AmberPluginABI
import Foundation

// The "base64" sample plugin, written in Swift to show that the plugin ABI is
// language-neutral: Binary <-> its base64 text (a String), so binary values
// stay printable in any SQLite tool. It imports only amber_plugin.h.

/// Hands `bytes` to the host in a buffer that its release function frees.
private func output(_ bytes: [UInt8], type: Int, into value: UnsafeMutablePointer<amber_plugin_value>) {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
    buffer.copyBytes(from: bytes)
    value.pointee.type = Int32(type)
    value.pointee.v.bytes.data = UnsafeRawPointer(buffer.baseAddress)
    value.pointee.v.bytes.length = bytes.count
    value.pointee.release_context = buffer.baseAddress
    value.pointee.release = { value in value?.pointee.release_context?.deallocate() }
}

private func input(_ value: UnsafePointer<amber_plugin_value>?, type: Int) -> Data? {
    guard let value, Int(value.pointee.type) == type else { return nil }
    guard value.pointee.v.bytes.length > 0 else { return Data() }
    guard let data = value.pointee.v.bytes.data else { return nil }
    return Data(bytes: data, count: value.pointee.v.bytes.length)
}

private let encode: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<amber_plugin_value>?,
                                    UnsafeMutablePointer<amber_plugin_value>?) -> Int32 = { _, value, result in
    guard let bytes = input(value, type: AMBER_PLUGIN_VALUE_BINARY), let result else { return Int32(AMBER_PLUGIN_ERROR) }
    output(Array(bytes.base64EncodedString().utf8), type: AMBER_PLUGIN_VALUE_STRING, into: result)
    return Int32(AMBER_PLUGIN_OK)
}

private let decode: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<amber_plugin_value>?,
                                    UnsafeMutablePointer<amber_plugin_value>?) -> Int32 = { _, value, result in
    guard let text = input(value, type: AMBER_PLUGIN_VALUE_STRING), let result,
          let bytes = Data(base64Encoded: text)
    else { return Int32(AMBER_PLUGIN_ERROR) }
    output(Array(bytes), type: AMBER_PLUGIN_VALUE_BINARY, into: result)
    return Int32(AMBER_PLUGIN_OK)
}

/// The descriptor and its strings, made once and never freed: the host may
/// read them for the life of the process.
nonisolated(unsafe) private let descriptor: UnsafeMutablePointer<amber_plugin_descriptor> = {
    let transformer = UnsafeMutablePointer<amber_plugin_transformer>.allocate(capacity: 1)
    transformer.initialize(to: amber_plugin_transformer(
        name: UnsafePointer(strdup("Base64")), input_class: UnsafePointer(strdup("Binary")),
        output_class: UnsafePointer(strdup("String")), flags: UInt32(AMBER_PLUGIN_REVERSIBLE | AMBER_PLUGIN_THREAD_SAFE),
        forward: encode, reverse: decode, create: nil, destroy: nil, forward_bytes: nil, reverse_bytes: nil))
    let descriptor = UnsafeMutablePointer<amber_plugin_descriptor>.allocate(capacity: 1)
    descriptor.initialize(to: amber_plugin_descriptor(
        struct_size: UInt32(MemoryLayout<amber_plugin_descriptor>.size), abi_version: UInt32(AMBER_PLUGIN_ABI_VERSION),
        name: UnsafePointer(strdup("base64")), version: UnsafePointer(strdup("1.0.0")),
        class_struct_size: UInt32(MemoryLayout<amber_plugin_class>.size), class_count: 0, classes: nil,
        transformer_struct_size: UInt32(MemoryLayout<amber_plugin_transformer>.size), transformer_count: 1,
        transformers: UnsafePointer(transformer), abi_minor: UInt32(AMBER_PLUGIN_ABI_MINOR)))
    return descriptor
}()

@c @implementation
public func amber_plugin_entry(_ host: UnsafePointer<amber_plugin_host>?) -> UnsafePointer<amber_plugin_descriptor>? {
    UnsafePointer(descriptor)
}
