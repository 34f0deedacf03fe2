import Amber
import ArgumentParser
import Foundation

@main
struct AmberCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "amber",
        abstract: "Amber: an object store with typed, checked attributes over SQLite.",
        version: Amber.version,
        subcommands: [Demo.self, Schema.self, Query.self, Migrate.self, ModelCommand.self, Plugin.self, Check.self, Backup.self, Vacuum.self])
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

/// The file a STORE argument names, as every Amber language names stores
/// (`StoreURL`): a path or a `file:` URL. `memory:` names a new, empty store,
/// which no command has anything to do with; other text is refused naming
/// the part that is wrong.
func storeFile(_ text: String) throws -> String {
    let url = try StoreURL(text)
    guard let path = url.filePath else {
        throw AmberError.invalidStoreURL(url: text, part: "scheme memory", reason: "an in-memory store starts empty and ends with its program; "
            + "the CLI reads and changes stores that exist, so give a path or a file: URL")
    }
    return path
}
