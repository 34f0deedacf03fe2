import AmberModel
import AmberValues
import Foundation

/// What contexts, live queries, migrations and maintenance ask of a store:
/// the contract every store (SQLite, in-memory, and the servers and layouts
/// to come) fulfils behind ``Store``. Nothing above it sees SQL: requests
/// arrive as the model's entities, relationships and predicate trees, and
/// rows leave as ``FetchedRows`` in the entity's ``RowLayout``.
///
/// Keys are the store's `Int64` primary keys; a "table" is a root entity's
/// index (a hierarchy shares one). Every call may come from any thread: a
/// store runs one caller's work at a time and a write is atomic.
///
/// To write a store: conform a class in a target of its own (below `Amber`,
/// beside `AmberSQLiteStore`), read rows into ``FetchedRows``, settle
/// conflicts as ``MergePolicy`` says, record ``HistoryTransaction``s, post
/// what each write changed to the ``InboxList``, and answer what it cannot do
/// with ``/AmberValues/AmberError/unsupported(store:capability:)`` (the
/// defaults below do). Then run the store suite (`StoreSuiteTests`) on it.
package protocol StoreEngine: AnyObject, Sendable {
    /// The model the store was opened with.
    var model: Model { get }
    /// The store's UUID, fixed when it was made; part of every object ID.
    var identifier: UUID { get }
    /// How errors and problems name the store (a path, `memory:`, a URL without its password).
    var place: String { get }
    /// What the store can do beyond the contract's core.
    var capabilities: StoreCapabilities { get }
    /// Statements (or round trips) run so far, for tests that count them.
    var statementCount: Int { get }

    // MARK: Reading

    /// The rows of `entity` (and its sub-entities) that `request` matches, in its order.
    func fetchRows(of entity: Entity, matching request: FetchRequest) throws(AmberError) -> FetchedRows
    /// The rows of `entity` whose `column` holds one of `keys`, in primary-key
    /// order after the columns of `order`: faults, members, prefetches.
    func fetchRows(of entity: Entity, where column: KeyColumn, in keys: [Int64], orderedBy order: [String]) throws(AmberError) -> FetchedRows
    /// Every row of `entity` whose to-one `relationship` is set, in primary-key order.
    func fetchRows(of entity: Entity, linkedThrough relationship: Relationship) throws(AmberError) -> FetchedRows
    /// How many rows of `entity` `request` matches (limit and offset included).
    func count(of entity: Entity, matching request: FetchRequest) throws(AmberError) -> Int
    /// The primary keys of the rows `request` matches, in its order.
    func primaryKeys(of entity: Entity, matching request: FetchRequest) throws(AmberError) -> [Int64]
    /// `request` prepared for ``sortedKeys(_:among:)``, which a live query runs after every change.
    func sortedKeysQuery(of entity: Entity, matching request: FetchRequest) throws(AmberError) -> any SortedKeysQuery
    /// The keys `query` matches with the values they sort by, in its order;
    /// with `keys`, only among those rows, in no order, without limit or offset.
    func sortedKeys(_ query: any SortedKeysQuery, among keys: [Int64]?) throws(AmberError) -> [SortedKey]

    /// The extended attribute keys the rows of `entity` (and the entities
    /// below it) hold, sorted, each with how many rows hold it; none for an
    /// entity that is not extensible.
    func extendedKeyUsage(of entity: Entity) throws(AmberError) -> [(key: String, count: Int)]

    // MARK: Links

    /// The rows of `entity` whose to-one `relationship` holds one of `keys`, as (key, destination key).
    func links(of entity: Entity, through relationship: Relationship, to keys: [Int64]) throws(AmberError) -> [(Int64, Int64)]
    /// Join-table `relationship`'s links whose far end is one of `keys`, as (near, far).
    func joinedLinks(through relationship: Relationship, to keys: [Int64]) throws(AmberError) -> [(Int64, Int64)]
    /// Join-table `relationship`'s links from any of `keys`, as (near, far), in the relationship's order.
    func joinedPairs(through relationship: Relationship, from keys: [Int64]) throws(AmberError) -> [(Int64, Int64)]
    /// How many keys join-table `relationship` links to `key`.
    func joinedCount(through relationship: Relationship, from key: Int64) throws(AmberError) -> Int
    /// How many rows of `entity` hold `key` in to-one `relationship`.
    func count(of entity: Entity, through relationship: Relationship, to key: Int64) throws(AmberError) -> Int

    // MARK: Writing

    /// Writes `changes` atomically, settling conflicts by `policy`, records
    /// the transaction in the history as `origin`, and posts what it wrote to
    /// every inbox but `inbox`.
    ///
    /// - Throws: ``/AmberValues/AmberError/saveFailed(_:)`` listing every problem (nothing written);
    ///   ``/AmberValues/AmberError/busy(path:timeout:)``.
    func write<Row: RowSource>(_ changes: ChangeSet<Row>, policy: MergePolicy, from inbox: ChangeInbox?, origin: WriteOrigin)
        throws(AmberError) -> WrittenKeys
    /// The uniqueness constraints writing `changes` would break, found without writing.
    func uniquenessProblems<Row: RowSource>(writing changes: ChangeSet<Row>, policy: MergePolicy) -> [SaveProblem]
    /// An inbox that receives what every other context's write on this store wrote.
    func openInbox() -> ChangeInbox

    /// Sets `assignments` on every row of `entity` that `request` matches,
    /// in one transaction without reading objects: each computed value
    /// checked per row, rules and uniqueness kept, versions raised, derived
    /// values computed, the transaction recorded in the history and posted to
    /// every inbox but `inbox`.
    ///
    /// - Returns: the rows changed (entity index and key) in the request's
    ///   order, and the record of what changed for the contexts holding them.
    /// - Throws: ``/AmberValues/AmberError/saveFailed(_:)`` naming what a row broke (nothing changed).
    func batchUpdate(_ entity: Entity, matching request: FetchRequest, setting assignments: [BatchAssignment], origin: WriteOrigin,
                     from inbox: ChangeInbox?) throws(AmberError) -> BatchOutcome
    /// Deletes every row of `entity` that `request` matches, in one
    /// transaction, honouring delete rules: nullify clears the inverse links
    /// in the store; deny, cascade and no action refuse while any deleted row
    /// still has a destination.
    func batchDelete(_ entity: Entity, matching request: FetchRequest, origin: WriteOrigin, from inbox: ChangeInbox?)
        throws(AmberError) -> BatchOutcome

    // MARK: Other writers

    /// A number that changes when another connection or process wrote, and only then.
    func dataVersion() throws(AmberError) -> Int64
    /// Waits until ``dataVersion()`` differs from `version` (another
    /// connection or process committed a write) or `inbox` has a post
    /// (another context on this store saved), or `timeout` passes.
    ///
    /// - Returns: whether one of them happened (at once if one already had).
    func waitForChanges(from version: Int64, inbox: ChangeInbox?, timeout: Duration) throws(AmberError) -> Bool
    /// The stored versions of the rows of `table` with one of `keys`; a missing key is a deleted row.
    func versions(in table: Int, of keys: [Int64]) throws(AmberError) -> [Int64: Int64]

    // MARK: History

    /// The sequence number of the last transaction in the history, 0 for none;
    /// nil when the store keeps no history.
    func lastHistorySequence() throws(AmberError) -> Int64?
    /// The transactions after `sequence` (nil: every one kept), oldest first.
    ///
    /// - Throws: ``/AmberValues/AmberError/historyUnavailable(store:reason:)`` when the
    ///   history after `sequence` was purged or is not kept.
    func history(after sequence: Int64?) throws(AmberError) -> [HistoryTransaction]
    /// Deletes the transactions up to and including `sequence`.
    func purgeHistory(through sequence: Int64) throws(AmberError)
    /// What other writers (not this store's contexts) wrote after
    /// `sequence`, as records a context merges, and the sequence read up to;
    /// nil when that history was purged or is not kept (the context then
    /// compares every object it holds).
    func savedChanges(after sequence: Int64) throws(AmberError) -> (records: [SavedChanges], through: Int64)?

    // MARK: Maintenance

    /// Problems an integrity check finds; empty for a sound store.
    func checkIntegrity() throws(AmberError) -> [String]
    /// Copies the store, as one snapshot, to a new file at `destination`.
    func backup(to destination: String) throws(AmberError)
    /// Gives unused space back.
    func vacuum() throws(AmberError)
    /// Moves what the write-ahead log holds into the store.
    func checkpoint() throws(AmberError)
    /// Moves what the write-ahead log holds into the store now, without
    /// waiting for readers, as closing does, reporting a disk that refuses;
    /// nothing for a store without a log.
    func foldLog() throws(AmberError)
}

