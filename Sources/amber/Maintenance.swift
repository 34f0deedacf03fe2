import Amber
import ArgumentParser
import Foundation

/// `amber check STORE`: SQLite's integrity and link checks and Amber's metadata.
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a store: every page, index, constraint and link, and its metadata.",
        discussion: "Prints each problem and exits with status 2 if there are any. The model is not bound, so plugins are not needed.")

    @Argument(help: "The store: a path, a file: URL or a postgresql:// URL.", transform: storeName)
    var store: String

    @Flag(help: "Print the result as JSON: {\"store\": …, \"problems\": […]}.")
    var json = false

    func run() throws {
        var problems: [String] = []
        try reportingErrors {
            // A file is checked without binding its model; a server's store with it.
            problems = isServer(store) ? try Store(existing: store).checkIntegrity() : try Store.checkIntegrity(ofStoreAt: store)
        }
        if json {
            try printJSON(["store": displayName(store), "problems": problems])
        } else if problems.isEmpty {
            print("\(displayName(store)): ok")
        } else {
            print("\(displayName(store)): \(problems.count) problem\(problems.count == 1 ? "" : "s")")
            for problem in problems { print("  \(problem)") }
        }
        if !problems.isEmpty { throw ExitCode(2) }
    }
}

/// `amber backup STORE DEST`: an online copy through SQLite's backup API.
struct Backup: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy a store, as of its last save, to a new file; other programs may go on saving meanwhile.",
        discussion: "DEST must not exist. The copy is written beside it and renamed into place when whole.")

    @Argument(help: "The store: a path, a file: URL or a postgresql:// URL.", transform: storeName)
    var store: String

    @Argument(help: "The new file to write.")
    var destination: String

    @OptionGroup var plugins: PluginOptions

    func run() throws {
        try reportingErrors {
            try plugins.load()
            try Store(existing: store).backup(to: destination)
            print("backed up \(displayName(store)) to \(destination)")
        }
    }
}

/// `amber vacuum STORE`: rebuild the file without the space of deleted objects.
struct Vacuum: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Rebuild a store's file without the space deleted objects left, and fold its log into it.")

    @Argument(help: "The store: a path, a file: URL or a postgresql:// URL.", transform: storeName)
    var store: String

    @OptionGroup var plugins: PluginOptions

    func run() throws {
        try reportingErrors {
            try plugins.load()
            guard !isServer(store) else {
                try Store(existing: store).vacuum()
                return print("vacuumed \(displayName(store)) (VACUUM ANALYZE of its tables on the server)")
            }
            let before = Self.size(store)
            try Store(existing: store).vacuum()
            print("vacuumed \(store): \(before) bytes before (with its log), \(Self.size(store)) after")
        }
    }

    /// The bytes of the store file and its write-ahead log.
    private static func size(_ path: String) -> Int {
        [path, path + "-wal"].reduce(0) { total, file in
            total + ((try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? Int ?? 0)
        }
    }
}
