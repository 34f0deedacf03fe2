import Amber
import AmberCodegen
import ArgumentParser
import Foundation

@main
struct AmberCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "amber",
        abstract: "Amber: an object store with typed, checked attributes over SQLite.",
        version: Amber.version,
        subcommands: [Demo.self, Schema.self, Query.self, Migrate.self, ImportCoreData.self, ModelCommand.self, GenerateCommand.self, Plugin.self, Check.self, Backup.self, Vacuum.self])
}

/// Runs `body`, turning an Amber error into a message on stderr and exit status 1.
func reportingErrors(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as AmberError {
        FileHandle.standardError.write(Data("amber: \(error)\n".utf8))
        throw ExitCode(1)
    }
}

/// Prints `object` (dictionaries, arrays, strings, numbers, Booleans) as
/// pretty JSON with sorted keys: what every `--json` flag prints.
func printJSON(_ object: Any) throws {
    let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
    print(String(decoding: data, as: UTF8.self))
}

/// Renders a value for a terminal: strings without quotes, everything else as Amber prints it.
func display(_ value: Value) -> String {
    if case .string(let s) = value { return s }
    if case .null = value { return "" }
    if case .custom = value, !BooksSample.hex(value).isEmpty { return BooksSample.hex(value) }
    return value.description
}

/// The store a STORE argument names: a file's path (a `file:` URL decoded),
/// or a server's URL as given. `memory:` names a new, empty store, which no
/// command has anything to do with; other text is refused naming the part that is wrong.
func storeName(_ text: String) throws -> String {
    let url = try StoreURL(text)
    switch url.kind {
    case .file(let path): return path
    case .memory: throw memoryRefusal(text)
    case .postgresql: return text
    }
}

/// Whether a STORE argument (after ``storeName(_:)``) names a store on a server rather than a file.
func isServer(_ name: String) -> Bool { (try? StoreURL(name))?.filePath == nil }

/// How output names a STORE argument: a server's URL without its password.
func displayName(_ name: String) -> String { (try? StoreURL(name))?.description ?? name }

private func memoryRefusal(_ text: String) -> AmberError {
    .invalidStoreURL(url: text, part: "scheme memory", reason: "an in-memory store starts empty and ends with its program; "
        + "the CLI reads and changes stores that exist, so give a path, a file: URL or a postgresql:// URL")
}

extension Store {
    /// The existing store a STORE argument (after ``storeName(_:)``) names, with the model it carries.
    convenience init(existing name: String) throws {
        try self.init(openingExisting: StoreURL(name))
    }

    /// The existing store a STORE argument names, opened with the model in
    /// `modelFile` when one is given, else with the model it carries (a
    /// store Core Data wrote: the model it keeps, with the import's notes on
    /// standard error). A store made with another model is refused, never migrated.
    convenience init(existing name: String, modelFile: String?, xcode: XcodeOptions) throws {
        guard let modelFile else {
            // A store Core Data wrote keeps its model in Core Data's form: its import notes are worth seeing.
            if let path = try StoreURL(name).filePath, Store.isCoreDataStore(atPath: path) {
                let imported = try Store.coreDataModel(ofStoreAt: path)
                ModelFile.printNotes(imported.notes)
                try self.init(path: path, model: Model(imported.model))
                return
            }
            try self.init(existing: name)
            return
        }
        // A read command never makes a store: a mistyped path is an error.
        if let path = try StoreURL(name).filePath, !FileManager.default.fileExists(atPath: path) {
            throw AmberError.notAStore(path: path, reason: "no such file")
        }
        let (description, notes) = try ModelFile.read(modelFile, options: xcode)
        ModelFile.printNotes(notes)
        var options = Options()
        options.migratesStore = false
        try self.init(url: StoreURL(name), model: Model(description), options: options)
    }
}

/// `--model FILE`: the model to open a store with, for a store Core Data wrote.
struct StoreModelOptions: ParsableArguments {
    @Option(name: .customLong("model"),
            help: ArgumentHelp("The model the store was made with: an Xcode model (.xcdatamodeld, .xcdatamodel) or a JSON model file. "
                + "Needed for a store Core Data wrote, which carries no Amber model.", valueName: "FILE"))
    var file: String?
}