/// What a batch change wrote: the rows it changed or deleted, the rows whose
/// links it cleared, and the record contexts merge.
package struct BatchOutcome {
    /// The rows the batch updated or deleted: entity index and key.
    package var rows: [(entity: Int, key: Int64)] = []
    /// The rows of other entities whose links to deleted rows were cleared.
    package var nullified: [(entity: Int, key: Int64)] = []
    /// What the batch changed, for the contexts holding those objects.
    package var record = SavedChanges()

    package init() {}
}

extension StoreEngine {
    package func batchUpdate(_ entity: Entity, matching request: FetchRequest, setting assignments: [BatchAssignment], origin: WriteOrigin,
                             from inbox: ChangeInbox?) throws(AmberError) -> BatchOutcome {
        throw .unsupported(store: place, capability: "batch updates")
    }
    package func batchDelete(_ entity: Entity, matching request: FetchRequest, origin: WriteOrigin, from inbox: ChangeInbox?)
        throws(AmberError) -> BatchOutcome {
        throw .unsupported(store: place, capability: "batch deletes")
    }

    /// The default: asks ``dataVersion()`` every few milliseconds (a store
    /// that is told of other writers, as a server is, waits for that instead).
    package func waitForChanges(from version: Int64, inbox: ChangeInbox?, timeout: Duration) throws(AmberError) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            if inbox?.hasRecords == true { return true }
            if try dataVersion() != version { return true }
            let left = deadline - .now
            guard left > .zero else { return false }
            usleep(UInt32(min(left, .milliseconds(5)) / .microseconds(1)))
        }
    }

    /// The default for stores that keep no history.
    package func lastHistorySequence() throws(AmberError) -> Int64? { nil }
    package func history(after sequence: Int64?) throws(AmberError) -> [HistoryTransaction] {
        throw .unsupported(store: place, capability: "history")
    }
    package func purgeHistory(through sequence: Int64) throws(AmberError) {
        throw .unsupported(store: place, capability: "history")
    }
    package func savedChanges(after sequence: Int64) throws(AmberError) -> (records: [SavedChanges], through: Int64)? { nil }
    package func checkIntegrity() throws(AmberError) -> [String] { throw .unsupported(store: place, capability: "integrity checks") }
    package func backup(to destination: String) throws(AmberError) { throw .unsupported(store: place, capability: "backups") }
    package func vacuum() throws(AmberError) { throw .unsupported(store: place, capability: "vacuum") }
    package func checkpoint() throws(AmberError) { throw .unsupported(store: place, capability: "checkpoints") }
    package func foldLog() throws(AmberError) {}
}

