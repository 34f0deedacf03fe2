import AmberModel
import AmberValues
import ArgumentParser
import Foundation

/// `generate swift|python MODEL [-o PATH]`: the command both
/// `amber generate` and the `amber-generate` tool (which the AmberGenerate
/// build-tool plugin runs, and which builds without the stores) run.
public struct GenerateCommand: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Generate typed classes from a model file (JSON or Xcode).",
        discussion: """
            The Swift output is one file: a class per entity (a sub-entity's class inherits from its
            parent's), a struct per struct value class, and an enum listing the classes. The
            AmberGenerate build-tool plugin runs this on the model files of a SwiftPM target.
            The Python output is a module of annotated classes for amber.Context; the C output
            a header of typed accessors on amber.h.
              amber generate swift Library.amber.json -o Sources/App/Generated
              amber generate python Library.amber.json -o app/library.py
              amber generate c Library.amber.json -o include/library.h
            """,
        subcommands: [Swift.self, Python.self, C.self])

    public init() {}

    /// `generate swift`.
    public struct Swift: ParsableCommand {
        public static let configuration = CommandConfiguration(abstract: "Generate Swift classes (MODEL-NAME.swift in a folder).")

        @OptionGroup var input: ModelInput

        @Option(help: "The class root entities' classes inherit from (it must inherit from TypedObject).")
        var baseClass: String?

        public init() {}

        public func run() throws {
            try input.generate(fileName: { $0 + ".swift" }) { description, name, source in
                var generator = SwiftGenerator(model: description, modelName: name, sourceName: source)
                if let baseClass { generator.baseClass = baseClass }
                return try generator.source()
            }
        }
    }

    /// `generate python`.
    public struct Python: ParsableCommand {
        public static let configuration = CommandConfiguration(abstract: "Generate a Python module of typed classes (model_name.py in a folder).")

        @OptionGroup var input: ModelInput

        public init() {}

        public func run() throws {
            try input.generate(fileName: { $0.lowercased() + ".py" }) { description, _, source in
                try PythonGenerator(model: description, sourceName: source).source()
            }
        }
    }

    /// `generate c`.
    public struct C: ParsableCommand {
        public static let configuration = CommandConfiguration(abstract: "Generate a C header of typed accessors (prefix.h in a folder).")

        @OptionGroup var input: ModelInput

        @Option(help: "The prefix of the model-wide names, PREFIX_handles and PREFIX_resolve (default: the model's name).")
        var prefix: String?

        public init() {}

        public func run() throws {
            try input.generate(fileName: { CGenerator.snake(prefix ?? $0) + ".h" }) { description, name, source in
                try CGenerator(model: description, sourceName: source, prefix: prefix ?? name).source()
            }
        }
    }
}

/// What every `generate` command reads and where it writes.
public struct ModelInput: ParsableArguments {
    @Argument(help: "A JSON model file, or an Xcode data model (.xcdatamodeld, .xcdatamodel, or its contents file).")
    var model: String

    @Option(name: [.short, .customLong("output")], help: "A file, or a folder to write the generated file in (default: standard output).")
    var output: String?

    @Option(name: .customLong("model-version"), help: "For a .xcdatamodeld bundle: the model version to read (default: its current version).")
    var modelVersion: String?

    public init() {}

    /// Reads the model, makes the text with `make` (given the model, its name and its file's name) and writes
    /// it (in a folder, as `fileName(name)`); a refused element or an Amber error is a message and exit status 1.
    func generate(fileName: (String) -> String, _ make: (ModelDescription, String, String) throws -> String) throws {
        do {
            let description = try ModelSource.read(model, version: modelVersion)
            let name = ModelSource.name(of: model)
            try ModelSource.write(try make(description, name, ModelSource.fileName(of: model)), to: output, named: fileName(name))
        } catch let error as GenerationError {
            FileHandle.standardError.write(Data("amber: \(model): \(error)\n".utf8))
            throw ExitCode(1)
        } catch let error as AmberError {
            FileHandle.standardError.write(Data("amber: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}

/// Model files in, generated files out.
enum ModelSource {
    /// The model in `path`: an Xcode model (a folder, or a file starting with `<`) or a JSON model file.
    static func read(_ path: String, version: String?) throws -> ModelDescription {
        let url = URL(fileURLWithPath: path)
        var isDirectory: ObjCBool = false
        let folder = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
        let xml = FileManager.default.contents(atPath: path).map { $0.first { ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) } == UInt8(ascii: "<") }
        guard folder || xml == true else { return try ModelDescription(contentsOf: url) }
        if let version { return try XcodeModelImport(contentsOf: url, version: version).model }
        return try XcodeModelImport(contentsOf: url).model
    }

    /// The file name a model is named by in generated comments: `Library.xcdatamodeld` for its contents file too.
    static func fileName(of path: String) -> String {
        var url = URL(fileURLWithPath: path)
        if url.lastPathComponent == "contents" { url.deleteLastPathComponent() }
        return url.lastPathComponent
    }

    /// A model's name: its file name without extensions (`Library` for
    /// `Library.amber.json`), with each character an identifier cannot have made `_`.
    static func name(of path: String) -> String {
        let base = fileName(of: path).prefix { $0 != "." }
        let name = String(String.UnicodeScalarView(base.unicodeScalars.map { scalar in
            ("0"..."9").contains(scalar) || ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || scalar == "_" ? scalar : "_"
        }))
        return name.first.map { ("0"..."9").contains($0) } == true || name.isEmpty ? "_" + name : name
    }

    /// Writes `text` to `output` (a file, or a folder to put `fileName` in), or prints it when `output` is nil.
    /// An unchanged file is left alone, so what depends on it is not rebuilt.
    static func write(_ text: String, to output: String?, named fileName: String) throws {
        guard let output else {
            print(text, terminator: "")
            return
        }
        var isDirectory: ObjCBool = false
        let isFolder = FileManager.default.fileExists(atPath: output, isDirectory: &isDirectory) && isDirectory.boolValue
        let url = isFolder || output.hasSuffix("/") ? URL(fileURLWithPath: output).appendingPathComponent(fileName) : URL(fileURLWithPath: output)
        if FileManager.default.contents(atPath: url.path) == Data(text.utf8) { return }
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }
}
