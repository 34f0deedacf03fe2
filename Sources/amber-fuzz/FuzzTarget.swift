import Foundation

/// The harnesses: each takes any bytes and must neither crash nor break the
/// property it checks (a broken property stops the process, which libFuzzer
/// records as a finding).
enum FuzzTarget: String, CaseIterable {
    /// Predicate text: parsed with arguments for its `%@` and `%K`, compiled
    /// to SQL and run against an in-memory store, on each entity.
    case predicate
    /// A JSON model file: read, bound, written back (it must read back with
    /// the same version hash) and made into a store.
    case modelJSON = "model-json"
    /// An archived value (the default transformer's format): decoded, and
    /// if it decodes, encoded and decoded again to the same archive.
    case archive
    /// A keyed archive (Core Data's secure unarchiver's format): read, and
    /// if it reads, kept in Amber's archive and read back the same.
    case keyedArchive = "keyed-archive"
    /// A plugin descriptor, as an entry function would return it: built
    /// from the bytes (sizes, versions, strings, classes, fields,
    /// transformers, flags and functions) and validated and registered.
    case pluginDescriptor = "plugin-descriptor"
    /// An Xcode model's `contents` XML: imported, and if it binds, it reads
    /// back from its JSON as the model-json harness checks.
    case xcode

    static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }

    /// The harness AMBER_FUZZ_TARGET names (read once).
    static let selected: FuzzTarget = {
        let name = ProcessInfo.processInfo.environment["AMBER_FUZZ_TARGET"] ?? ""
        guard let target = FuzzTarget(rawValue: name) else {
            FileHandle.standardError.write(Data("amber-fuzz: set AMBER_FUZZ_TARGET to one of: \(names)\n".utf8))
            exit(2)
        }
        return target
    }()

    func run(_ bytes: UnsafeRawBufferPointer) {
        switch self {
        case .predicate: PredicateHarness.run(bytes)
        case .modelJSON: ModelHarness.runJSON(bytes)
        case .archive: ArchiveHarness.run(bytes)
        case .keyedArchive: KeyedArchiveHarness.run(bytes)
        case .pluginDescriptor: PluginDescriptorHarness.run(bytes)
        case .xcode: ModelHarness.runXcode(bytes)
        }
    }
}
