import Amber
import ArgumentParser
import Foundation

/// `amber migrate STORE --to MODEL [--dry-run] [--no-backup]`.
struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Migrate a store to another model: print the plan, then run it in one transaction.",
        discussion: """
            The mapping is inferred from names and renaming identifiers. A change that cannot be inferred \
            is an error naming it, and nothing changes. A file is first copied to \
            STORE.<old version hash>.backup unless --no-backup is given; a PostgreSQL store migrates \
            in one transaction under its write lock, and the server keeps no copy (pg_dump first for one).
            """)

    @Argument(help: "The store: a path, a file: URL or a postgresql:// URL.", transform: storeName)
    var store: String

    @Option(name: .customLong("to"), help: "The model to migrate to: a JSON model file or an Xcode model (.xcdatamodeld, .xcdatamodel, contents).")
    var model: String

    @Flag(name: .customLong("dry-run"), help: "Print the plan and change nothing.")
    var dryRun = false

    @Flag(name: .customLong("no-backup"), help: "Do not copy the store before migrating.")
    var noBackup = false

    @Flag(name: .customLong("allow-data-removal"),
          help: "Let the migration remove stored data (the objects of a dropped entity, the values of a dropped attribute, the links of a dropped relationship); without it such a migration is refused, listing what it would remove.")
    var allowDataRemoval = false

    @Flag(help: "Print the plan and the outcome as JSON: {\"store\", \"from\", \"to\", \"plan\", \"migrated\", \"backup\"}.")
    var json = false

    @OptionGroup var plugins: PluginOptions

    @OptionGroup var progress: ProgressOptions

    func run() throws {
        try reportingErrors {
            try plugins.load()
            let (description, notes) = try ModelFile.read(model, options: XcodeOptions.parse([]))
            ModelFile.printNotes(notes)
            let target = try Model(description)
            let url = try StoreURL(store)
            let plan = try Store.migrationPlan(for: url, to: target)
            let version = try Store.versionHash(of: url)
            let migrating = !plan.isEmpty && !dryRun
            let backup = migrating && !noBackup && !isServer(store) ? Store.backupPath(for: store, version: version) : nil
            if !json {
                guard !plan.isEmpty else {
                    print("\(displayName(store)) already has the model's shape (version \(target.versionHash)): nothing to do")
                    return
                }
                print("Migration plan for \(displayName(store)) (version \(version) to \(target.versionHash)):")
                for step in plan { print("  \(step)") }
            }
            if migrating {
                var options = Store.Options()
                options.backsUpBeforeMigrating = !noBackup
                options.allowsDataRemoval = allowDataRemoval
                let bar = progress.bar()
                defer { bar.finish() }  // also when the migration fails
                options.migrationProgress = { bar.show($0.step, $0.completed, of: $0.total) }
                _ = try isServer(store) ? Store(url: store, model: target, options: options) : Store(path: store, model: target, options: options)
                bar.finish()
            }
            if json {
                return try printJSON(["store": displayName(store), "from": version, "to": target.versionHash, "plan": plan,
                                      "migrated": migrating, "backup": backup ?? NSNull()])
            }
            guard migrating else { return }
            print("migrated" + (backup.map { "; the store as it was is in \($0)" } ?? ""))
        }
    }
}
