import AmberPluginABI
import AmberTransformers
import Foundation

/// Bytes → a plugin descriptor, registered as if an entry function had
/// returned it. Every pointer in it is valid memory and every count matches
/// its array: the harness fuzzes Amber's checks of what a plugin declares,
/// not a plugin's own memory errors. Zero bytes choose the valid form of
/// each field, so a run of zeros is a valid plugin.
enum PluginDescriptorHarness {
    static func run(_ bytes: UnsafeRawBufferPointer) {
        var input = FuzzBytes(bytes)
        let arena = Arena()
        defer { arena.free() }
        var descriptor = amber_plugin_descriptor()
        let size = MemoryLayout<amber_plugin_descriptor>.size
        descriptor.struct_size = UInt32(input.pick([size, MemoryLayout<amber_plugin_descriptor>.offset(of: \.abi_minor) ?? 0, size + 64, 0,
                                                    Int(input.byte())]))
        descriptor.abi_version = input.pick([UInt32(AMBER_PLUGIN_ABI_VERSION), UInt32(AMBER_PLUGIN_ABI_VERSION) + 1, 0])
        descriptor.abi_minor = input.pick([UInt32(AMBER_PLUGIN_ABI_MINOR), 1, 0, UInt32(AMBER_PLUGIN_ABI_MINOR) + 1])
        descriptor.name = input.string(arena, default: "fuzz")
        descriptor.version = input.string(arena, default: "1.0")
        (descriptor.classes, descriptor.class_count, descriptor.class_struct_size) = classes(&input, arena)
        (descriptor.transformers, descriptor.transformer_count, descriptor.transformer_struct_size) = transformers(&input, arena)
        // Room for any struct_size a byte can declare: the loader reads up to its own size.
        let buffer = arena.bytes(512)
        buffer.storeBytes(of: descriptor, as: amber_plugin_descriptor.self)
        let configuration: String? = input.flag() ? "key=value" : nil
        _ = try? PluginLoader.register(UnsafePointer(buffer.assumingMemoryBound(to: amber_plugin_descriptor.self)),
                                       asIfFrom: "fuzz.so", configuration: configuration, into: Registry())
    }

    private static let classNames = ["Binary", "String", "Integer", "Double", "Float", "Boolean", "Date", "UUID", "URL", "Null",
                                     "PropertyList", "Point", "Opaque16", "Color"]

    /// A stride that is the struct's size or wrong, an array of `count` elements at that stride (or NULL).
    private static func array<T>(_ input: inout FuzzBytes, _ arena: Arena, strides: [Int],
                                 element: (inout FuzzBytes, Int) -> T) -> (UnsafePointer<T>?, Int, UInt32)
    {
        let stride = input.pick(strides)
        let count = Int(input.byte() % 4)
        if input.byte() == 1 { return (nil, count, UInt32(stride)) }  // NULL with a count
        guard count > 0 else { return (nil, 0, UInt32(stride)) }
        let width = max(stride, MemoryLayout<T>.size)
        let base = arena.bytes(width * (count + 1))
        // In order: an element at a stride shorter than the struct overlaps the next one's start, as in a plugin of an older minor.
        for index in 0..<count { (base + index * stride).storeBytes(of: element(&input, index), as: T.self) }
        return (UnsafePointer(base.assumingMemoryBound(to: T.self)), count, UInt32(stride))
    }

    private static func classes(_ input: inout FuzzBytes, _ arena: Arena) -> (UnsafePointer<amber_plugin_class>?, Int, UInt32) {
        let size = MemoryLayout<amber_plugin_class>.size
        return array(&input, arena, strides: [size, size + 16, size - 8, 0]) { input, index in
            var declared = amber_plugin_class()
            declared.name = input.string(arena, default: "FuzzClass\(index)", names: classNames)
            declared.kind = input.pick([Int32(AMBER_PLUGIN_CLASS_STRUCT), Int32(AMBER_PLUGIN_CLASS_OPAQUE), 0, 9])
            let fieldCount = Int(input.byte() % 5)
            declared.field_count = input.flag() ? fieldCount + 65_536 : fieldCount
            if fieldCount > 0 && input.byte() != 1 {
                let fields = arena.bytes(MemoryLayout<amber_plugin_field>.stride * fieldCount).bindMemory(to: amber_plugin_field.self, capacity: fieldCount)
                for f in 0..<fieldCount {
                    var field = amber_plugin_field()
                    field.name = input.string(arena, default: "f\(f)")
                    field.type = Int32(input.byte() % 14)
                    if field.type == 0 { field.type = Int32(AMBER_PLUGIN_FIELD_DOUBLE) }
                    field.struct_name = field.type == Int32(AMBER_PLUGIN_FIELD_STRUCT) ? input.string(arena, default: "FuzzClass0", names: classNames) : nil
                    fields[f] = field
                }
                declared.fields = UnsafePointer(fields)
            }
            declared.size = input.pick([8 * fieldCount, 0, 16, 24, Int(input.byte())])
            return declared
        }
    }

