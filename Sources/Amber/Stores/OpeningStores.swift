import AmberModel
import AmberPostgreSQLStore
import AmberSQLiteStore
import AmberStore
import AmberTransformers
import AmberValues
import Foundation

/// Opening stores: by URL, or as SQLite files and in-memory databases.
/// This layer knows every kind of store; each lives in a target of its own
/// below it and is reached here only through the store contract (`StoreEngine`).
extension Store {
    /// Opens the store `url` names (see ``/AmberStore/StoreURL``) with `model`:
    /// an SQLite file (created with its tables when missing or empty) or a
    /// new in-memory store.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidStoreURL(url:part:reason:)`` for text
    ///   that names no store (nothing is created); otherwise what
    ///   ``init(path:model:options:)`` throws.
    public convenience init(url: String, model: Model, options: Options = Options()) throws(AmberError) {
        try self.init(url: StoreURL(url), model: model, options: options)
    }

    /// Opens the store `url` names with `model`. A PostgreSQL store's
    /// schema gets its tables when it has none.
    ///
    /// - Throws: for a PostgreSQL store, ``/AmberValues/AmberError/server(store:state:message:)``
    ///   with the server's SQLSTATE when it cannot be reached or refuses
    ///   (a wrong password, an unknown database).
    public convenience init(url: StoreURL, model: Model, options: Options = Options()) throws(AmberError) {
        switch url.kind {
        case .file(let path): self.init(engine: try Self.fileEngine(path: path, model: model, options: options), url: url, options: options)
        case .memory: self.init(engine: try SQLiteStore(inMemory: model, options: options), url: url, options: options)
        case .postgresql(let text):
            self.init(engine: try PostgreSQLStore(address: PGAddress(text), model: model, options: options), url: url, options: options)
        }
    }

    /// Opens the SQLite store at `path` with `model`, creating the file and
    /// its tables if the file is missing or empty. Several processes may
    /// create the same new store at once: one makes it, the others open it.
    ///
    /// A store Core Data wrote (an app's `.sqlite` file, with its `-wal`
    /// beside it) opens too, given the model it was made with (imported
    /// from the app's `.xcdatamodeld`); saves write it as Core Data would
    /// (`Z_MAX`, `Z_OPT`, `Z_ENT`, join rows, archives), except to a store
    /// that keeps Core Data's persistent history, where saving is refused.
    /// docs/core-data-stores.md says what is read and written, and how.
    ///
    /// - Throws: ``/AmberValues/AmberError/modelMismatch(store:differences:)`` if the store
    ///   was made with a model of another shape, naming each difference;
    ///   ``/AmberValues/AmberError/notAStore(path:reason:)`` for a file that is not an
    ///   Amber store; ``/AmberValues/AmberError/busy(path:timeout:)`` if another connection
    ///   kept the file locked for longer than `options.busyTimeout`.
    public convenience init(path: String, model: Model, options: Options = Options()) throws(AmberError) {
        self.init(engine: try Self.fileEngine(path: path, model: model, options: options), url: .file(path), options: options)
    }

    /// The engine of the SQLite file at `path`: a store Core Data wrote, or an Amber store (made if missing).
    private static func fileEngine(path: String, model: Model, options: Options) throws(AmberError) -> any StoreEngine {
        if try SQLiteStore.holdsCoreDataStore(atPath: path, busyTimeout: options.busyTimeout) {
            return try SQLiteStore(coreDataPath: path, model: model, options: options)
        }
        return try SQLiteStore(path: path, model: model, options: options)
    }

    /// Opens an existing SQLite store with the model it carries, so a
    /// program (such as the `amber` CLI) can read a store it did not make.
    /// The model is bound against `registry`, which must hold the transformers it names.
    /// A store Core Data wrote opens with the model it keeps of
    /// itself (``coreDataModel(ofStoreAt:registry:)`` has it, with the import's notes).
    ///
    /// - Throws: ``/AmberValues/AmberError/notAStore(path:reason:)`` for a missing file or one without a readable model.
    public convenience init(openingExisting path: String, registry: Registry = .shared, options: Options = Options()) throws(AmberError) {
        if try SQLiteStore.holdsCoreDataStore(atPath: path, busyTimeout: options.busyTimeout) {
            let model = try Model(SQLiteStore.coreDataModel(atPath: path, registry: registry).model, registry: registry)
            self.init(engine: try SQLiteStore(coreDataPath: path, model: model, options: options), url: .file(path), options: options)
            return
        }
        self.init(engine: try SQLiteStore(openingExisting: path, registry: registry, options: options), url: .file(path), options: options)
    }

