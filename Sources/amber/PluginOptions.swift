import Amber
import ArgumentParser
import Foundation

/// `--plugin PATH` (repeatable), `--plugin-config TEXT` and `--transformer
/// NAME=archive|binary` (repeatable), shared by every command.
struct PluginOptions: ParsableArguments {
    @Option(name: .customLong("plugin"),
            help: "A plugin file or directory to load (repeatable). AMBER_PLUGIN_PATH adds more, separated by ':'.")
    var plugins: [String] = []

    @Option(name: .customLong("plugin-config"),
            help: "Configuration handed to every plugin loaded (default: AMBER_PLUGIN_CONFIG, else the demo's settings).")
    var configuration: String?

    @Option(name: .customLong("transformer"),
            help: ArgumentHelp("A stand-in for a transformer this program lacks (repeatable): NAME=archive reads and writes "
                + "Amber's keyed archive of plist-like values (for a subclass of NSSecureUnarchiveFromDataTransformer), "
                + "NAME=binary hands over the stored bytes as binary values. Both take PropertyList values and store binary.",
                valueName: "name=archive|binary"))
    var standIns: [String] = []

    /// The sample plugins `swift build` puts beside this program; loaded when present.
    static let samplePlugins = ["libAmberColorPlugin.so", "libAmberDeflatePlugin.so", "libAmberAESGCMPlugin.so"]

    var effectiveConfiguration: String {
        configuration ?? ProcessInfo.processInfo.environment["AMBER_PLUGIN_CONFIG"] ?? BooksSample.demoConfiguration
    }

    /// Loads the named plugins (a failure is an error) and the sample plugins
    /// beside the program (a failure is a warning) into the shared registry,
    /// after the Books sample's functions (so its stores open in every command).
    func load() throws(AmberError) {
        try BooksSample.registerFunctions()
        for standIn in standIns { try Self.registerStandIn(standIn) }
        let fromEnvironment = (ProcessInfo.processInfo.environment["AMBER_PLUGIN_PATH"] ?? "")
            .split(separator: ":").map(String.init)
        let settings = effectiveConfiguration
        for path in fromEnvironment + plugins {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
                try Registry.shared.loadPlugins(inDirectory: path, configuration: settings)
            } else {
                try Registry.shared.loadPlugin(at: path, configuration: settings)
            }
        }
        let folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for name in Self.samplePlugins {
            let path = folder.appendingPathComponent(name).path
            guard FileManager.default.fileExists(atPath: path) else { continue }
            do throws(AmberError) {
                try Registry.shared.loadPlugin(at: path, configuration: settings)
            } catch {
                // Already loaded through --plugin, or not usable with this configuration: say so, go on.
                if case .pluginRefused(_, let message) = error, message.contains("already registered") { continue }
                FileHandle.standardError.write(Data("amber: warning: \(error)\n".utf8))
            }
        }
    }
}

extension PluginOptions {
    /// Registers the stand-in `text` names (`NAME=archive` or `NAME=binary`) in the shared registry.
    static func registerStandIn(_ text: String) throws(AmberError) {
        let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, ["archive", "binary"].contains(parts[1]) else {
            throw .invalidValue(place: "--transformer \(text)", expected: "NAME=archive or NAME=binary", given: "\"\(text)\"")
        }
        let (name, place) = (parts[0], "--transformer \(text)")
        let standIn: Transformer
        if parts[1] == "archive" {
            let archive = try Registry.shared.transformer(named: Registry.archiveTransformerName)
            standIn = Transformer(name: name, from: "PropertyList", to: "Binary", source: place,
                                  forward: { value in try archive.forward(value) }, reverse: { value in try archive.reverse(value) })
        } else {
            standIn = Transformer(name: name, from: "PropertyList", to: "Binary", source: place, forward: { value in
                if value.isNull { return .null }
                guard case .binary = value else {
                    throw AmberError.invalidValue(place: place, expected: "binary data (the bytes to store as they are)", given: "\(value.valueClass) \(value)")
                }
                return value
            }, reverse: { value in value })
        }
        try Registry.shared.register(standIn)
    }
}

/// `amber plugin inspect LIB.so`.
struct Plugin: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Work with plugins.", subcommands: [Inspect.self])

    struct Inspect: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the value classes (with layouts) and transformers a plugin provides, or why it is refused.")

        @Argument(help: "The plugin file.")
        var path: String

        @Option(name: .customLong("plugin-config"), help: "Configuration for the plugin's transformers.")
        var configuration: String?

        @Flag(help: "Print the plugin's classes and transformers as JSON.")
        var json = false

        func run() throws {
            try reportingErrors {
                // A registry of its own: inspecting registers nothing anywhere else.
                let registry = Registry()
                let info = try registry.loadPlugin(at: path, configuration: configuration ?? BooksSample.demoConfiguration)
                if json { return try printJSON(Self.object(info, registry)) }
                print("\(path): plugin \(info.name) \(info.version) (plugin ABI \(info.abi))")
                for name in info.classes {
                    if let layout = registry.structClass(named: name) {
                        let fields = layout.fields.map { "\($0.type) \($0.name) @\($0.offset)" }.joined(separator: ", ")
                        print("  struct \(name): \(layout.size) bytes, alignment \(layout.alignment): \(fields)")
                    } else {
                        print("  opaque \(name)")
                    }
                }
                for transformer in info.transformers {
                    var flags: [String] = []
                    if transformer.isReversible { flags.append("reversible") }
                    if transformer.isThreadSafe { flags.append("thread-safe") }
                    print("  transformer \(transformer.name): \(transformer.inputClass) -> \(transformer.outputClass)"
                          + (flags.isEmpty ? "" : " (\(flags.joined(separator: ", ")))"))
                }
            }
        }

        /// What `--json` prints.
        private static func object(_ info: PluginInfo, _ registry: Registry) -> [String: Any] {
            let classes: [[String: Any]] = info.classes.map { name in
                guard let layout = registry.structClass(named: name) else { return ["name": name, "kind": "opaque"] }
                return ["name": name, "kind": "struct", "size": layout.size, "alignment": layout.alignment,
                        "fields": layout.fields.map { ["name": $0.name, "type": "\($0.type)", "offset": $0.offset] }]
            }
            let transformers: [[String: Any]] = info.transformers.map {
                ["name": $0.name, "input": $0.inputClass, "output": $0.outputClass, "reversible": $0.isReversible, "threadSafe": $0.isThreadSafe]
            }
            return ["path": info.path, "name": info.name, "version": info.version, "abi": info.abi, "classes": classes,
                    "transformers": transformers]
        }
    }
}