/// A column rows can be looked up by, for relationships.
package enum KeyColumn {
    /// The row's own primary key.
    case primaryKey
    /// A to-one relationship of the entity: the destination's key it holds.
    case foreignKey(Relationship)
}

/// A fetch request a store prepared once for ``StoreEngine/sortedKeys(_:among:)``.
package protocol SortedKeysQuery: AnyObject {}

/// Who wrote a transaction, as the history records it.
package struct WriteOrigin: Sendable {
    /// The writer's author (`Context.transactionAuthor`), if it named one.
    package var author: String?
    /// The writing context's `Context.name`, if it has one.
    package var contextName: String?

    package init(author: String? = nil, contextName: String? = nil) {
        (self.author, self.contextName) = (author, contextName)
    }
}

/// What a store can do beyond reading and writing objects. A call a store
/// cannot honour fails with ``/AmberValues/AmberError/unsupported(store:capability:)``
/// naming it; it never crashes or does nothing.
public struct StoreCapabilities: OptionSet, Sendable, CustomStringConvertible {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// ``Store/history(after:)`` and ``Store/purgeHistory(through:)``: the store keeps a change history.
    public static let history = StoreCapabilities(rawValue: 1 << 0)
    /// ``Store/backup(to:)``.
    public static let backups = StoreCapabilities(rawValue: 1 << 1)
    /// ``Store/vacuum()``.
    public static let vacuum = StoreCapabilities(rawValue: 1 << 2)
    /// ``Store/checkpoint()``.
    public static let checkpoints = StoreCapabilities(rawValue: 1 << 3)
    /// ``Store/checkIntegrity()``.
    public static let integrityChecks = StoreCapabilities(rawValue: 1 << 4)
    /// Other connections and processes may write the same store.
    public static let sharedAcrossProcesses = StoreCapabilities(rawValue: 1 << 5)
    /// Batch updates and deletes by predicate (`Context.batchUpdate`, `Context.batchDelete`).
    public static let batchChanges = StoreCapabilities(rawValue: 1 << 6)

    private static let names: [(StoreCapabilities, String)] = [
        (.history, "history"), (.backups, "backups"), (.vacuum, "vacuum"), (.checkpoints, "checkpoints"),
        (.integrityChecks, "integrity checks"), (.sharedAcrossProcesses, "shared across processes"), (.batchChanges, "batch changes"),
    ]

    /// The capabilities by name, comma-separated.
    public var description: String { Self.names.filter { contains($0.0) }.map(\.1).joined(separator: ", ") }
}

extension StoreEngine {
    /// The rows of `entity` whose `column` holds one of `keys`, in primary-key order.
    package func fetchRows(of entity: Entity, where column: KeyColumn, in keys: [Int64]) throws(AmberError) -> FetchedRows {
        try fetchRows(of: entity, where: column, in: keys, orderedBy: [])
    }

    /// Every key `query` matches, with its sort values, in its order.
    package func sortedKeys(_ query: any SortedKeysQuery) throws(AmberError) -> [SortedKey] {
        try sortedKeys(query, among: nil)
    }
}
