import Amber
import ArgumentParser
import Foundation

/// `amber import-coredata STORE.sqlite --to NEW.amber [--model MODEL]`.
struct ImportCoreData: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import-coredata",
        abstract: "Copy a store Core Data wrote into a new Amber store: every object and link, with each entity's count checked.",
        discussion: """
            The Core Data store is only read. Its model is the one it keeps of itself unless --model names the \
            app's (an Xcode model or a JSON model file); the new store is made with it. A transformer the model \
            names must be loaded (--plugin) or stood in for (--transformer NAME=binary copies the stored bytes).
            """)

    @Argument(help: "The store Core Data wrote (its -wal beside it, if any).")
    var store: String

    @Option(name: .customLong("to"), help: "The new Amber store to write (nothing may be at this path).")
    var destination: String

    @OptionGroup var storeModel: StoreModelOptions

    @OptionGroup var xcode: XcodeOptions

    @OptionGroup var plugins: PluginOptions

    @OptionGroup var progress: ProgressOptions

    func run() throws {
        try reportingErrors {
            try plugins.load()
            let model: Model
            if let file = storeModel.file {
                let (description, notes) = try ModelFile.read(file, options: xcode)
                ModelFile.printNotes(notes)
                model = try Model(description)
            } else {
                let imported = try Store.coreDataModel(ofStoreAt: store)
                ModelFile.printNotes(imported.notes)
                model = try Model(imported.model)
            }
            let bar = progress.bar()
            defer { bar.finish() }  // also when the copy fails
            let counts = try Store.importCoreDataStore(at: store, into: destination, model: model,
                                                       progress: { bar.show($0.step, $0.completed, of: $0.total) })
            bar.finish()
            let total = counts.values.reduce(0, +)
            print("copied \(total) objects into \(destination): "
                + counts.filter { $0.value > 0 }.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
    }
}
