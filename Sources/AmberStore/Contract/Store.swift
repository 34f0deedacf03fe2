import AmberModel
import AmberValues
import Foundation

/// An Amber store: where a model's objects are kept. Contexts read from it
/// and save to it; which kind of store holds the objects (an SQLite file, an
/// in-memory database) is chosen when it is opened, by path or by URL
/// (``StoreURL``), and nothing else about the program changes with it.
///
/// Threads: a store may be shared by contexts on any threads; it runs one
/// caller's work at a time (a save holds it for its transaction). Each
/// `Context` (module Amber) and its objects are used from one thread at a time.
/// Several stores (in this process or others) may open one file: a save
/// that finds another connection writing waits up to
/// ``Options/busyTimeout`` and then fails with ``/AmberValues/AmberError/busy(path:timeout:)``,
/// keeping every pending change.
public final class Store: Sendable {
    /// How a store is opened.
    public struct Options: Sendable {
        /// How long a save (or a read) waits for another connection's lock
        /// before failing with ``/AmberValues/AmberError/busy(path:timeout:)``. Five
        /// seconds by default; zero fails at once.
        public var busyTimeout: Duration = .seconds(5)
        /// Whether opening a store made with another model migrates it to
        /// this one (true, the default) or fails with
        /// ``/AmberValues/AmberError/modelMismatch(store:differences:)``.
        public var migratesStore = true
        /// Whether a migration first copies the store to
        /// `Store.backupPath(for:version:)` (true, the default). A backup that
        /// cannot be written stops the migration before anything changes.
        /// For SQLite files; a PostgreSQL store migrates in one transaction,
        /// and the server keeps no copy (take one with `pg_dump` first).
        public var backsUpBeforeMigrating = true
        /// Whether a migration may remove stored data: the objects of an
        /// entity the new model drops, the values of a dropped attribute,
        /// the links of a dropped relationship. False by default: such a
        /// migration is refused (``/AmberValues/AmberError/migrationFailed(store:problems:)``),
        /// listing what it would remove and how much, and the store is
        /// unchanged. A migration that removes nothing stored (a dropped
        /// entity with no objects, a dropped derived attribute) needs no consent.
        public var allowsDataRemoval = false
        /// Called as a migration proceeds, on the opening thread; an error it
        /// throws cancels the migration (nothing changes).
        public var migrationProgress: (@Sendable (MigrationProgress) throws -> Void)?
        /// What a save that returned survives: ``Durability/normal`` (the
        /// default) or ``Durability/full``.
        public var durability = Durability.normal
        /// Whether each save's changes are recorded in the store's history
        /// (true, the default): what ``Store/history(after:)`` reads and how
        /// contexts in other processes learn exactly what changed. Off, a
        /// save records only that it happened
        /// (``HistoryTransaction/changesRecorded`` is false), and contexts in
        /// other processes compare every object they hold after it.
        public var recordsHistory = true

        /// The default options.
        public init() {}

        /// Options with `busyTimeout`.
        public init(busyTimeout: Duration) { self.busyTimeout = busyTimeout }
    }

    /// What a save that returned survives. Either way a crash never leaves a
    /// store damaged or a save half written: a save is all there or not at all.
    public enum Durability: Sendable {
        /// A save survives the process crashing or being killed; a power
        /// failure or an operating-system crash may undo the last saves
        /// before the write-ahead log is next synced (SQLite's
        /// `synchronous = NORMAL` in WAL mode).
        case normal
        /// A save survives power failure too: the log is synced to disk at
        /// every save before the save returns (`synchronous = FULL`). Costs
        /// one `fsync` per save; see BENCHMARKS.md.
        case full
    }

    /// Where the store is.
    public let url: StoreURL
    /// The model the store was opened with.
    public let model: Model
    /// The store's UUID, fixed when the store is created; part of every object ID URI.
    public let identifier: UUID
    /// The options the store was opened with.
    public let options: Options
    /// The store behind the contract (see `docs/architecture.md`).
    package let engine: any StoreEngine

    /// A store over `engine`, opened at `url` with `options`.
    package init(engine: any StoreEngine, url: StoreURL, options: Options) {
        self.engine = engine
        self.url = url
        self.model = engine.model
        self.identifier = engine.identifier
        var kept = options
        // The progress handler is for the opening only (a C caller's context pointer may not outlive it).
        kept.migrationProgress = nil
        self.options = kept
    }

    /// The file, or nil for a store that is not a file (in memory, on a server).
    public var path: String? { url.filePath }