    private static func transformers(_ input: inout FuzzBytes, _ arena: Arena) -> (UnsafePointer<amber_plugin_transformer>?, Int, UInt32) {
        let size = MemoryLayout<amber_plugin_transformer>.size
        let minor1 = MemoryLayout<amber_plugin_transformer>.offset(of: \.forward_bytes) ?? 0
        return array(&input, arena, strides: [size, minor1, size + 16, 8]) { input, index in
            var declared = amber_plugin_transformer()
            declared.name = input.string(arena, default: "FuzzTransformer\(index)")
            declared.input_class = input.string(arena, default: "Binary", names: classNames)
            declared.output_class = input.string(arena, default: "Binary", names: classNames)
            declared.flags = input.pick([UInt32(AMBER_PLUGIN_REVERSIBLE), 0, UInt32(AMBER_PLUGIN_REVERSIBLE | AMBER_PLUGIN_THREAD_SAFE), 0xFFFF_FFFF])
            declared.forward = input.pick([Dummy.convert, nil])
            declared.reverse = input.pick([Dummy.convert, nil])
            declared.create = input.pick([nil, Dummy.create, Dummy.refuse])
            declared.destroy = input.pick([nil, Dummy.destroy])
            declared.forward_bytes = input.pick([nil, Dummy.convertBytes])
            declared.reverse_bytes = input.pick([nil, Dummy.convertBytes])
            return declared
        }
    }
}

/// Functions a fake plugin points at; only create and destroy are called here.
private enum Dummy {
    static let convert: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<amber_plugin_value>?,
                                        UnsafeMutablePointer<amber_plugin_value>?) -> Int32 = { _, _, _ in Int32(AMBER_PLUGIN_ERROR) }
    static let convertBytes: @convention(c) (UnsafeMutableRawPointer?, UnsafeRawPointer?, Int, UnsafeMutableRawPointer?, Int,
                                             UnsafeMutablePointer<Int>?) -> Int32 = { _, _, _, _, _, _ in Int32(AMBER_PLUGIN_ERROR) }
    static let create: @convention(c) (UnsafeMutablePointer<UnsafeMutableRawPointer?>?, UnsafePointer<CChar>?,
                                       UnsafePointer<amber_plugin_host>?) -> Int32 = { state, _, _ in
        state?.pointee = UnsafeMutableRawPointer(bitPattern: 0x1000)  // a state destroy checks for
        return Int32(AMBER_PLUGIN_OK)
    }
    static let refuse: @convention(c) (UnsafeMutablePointer<UnsafeMutableRawPointer?>?, UnsafePointer<CChar>?,
                                       UnsafePointer<amber_plugin_host>?) -> Int32 = { _, _, host in
        host?.pointee.report_error?(host, "refused by the fuzzer")
        return Int32(AMBER_PLUGIN_ERROR)
    }
    static let destroy: @convention(c) (UnsafeMutableRawPointer?) -> Void = { state in
        // Only what create made reaches destroy.
        if state != UnsafeMutableRawPointer(bitPattern: 0x1000) { abort() }
    }
}

/// Zeroed allocations freed together after one input.
final class Arena {
    private var blocks: [UnsafeMutableRawPointer] = []

    func bytes(_ count: Int) -> UnsafeMutableRawPointer {
        let block = calloc(max(count, 1), 1)!
        blocks.append(block)
        return block
    }

    func free() {
        for block in blocks { Foundation.free(block) }
        blocks.removeAll()
    }
}

/// The fuzzer's bytes, read front to back; zeros once they run out.
struct FuzzBytes {
    private let bytes: UnsafeRawBufferPointer
    private var position = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    mutating func byte() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func flag() -> Bool { byte() & 1 == 1 }

    /// One of `options`: the first for a zero byte.
    mutating func pick<T>(_ options: [T]) -> T { options[Int(byte()) % options.count] }

    /// A C string in `arena`: `default` for a zero byte; else NULL, empty,
    /// fuzzed bytes (maybe not UTF-8, maybe with a NUL inside), one of
    /// `names`, or 5,000 bytes with no NUL before the loader's bound.
    mutating func string(_ arena: Arena, default value: String, names: [String] = []) -> UnsafePointer<CChar>? {
        let text: [UInt8]
        switch byte() % 6 {
        case 0: text = Array(value.utf8)
        case 1: return nil
        case 2: text = []
        case 3: text = (0..<Int(byte() % 24)).map { _ in byte() }
        case 4: text = Array((names.isEmpty ? value : pick(names)).utf8)
        default: text = Array(repeating: UInt8(ascii: "a"), count: 5000)
        }
        let buffer = arena.bytes(text.count + 1)
        buffer.copyMemory(from: text, byteCount: text.count)
        return UnsafePointer(buffer.assumingMemoryBound(to: CChar.self))
    }
}
