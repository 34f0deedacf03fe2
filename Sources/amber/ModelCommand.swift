import Amber
import ArgumentParser
import Foundation

/// `amber model import|check`: model files, JSON or Xcode.
struct ModelCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "model",
        abstract: "Import Xcode data models and check model files.",
        discussion: """
            A model file is a JSON model file (docs/model-json.md) or an Xcode data model: a .xcdatamodeld
            bundle (its current version, or --model-version), a .xcdatamodel folder, or its contents file.
            What Amber does differently from an Xcode model is printed as notes (docs/xcode-models.md).
              amber model import Notes.xcdatamodeld -o notes.json
              amber model check notes.json --plugin libcolor.so
            """,
        subcommands: [Import.self, Check.self])

    /// `amber model import XCODE-MODEL [-o FILE]`.
    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Convert an Xcode data model to a JSON model file; notes go to standard error.")

        @Argument(help: "A .xcdatamodeld bundle, a .xcdatamodel folder, or a contents file.")
        var path: String

        @Option(name: [.short, .customLong("output")], help: "Write the JSON model here (default: standard output).")
        var output: String?

        @OptionGroup var xcode: XcodeOptions

        @OptionGroup var plugins: PluginOptions

        func run() throws {
            try reportingErrors {
                try plugins.load()
                let (model, notes) = try ModelFile.read(path, as: .xcode, options: xcode)
                ModelFile.printNotes(notes)
                let text = model.jsonText(pretty: true) + "\n"
                guard let output else {
                    print(text, terminator: "")
                    return
                }
                do {
                    try Data(text.utf8).write(to: URL(fileURLWithPath: output))
                } catch {
                    FileHandle.standardError.write(Data("amber: \(output): cannot write: \(error.localizedDescription)\n".utf8))
                    throw ExitCode(1)
                }
                print("wrote \(output): \(ModelFile.summary(model)), \(notes.count) note\(notes.count == 1 ? "" : "s")")
            }
        }
    }

    /// `amber model check FILE`.
    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Bind a model file (JSON or Xcode) with the registered classes and transformers; print every problem and note.")

        @Argument(help: "A JSON model file or an Xcode data model.")
        var path: String

        @OptionGroup var xcode: XcodeOptions

        @OptionGroup var plugins: PluginOptions

        @Flag(help: "Print the result as JSON: {\"file\", \"ok\", \"versionHash\", \"entities\", \"templates\", \"notes\", \"problems\"}.")
        var json = false

        func run() throws {
            try reportingErrors {
                try plugins.load()
                let (description, notes) = try ModelFile.read(path, options: xcode)
                if !json { ModelFile.printNotes(notes) }
                let (hash, problems) = try Self.bind(description)
                if json {
                    try printJSON(["file": path, "ok": problems.isEmpty, "versionHash": hash ?? NSNull(), "entities": description.entities.count,
                                   "templates": description.templates.count, "notes": notes.map(\.description), "problems": problems])
                } else {
                    if let hash { print("ok: \(ModelFile.summary(description)), version hash \(hash)") }
                    for problem in problems { FileHandle.standardError.write(Data("problem: \(problem)\n".utf8)) }
                }
                guard problems.isEmpty else {
                    FileHandle.standardError.write(Data("amber: \(path) does not bind: \(problems.count) problem\(problems.count == 1 ? "" : "s")\n".utf8))
                    throw ExitCode(1)
                }
            }
        }

        /// The model's version hash if it binds, else each problem.
        private static func bind(_ description: ModelDescription) throws(AmberError) -> (hash: String?, problems: [String]) {
            do throws(AmberError) {
                return (try Model(description).versionHash, [])
            } catch .invalidModel(let problems) {
                return (nil, problems.map(\.description))
            }
        }
    }
}

/// How Xcode models are read: `--model-version` and `--secure-unarchiver`.
struct XcodeOptions: ParsableArguments {
    // Not `--version`: every command has that one, printing Amber's version.
    @Option(name: .customLong("model-version"), help: "For a .xcdatamodeld bundle: the model version to read (default: its current version).")
    var version: String?

    @Option(name: .customLong("secure-unarchiver"),
            help: ArgumentHelp("A value transformer name that subclasses NSSecureUnarchiveFromDataTransformer (repeatable): stored through Amber's archive.",
                               valueName: "NAME"))
    var secureUnarchivers: [String] = []

    /// The importer's options, with the shared registry (after plugins are loaded).
    var importOptions: XcodeImportOptions {
        XcodeImportOptions(registry: .shared, secureUnarchiverSubclasses: Set(secureUnarchivers))
    }
}

/// Reading a model file, whichever its format.
enum ModelFile {
    enum Kind { case json, xcode, store }

    /// What `path` holds, from what it is (a folder is an Xcode model) and how it starts.
    static func kind(of path: String) -> Kind {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue { return .xcode }
        if let handle = FileHandle(forReadingAtPath: path) {
            defer { try? handle.close() }
            let head = (try? handle.read(upToCount: 64)) ?? Data()
            if head.starts(with: Data("SQLite format 3\u{0}".utf8)) { return .store }
            // Past a byte-order mark and white space, JSON starts with "{" and XML with "<".
            let first = head.drop { [0xEF, 0xBB, 0xBF, 0x20, 0x09, 0x0A, 0x0D].contains($0) }.first
            if first == UInt8(ascii: "{") { return .json }
            if first == UInt8(ascii: "<") { return .xcode }
        }
        switch URL(fileURLWithPath: path).pathExtension {
        case "json": return .json
        case "xml", "xcdatamodel", "xcdatamodeld": return .xcode
        default: return path.hasSuffix("/contents") || path == "contents" ? .xcode : .store
        }
    }

    /// The model in `path` (JSON or Xcode; `kind` forces one) and the Xcode importer's notes.
    static func read(_ path: String, as kind: Kind? = nil, options: XcodeOptions) throws(AmberError) -> (ModelDescription, [XcodeImportNote]) {
        let url = URL(fileURLWithPath: path)
        switch kind ?? self.kind(of: path) {
        case .json:
            return (try ModelDescription(contentsOf: url), [])
        case .xcode:
            let imported = try xcode(url, options: options)
            return (imported.model, imported.notes)
        case .store:
            throw .invalidJSON(path: path, message: "not a model file (JSON or Xcode); amber schema prints the model a store carries")
        }
    }

    private static func xcode(_ url: URL, options: XcodeOptions) throws(AmberError) -> XcodeModelImport {
        guard let version = options.version else { return try XcodeModelImport(contentsOf: url, options: options.importOptions) }
        guard url.pathExtension == "xcdatamodeld" else {
            throw .invalidXcodeModel(file: url.path, line: 0, element: "model", message: "--model-version applies to a .xcdatamodeld bundle")
        }
        return try XcodeModelImport(contentsOf: url, version: version, options: options.importOptions)
    }

    /// Every note on standard error, one per line.
    /// Prints each note once on standard error, with every place it applies to.
    static func printNotes(_ notes: [XcodeImportNote]) {
        for group in XcodeImportNote.grouped(notes) { FileHandle.standardError.write(Data("note: \(group)\n".utf8)) }
    }

    /// `3 entities, 1 template`.
    static func summary(_ model: ModelDescription) -> String {
        let (entities, templates) = (model.entities.count, model.templates.count)
        return "\(entities) entit\(entities == 1 ? "y" : "ies"), \(templates) template\(templates == 1 ? "" : "s")"
    }
}
