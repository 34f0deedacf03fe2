import AmberModel
import AmberValues

/// What changed in a context: after a save, a merge of other contexts'
/// saves or a refresh (delivered to observers), or pending now (asked for
/// with ``Context/pendingChanges``).
public struct ChangeReport {
    /// What a report is about.
    public enum Event: String, Sendable, Equatable {
        /// A save of the context wrote these changes.
        case saved
        /// Merging what other contexts saved changed objects held here.
        case merged
        /// ``Context/refresh(_:mergeChanges:)`` read objects again.
        case refreshed
        /// Changes made here and not saved yet.
        case pending
    }

    /// An object whose values changed, with the keys (attribute and relationship names) that changed.
    public struct Update {
        /// The object.
        public let object: ManagedObject
        /// The attribute and relationship names whose values changed, in
        /// model order, with the computed attributes whose sources are among them.
        public let keys: [String]

        init(object: ManagedObject, keys: [String]) {
            self.object = object
            self.keys = object.entity.computedAttributes.isEmpty ? keys : object.entity.addingComputedDependents(to: keys)
        }
    }

    /// What the report is about.
    public let event: Event
    /// New objects: saved by this save (with their permanent IDs now), or pending.
    public internal(set) var inserted: [ManagedObject] = []
    /// Objects changed here: saved by this save, or pending.
    public internal(set) var updated: [Update] = []
    /// Objects deleted: by this save, pending here, or (after a merge or a
    /// refresh) deleted by another context or process; a saved deletion has
    /// left the context, but its ``ManagedObject/objectID`` still names it.
    public internal(set) var deleted: [ManagedObject] = []
    /// Objects held here that took values another context or process saved
    /// (a merge or a refresh), with the keys whose values changed.
    public internal(set) var refreshed: [Update] = []

    init(_ event: Event) { self.event = event }

    /// Whether nothing changed.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty && refreshed.isEmpty }
}

/// What a context passes to its observers and live queries: the report,
/// and which rows of the store changed.
struct ContextChange {
    var report: ChangeReport
    /// Primary keys of rows inserted, updated or deleted, by table (a root
    /// entity's index); nil when another connection wrote and the rows are not known.
    var rows: [Int: [Int64]]? = [:]
    /// Whether links or ordered positions changed (or may have).
    var relinked = false

    init(_ event: ChangeReport.Event) { report = ChangeReport(event) }

    mutating func touch(_ table: Int, _ key: Int64) {
        rows?[table, default: []].append(key)
    }

    /// Whether anyone needs to hear about it.
    var isEmpty: Bool { report.isEmpty && rows?.isEmpty == true && !relinked }
}

/// Names an observer added with ``Context/addObserver(_:)``, to remove it.
public struct ObserverToken: Hashable, Sendable {
    /// Unique within its context.
    public let rawValue: UInt64

    /// The token with `rawValue` (as a binding layer keeps it).
    public init(rawValue: UInt64) { self.rawValue = rawValue }
}

/// A context's observers and live queries.
struct ObserverList {
    private var nextToken: UInt64 = 1
    private(set) var observers: [(token: ObserverToken, body: (ChangeReport) throws -> Void)] = []
    private var queries: [WeakLiveQuery] = []

    /// Whether a change must be worked out and delivered at all: without
    /// observers a save does nothing more than before.
    var isEmpty: Bool { observers.isEmpty && queries.isEmpty }

    mutating func add(_ body: @escaping (ChangeReport) throws -> Void) -> ObserverToken {
        let token = ObserverToken(rawValue: nextToken)
        nextToken += 1
        observers.append((token, body))
        return token
    }

    /// Whether `token` named an observer here.
    mutating func remove(_ token: ObserverToken) -> Bool {
        guard let index = observers.firstIndex(where: { $0.token == token }) else { return false }
        observers.remove(at: index)
        return true
    }

    mutating func add(_ query: LiveQuery) {
        queries.removeAll { $0.query == nil }
        queries.append(WeakLiveQuery(query: query))
    }

    mutating func remove(_ query: LiveQuery) {
        queries.removeAll { $0.query == nil || $0.query === query }
    }

    var liveQueries: [LiveQuery] { queries.compactMap(\.query) }
}

private struct WeakLiveQuery {
    weak var query: LiveQuery?
}
