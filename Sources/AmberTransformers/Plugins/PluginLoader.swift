import AmberPluginABI
import AmberValues
import Foundation

/// What a loaded plugin provided.
public struct PluginInfo: Sendable, Hashable {
    /// The file it was loaded from.
    public let path: String
    /// The plugin's name, as it declares it.
    public let name: String
    /// The plugin's own version, as it declares it.
    public let version: String
    /// The plugin ABI minor version it was compiled with (0 before minors existed).
    public let abiMinor: Int
    /// The plugin ABI it speaks, "MAJOR.MINOR".
    public var abi: String { "\(AMBER_PLUGIN_ABI_VERSION).\(abiMinor)" }
    /// The value classes it declared (their layouts: ``Registry/structClass(named:)``).
    public let classes: [String]
    /// The transformers it registered.
    public let transformers: [TransformerInfo]

    /// What a plugin says of one transformer.
    public struct TransformerInfo: Sendable, Hashable {
        /// The transformer's name.
        public let name: String
        /// The class `forward` takes.
        public let inputClass: String
        /// The class `forward` returns.
        public let outputClass: String
        /// Whether it has a reverse.
        public let isReversible: Bool
        /// Whether calls may run on several threads at once.
        public let isThreadSafe: Bool
    }
}

extension Registry {
    /// Loads the plugin at `path` and registers its value classes and
    /// transformers, all or nothing. `configuration` is handed to each
    /// transformer's `create` (an AES key, a compression level…).
    ///
    /// A `path` without a slash names a file in the working directory (not
    /// one on the library search path, as `dlopen` alone would take it).
    /// The file must not be writable by group or others. It is opened with
    /// `RTLD_NOW | RTLD_LOCAL`, and stays loaded for the life of the process.
    ///
    /// - Throws: ``/AmberValues/AmberError/pluginRefused(path:message:)`` naming the file,
    ///   the class or transformer, and what was expected against what was
    ///   found; nothing of a refused plugin is registered.
    @discardableResult
    public func loadPlugin(at path: String, configuration: String? = nil) throws(AmberError) -> PluginInfo {
        try PluginLoader(path: path, configuration: configuration).load(into: self)
    }

    /// Loads every `*.so` file in `directory` (in name order); stops at the first refusal.
    @discardableResult
    public func loadPlugins(inDirectory directory: String, configuration: String? = nil) throws(AmberError) -> [PluginInfo] {
        var loaded: [PluginInfo] = []
        try loadPlugins(inDirectory: directory, configuration: configuration, into: &loaded)
        return loaded
    }

    /// ``loadPlugins(inDirectory:configuration:)``, appending each plugin to
    /// `loaded` as it loads, so a caller still knows which ones did when a
    /// later one is refused.
    package func loadPlugins(inDirectory directory: String, configuration: String?, into loaded: inout [PluginInfo]) throws(AmberError) {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".so") }.sorted()
        } catch {
            throw .pluginRefused(path: directory, message: "cannot list the directory: \(error.localizedDescription)")
        }
        for name in names {
            loaded.append(try loadPlugin(at: (directory as NSString).appendingPathComponent(name), configuration: configuration))
        }
    }
}