    /// Opens the existing store `url` names with the model it carries, as
    /// the path form of this initializer does for a file: an SQLite file or
    /// a PostgreSQL store.
    ///
    /// - Throws: ``/AmberValues/AmberError/notAStore(path:reason:)`` for a store
    ///   that is missing or has no readable model, and for `memory:`, which names a new, empty store.
    public convenience init(openingExisting url: StoreURL, registry: Registry = .shared, options: Options = Options()) throws(AmberError) {
        switch url.kind {
        case .file(let path): try self.init(openingExisting: path, registry: registry, options: options)
        case .memory: throw .notAStore(path: "memory:", reason: "memory: names a new, empty store, not one that exists")
        case .postgresql(let text):
            let address = try PGAddress(text)
            let model = try PostgreSQLStore.storedModel(at: address, registry: registry)
            self.init(engine: try PostgreSQLStore(address: address, model: model, options: options), url: url, options: options)
        }
    }

    /// Whether the file at `path` is a store Core Data wrote (its
    /// bookkeeping tables and no Amber metadata); false for a missing file
    /// and anything else. Such a store opens for reading with
    /// ``init(path:model:options:)`` and the model it was made with, or with
    /// `Store(openingExisting:)` and the model it keeps.
    public static func isCoreDataStore(atPath path: String) -> Bool { (try? SQLiteStore.holdsCoreDataStore(atPath: path)) ?? false }

    /// The model the store Core Data wrote at `path` keeps of itself (its
    /// `Z_MODELCACHE`), imported as an Xcode model is: the model description
    /// and the import's notes. Bind it with `Model(_:registry:)`; the
    /// transformers it names are looked up in `registry`.
    ///
    /// - Throws: ``/AmberValues/AmberError/notAStore(path:reason:)`` for a missing
    ///   file, one that is not a Core Data store, or one whose model cache is
    ///   empty or damaged; ``/AmberValues/AmberError/invalidXcodeModel(file:line:element:message:)``
    ///   for a cached model Amber cannot read.
    public static func coreDataModel(ofStoreAt path: String, registry: Registry = .shared) throws(AmberError) -> XcodeModelImport {
        try SQLiteStore.coreDataModel(atPath: path, registry: registry)
    }

    /// Copies the store Core Data wrote at `source` into a new Amber store
    /// at `destination`, so an app's data leaves Core Data's layout: every
    /// object and link, keys kept, values exactly as they read from the
    /// source, in one transaction, with the count of every entity checked at
    /// the end. The source is only read. `model` is the model the source was
    /// made with (nil: the model it keeps of itself, as
    /// ``coreDataModel(ofStoreAt:registry:)`` reads it), bound against `registry`;
    /// the new store is made with it. `progress` hears of each table copied
    /// (`copy Page`, rows done and in all) and may cancel by throwing.
    ///
    /// - Returns: the number of objects of each entity (its own, not its sub-entities').
    /// - Throws: ``/AmberValues/AmberError/fileExists(path:)`` when something is at
    ///   `destination`; what opening the source throws (a model that does not
    ///   match it, naming each difference); ``/AmberValues/AmberError/migrationFailed(store:problems:)``
    ///   when `progress` cancelled or a count differs. Nothing is left at `destination` after a failure.
    @discardableResult
    public static func importCoreDataStore(at source: String, into destination: String, model: Model? = nil, registry: Registry = .shared,
                                           progress: (@Sendable (MigrationProgress) throws -> Void)? = nil) throws(AmberError) -> [String: Int]
    {
        let bound: Model
        if let model {
            bound = model
        } else {
            bound = try Model(SQLiteStore.coreDataModel(atPath: source, registry: registry).model, registry: registry)
        }
        return try SQLiteStore.importCoreData(from: source, model: bound, to: destination, options: Options(), progress: progress)
    }