    /// What this store can do beyond reading and saving objects; a call it
    /// cannot honour fails with ``/AmberValues/AmberError/unsupported(store:capability:)``.
    public var capabilities: StoreCapabilities { engine.capabilities }

    /// Statements run so far on the store's connection (for tests that count queries).
    package var statementCount: Int { engine.statementCount }

    /// The extended attribute keys the objects of `entity` hold, sorted, with how many objects hold each.
    package func extendedKeyUsage(of entity: Entity) throws(AmberError) -> [(key: String, count: Int)] {
        try engine.extendedKeyUsage(of: entity)
    }

    // MARK: Maintenance

    /// Checks the whole store: its structure, and that every to-one link
    /// points at a row that exists. Returns one line per problem; empty when sound.
    ///
    /// - Throws: ``/AmberValues/AmberError/unsupported(store:capability:)`` for a store without integrity checks.
    public func checkIntegrity() throws(AmberError) -> [String] { try engine.checkIntegrity() }

    /// Copies the store, as one consistent snapshot, to a new file at
    /// `destination`, while contexts go on reading and saving.
    ///
    /// - Throws: ``/AmberValues/AmberError/fileExists(path:)`` if something is at
    ///   `destination` (nothing is written); ``/AmberValues/AmberError/unsupported(store:capability:)``.
    public func backup(to destination: String) throws(AmberError) { try engine.backup(to: destination) }

    /// Gives the space of deleted rows back to the file system.
    ///
    /// - Throws: ``/AmberValues/AmberError/unsupported(store:capability:)`` for a store that cannot.
    public func vacuum() throws(AmberError) { try engine.vacuum() }

    /// Moves what the write-ahead log holds into the store file and empties the log.
    ///
    /// - Throws: ``/AmberValues/AmberError/unsupported(store:capability:)`` for a store without a log.
    public func checkpoint() throws(AmberError) { try engine.checkpoint() }

    /// Copies what the write-ahead log holds into the store file now, as
    /// far as other connections' readers allow and without waiting for
    /// them, as closing the file's last connection does, and says if the
    /// disk refused: call it before releasing a store to learn that the file
    /// holds every save (``checkpoint()`` also empties the log, waiting for
    /// readers). `amber_store_close` and Python's `Store.close()` call it.
    /// Nothing to do for a store without a log, or one opened read-only.
    ///
    /// - Throws: ``/AmberValues/AmberError/storageFailed(path:message:)`` when the disk
    ///   is full or failed: every save is still safe in the log beside the
    ///   file, and the message says to keep the two together.
    public func foldLog() throws(AmberError) { try engine.foldLog() }

    // MARK: History

    /// The token of the last transaction in the history: read after it to
    /// get only what is saved from now on.
    ///
    /// - Throws: ``/AmberValues/AmberError/unsupported(store:capability:)`` for a store that keeps no history.
    public func lastHistoryToken() throws(AmberError) -> HistoryToken {
        guard let sequence = try engine.lastHistorySequence() else { throw .unsupported(store: url.description, capability: "history") }
        return HistoryToken(storeIdentifier: identifier, sequence: sequence)
    }

    /// The transactions saved after `token` (every one the history keeps
    /// when nil), oldest first: each save and batch change, with every object
    /// it inserted, updated (with the keys that changed) or deleted. For
    /// exporting changes and keeping other systems in step.
    ///
    /// - Throws: ``/AmberValues/AmberError/historyUnavailable(store:reason:)`` for a token
    ///   of another store, or one whose later transactions were purged;
    ///   ``/AmberValues/AmberError/unsupported(store:capability:)`` for a store that keeps no history.
    public func history(after token: HistoryToken? = nil) throws(AmberError) -> [HistoryTransaction] {
        try engine.history(after: check(token)?.sequence)
    }

    /// Deletes the transactions up to and including `token` from the
    /// history. Reading after an earlier token then fails, and contexts in
    /// other processes that had not yet merged them compare their objects instead.
    ///
    /// - Throws: ``/AmberValues/AmberError/historyUnavailable(store:reason:)`` for a token of another store.
    public func purgeHistory(through token: HistoryToken) throws(AmberError) {
        try engine.purgeHistory(through: check(token)?.sequence ?? 0)
    }

    /// `token`, if it is this store's.
    private func check(_ token: HistoryToken?) throws(AmberError) -> HistoryToken? {
        guard let token, token.storeIdentifier != identifier else { return token }
        throw .historyUnavailable(store: url.description,
                                  reason: "the token \(token) belongs to the store \(token.storeIdentifier.uuidString), not to this one (\(identifier.uuidString))")
    }
}