/// One plugin load: open, call the entry, validate every field, register.
package struct PluginLoader {
    let path: String
    let configuration: String?
    /// Shown in messages and as every transformer's source: the file's name.
    var file: String { (path as NSString).lastPathComponent }

    /// Strings from a plugin are read with a bound, so a missing NUL cannot run away.
    static let maximumStringLength = 4096

    private func refuse(_ message: String) -> AmberError { .pluginRefused(path: path, message: message) }

    func load(into registry: Registry) throws(AmberError) -> PluginInfo {
        try checkFile()
        PluginReports.clear()
        dlerror()
        // A name without a slash is a file in the working directory, as checkFile saw it:
        // dlopen would search the library path for it instead and could load another file.
        guard let library = dlopen(path.contains("/") ? path : "./" + path, RTLD_NOW | RTLD_LOCAL) else {
            throw refuse("cannot be loaded: " + (dlerror().map { String(cString: $0) } ?? "unknown dlopen error"))
        }
        // Never dlclose: code of a loaded plugin may be called for the life of the
        // process, and its initializers (Swift metadata, atexit handlers) ran already.
        dlerror()
        guard let symbol = dlsym(library, "amber_plugin_entry") else {
            throw refuse("exports no amber_plugin_entry function")
        }
        let session = PluginSession.of(library, file: file)
        let entry = unsafeBitCast(symbol, to: amber_plugin_entry_fn.self)
        PluginReports.clear()  // what the library's constructors said explains no refusal
        guard let descriptor = entry(session.host) else {
            throw refuse("amber_plugin_entry refused to load" + session.reportedSuffix)
        }
        return try register(descriptor, session: session, into: registry)
    }

    /// A plugin must be a regular file that only its owner can change.
    private func checkFile() throws(AmberError) {
        var info = stat()
        guard stat(path, &info) == 0 else { throw refuse("no such file") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw refuse("not a regular file") }
        guard info.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            throw refuse("is writable by group or others (mode \(String(info.st_mode & 0o777, radix: 8))); refusing to load it")
        }
    }

    private func register(_ pointer: UnsafePointer<amber_plugin_descriptor>, session: PluginSession,
                          into registry: Registry) throws(AmberError) -> PluginInfo
    {
        // Read only the part of the descriptor both sides know: a plugin from
        // before a minor version reads as zeros past its own struct_size.
        let declaredSize = Int(pointer.pointee.struct_size)
        let firstSize = MemoryLayout<amber_plugin_descriptor>.offset(of: \amber_plugin_descriptor.abi_minor) ?? 0
        guard declaredSize >= firstSize else {
            throw refuse("descriptor struct_size is \(declaredSize), expected at least \(firstSize)")
        }
        let descriptor = readGrowingStruct(pointer, byteCount: declaredSize, over: amber_plugin_descriptor())
        let abi = Int(descriptor.abi_version), hostABI = Int(AMBER_PLUGIN_ABI_VERSION)
        guard abi == hostABI else {
            throw refuse(abi > hostABI ? "ABI \(abi) is newer than this host's \(hostABI)"
                                       : "ABI \(abi) is older than this host's \(hostABI), which no longer loads it")
        }
        let name = try string(descriptor.name, "the plugin name")
        guard !name.isEmpty else { throw refuse("the plugin name is empty") }
        let version = try string(descriptor.version, "the plugin version")
        let classes = try classDescriptions(descriptor)
        let transformers = try pluginTransformers(descriptor, session: session)

        do throws(AmberError) {
            try registry.registerAll(classes: classes.map(\.0), transformers: transformers.map(\.transformer),
                                     source: file) { (description, resolved) throws(AmberError) in
                guard case .structure(let layout) = resolved,
                      let declared = classes.first(where: { $0.0.name == description.name })?.1
                else { return }
                guard layout.size == declared else {
                    throw AmberError.invalidDeclaration(place: "struct \(description.name)",
                        message: "the plugin's sizeof is \(declared) bytes, the host's layout is \(layout.size)")
                }
            }
        } catch {
            // Refused: transformers already created are destroyed with their wrappers.
            throw refuse(Self.describe(error))
        }
        return PluginInfo(path: path, name: name, version: version, abiMinor: Int(descriptor.abi_minor), classes: classes.map(\.0.name),
                          transformers: transformers.map(\.info))
    }

    /// The registry's error, phrased from the plugin's side.
    private static func describe(_ error: AmberError) -> String {
        switch error {
        case .duplicateName(let kind, let name, let existing, _):
            "\(kind) \"\(name)\": the name is already registered by \(existing)"
        case .invalidDeclaration(let place, let message):
            "\(place): \(message)"
        default:
            "\(error)"
        }
    }

    // MARK: Reading the descriptor

    /// A name or version string from the plugin: non-NULL, NUL-terminated within bounds, UTF-8.
    func string(_ pointer: UnsafePointer<CChar>?, _ what: String) throws(AmberError) -> String {
        guard let pointer else { throw refuse("\(what) is NULL") }
        let length = strnlen(pointer, Self.maximumStringLength)
        guard length < Self.maximumStringLength else { throw refuse("\(what) is longer than \(Self.maximumStringLength) bytes") }
        guard let text = String(validating: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self) else {
            throw refuse("\(what) is not valid UTF-8")
        }
        return text
    }

    /// The element at `index` of a plugin array whose stride is the plugin's struct size.
    /// Element `index` of a plugin array whose elements are `stride` bytes
    /// apart, read as far as both sides know it.
    private func element<T>(_ base: UnsafePointer<T>, _ index: Int, stride: Int, zero: T) -> T {
        readGrowingStruct(UnsafeRawPointer(base).advanced(by: index * stride), byteCount: stride, over: zero)
    }

    /// A count from the plugin: size_t arrives signed, and a negative range would trap.
    private func checkedCount(_ value: Int, _ what: String) throws(AmberError) -> Int {
        guard value >= 0, value <= 65_536 else { throw refuse("\(what) is \(UInt(bitPattern: value)), expected at most 65536") }
        return value
    }

    private func classDescriptions(_ descriptor: amber_plugin_descriptor) throws(AmberError) -> [(ValueClassDescription, Int?)] {
        guard try checkedCount(descriptor.class_count, "class_count") > 0 else { return [] }
        guard let base = descriptor.classes else { throw refuse("classes is NULL but class_count is \(descriptor.class_count)") }
        let stride = Int(descriptor.class_struct_size)
        guard stride >= MemoryLayout<amber_plugin_class>.size else {
            throw refuse("class_struct_size is \(stride), expected at least \(MemoryLayout<amber_plugin_class>.size)")
        }
        var result: [(ValueClassDescription, Int?)] = []
        for index in 0..<descriptor.class_count {
            let declared = element(base, index, stride: stride, zero: amber_plugin_class())
            let name = try string(declared.name, "classes[\(index)].name")
            switch Int(declared.kind) {
            case AMBER_PLUGIN_CLASS_STRUCT:
                guard try checkedCount(declared.field_count, "struct \(name) field_count") > 0, let fields = declared.fields else {
                    throw refuse("struct \(name): no fields")
                }
                var list: [FieldDescription] = []
                for f in 0..<declared.field_count {
                    let field = fields[f]
                    let fieldName = try string(field.name, "struct \(name) field \(f) name")
                    guard let type = try fieldType(field, place: "struct \(name).\(fieldName)") else {
                        throw refuse("struct \(name).\(fieldName): unknown field type \(field.type)")
                    }
                    list.append(FieldDescription(fieldName, type))
                }
                result.append((.structure(name: name, fields: list), declared.size))
            case AMBER_PLUGIN_CLASS_OPAQUE:
                result.append((.opaque(name: name, size: declared.size == 0 ? nil : declared.size), nil))
            default:
                throw refuse("class \(name): unknown kind \(declared.kind) (expected AMBER_PLUGIN_CLASS_STRUCT or _OPAQUE)")
            }
        }
        return result
    }

    private func fieldType(_ field: amber_plugin_field, place: String) throws(AmberError) -> FieldType? {
        try FieldType.from(code: field.type) { () throws(AmberError) in try string(field.struct_name, "\(place) struct_name") }
    }

    private func pluginTransformers(_ descriptor: amber_plugin_descriptor,
                                    session: PluginSession) throws(AmberError) -> [PluginTransformer]
    {
        guard try checkedCount(descriptor.transformer_count, "transformer_count") > 0 else { return [] }
        guard let base = descriptor.transformers else {
            throw refuse("transformers is NULL but transformer_count is \(descriptor.transformer_count)")
        }
        // Minor 0 and 1 transformers end before forward_bytes; minor 2 adds both byte functions whole.
        let stride = Int(descriptor.transformer_struct_size)
        let firstSize = MemoryLayout<amber_plugin_transformer>.offset(of: \amber_plugin_transformer.forward_bytes) ?? 0
        let minor2Size = MemoryLayout<amber_plugin_transformer>.size
        guard stride == firstSize || stride >= minor2Size else {
            throw refuse("transformer_struct_size is \(stride), expected \(firstSize) (ABI 1.0-1.1) or at least \(minor2Size)")
        }
        var result: [PluginTransformer] = []
        var names: Set<String> = []
        for index in 0..<descriptor.transformer_count {
            var declared = element(base, index, stride: stride, zero: amber_plugin_transformer())
            if descriptor.abi_minor < 2 {
                // Fields a plugin of an earlier minor could not have filled are not read.
                (declared.forward_bytes, declared.reverse_bytes) = (nil, nil)
            }
            let name = try string(declared.name, "transformers[\(index)].name")
            let place = "transformer \"\(name)\""
            guard names.insert(name).inserted else { throw refuse("\(place): declared twice by this plugin") }
            let input = try string(declared.input_class, "\(place) input_class")
            let output = try string(declared.output_class, "\(place) output_class")
            guard let forward = declared.forward else { throw refuse("\(place): forward is NULL") }
            let reversible = declared.flags & UInt32(AMBER_PLUGIN_REVERSIBLE) != 0
            if reversible && declared.reverse == nil {
                throw refuse("\(place): flags say reversible, but reverse is NULL")
            }
            if !reversible && (declared.reverse != nil || declared.reverse_bytes != nil) {
                throw refuse("\(place): reverse is set, but flags lack AMBER_PLUGIN_REVERSIBLE")
            }
            var state: UnsafeMutableRawPointer?
            if let create = declared.create {
                PluginReports.clear()  // a message explains this create's failure only
                let status = configuration.withOptionalCString { create(&state, $0, session.host) }
                guard status == AMBER_PLUGIN_OK else {
                    throw refuse("\(place): create failed with status \(status)" + session.reportedSuffix)
                }
            }
            // destroy frees what create made: without create there is nothing to free.
            let functions = PluginFunctions(forward: forward, reverse: reversible ? declared.reverse : nil,
                                            forwardBytes: declared.forward_bytes, reverseBytes: declared.reverse_bytes,
                                            destroy: declared.create == nil ? nil : declared.destroy,
                                            state: state, threadSafe: declared.flags & UInt32(AMBER_PLUGIN_THREAD_SAFE) != 0)
            result.append(PluginTransformer(functions: functions, name: name, input: input, output: output, file: file))
        }
        return result
    }
}

extension PluginLoader {
    /// Validates and registers `descriptor` as if the entry function of a
    /// plugin at `path` had returned it, with no library loaded: how the
    /// plugin-descriptor fuzzer (Sources/amber-fuzz) reaches every check above.
    package static func register(_ descriptor: UnsafePointer<amber_plugin_descriptor>, asIfFrom path: String,
                                 configuration: String?, into registry: Registry) throws(AmberError) -> PluginInfo
    {
        try PluginLoader(path: path, configuration: configuration).register(descriptor, session: .detached, into: registry)
    }
}

extension Optional where Wrapped == String {
    /// Calls `body` with a C string, or NULL for nil.
    func withOptionalCString<R>(_ body: (UnsafePointer<CChar>?) -> R) -> R {
        switch self {
        case .some(let text): text.withCString { body($0) }
        case .none: body(nil)
        }
    }
}