    /// An in-memory store with `model` (an SQLite database in memory, the
    /// store ``/AmberStore/StoreURL/memory`` names); it lives as long as this object.
    public static func inMemory(model: Model, options: Options = Options()) throws(AmberError) -> Store {
        Store(engine: try SQLiteStore(inMemory: model, options: options), url: .memory, options: options)
    }

    /// Where a migration keeps the copy of the store it makes first:
    /// `<path>.<version hash>.backup`, after the version it replaces.
    public static func backupPath(for path: String, version: String) -> String { SQLiteStore.backupPath(for: path, version: version) }

    /// The version hash of the model the store at `path` was last opened with.
    ///
    /// - Throws: ``/AmberValues/AmberError/notAStore(path:reason:)``.
    public static func versionHash(ofStoreAt path: String) throws(AmberError) -> String { try SQLiteStore.versionHash(ofStoreAt: path) }

    /// What opening the store at `path` with `model` would do to it, one
    /// line per change, without changing anything; empty when the store
    /// already has the model's shape. The migration is rehearsed on the
    /// store's objects in a transaction that is rolled back (it takes about
    /// as long as the migration), so the plan refuses exactly what opening
    /// would refuse, every problem at once; a store this process cannot
    /// write is planned from the models alone.
    ///
    /// - Throws: ``/AmberValues/AmberError/migrationFailed(store:problems:)`` naming every
    ///   change that cannot be inferred and every object the migration would
    ///   refuse, as opening would; ``/AmberValues/AmberError/notAStore(path:reason:)``.
    public static func migrationPlan(forStoreAt path: String, to model: Model) throws(AmberError) -> [String] {
        try SQLiteStore.migrationPlan(forStoreAt: path, to: model)
    }

    /// The version hash of the model the store `url` names was last opened
    /// with: an SQLite file or a PostgreSQL store.
    ///
    /// - Throws: ``/AmberValues/AmberError/notAStore(path:reason:)``, also for
    ///   `memory:`, which names a new, empty store; a server's errors.
    public static func versionHash(of url: StoreURL) throws(AmberError) -> String {
        switch url.kind {
        case .file(let path): try versionHash(ofStoreAt: path)
        case .memory: throw .notAStore(path: "memory:", reason: "memory: names a new, empty store, not one that exists")
        case .postgresql(let text): try PostgreSQLStore.versionHash(at: PGAddress(text))
        }
    }

    /// What opening the store `url` names with `model` would do to it, as
    /// the path form does for a file: an SQLite file or a PostgreSQL store.
    ///
    /// - Throws: ``/AmberValues/AmberError/migrationFailed(store:problems:)`` naming every
    ///   change that cannot be inferred and every object the migration would
    ///   refuse; ``/AmberValues/AmberError/notAStore(path:reason:)``, also for
    ///   `memory:`; a server's errors.
    public static func migrationPlan(for url: StoreURL, to model: Model) throws(AmberError) -> [String] {
        switch url.kind {
        case .file(let path): try migrationPlan(forStoreAt: path, to: model)
        case .memory: throw .notAStore(path: "memory:", reason: "memory: names a new, empty store, not one that exists")
        case .postgresql(let text): try PostgreSQLStore.migrationPlan(at: PGAddress(text), to: model)
        }
    }

    /// Checks the store file at `path` as ``/AmberStore/Store/checkIntegrity()`` does, without
    /// binding its model: a store whose plugins are missing can be checked.
    /// Checking writes nothing to the store (a log a crash left stays for the
    /// next opening to recover) and, where this process may write the
    /// folder, leaves no side files either; a store it cannot write is read
    /// as its opening reads it (docs/durability.md).
    ///
    /// - Throws: ``/AmberValues/AmberError/notAStore(path:reason:)`` if the file is
    ///   missing or cannot be opened; ``/AmberValues/AmberError/busy(path:timeout:)`` or an
    ///   SQLite error if reading it fails. A file that is damaged, not a
    ///   database or not an Amber store is reported in the problems instead.
    public static func checkIntegrity(ofStoreAt path: String) throws(AmberError) -> [String] {
        try SQLiteStore.checkIntegrity(ofStoreAt: path)
    }
}
