import AmberTransformers
import AmberValues

/// What to fetch: an entity, an optional predicate, an order and a window.
///
/// ```swift
/// let request = try FetchRequest("Book", where: "title CONTAINS[cd] %@", "cafe",
///                                sortedBy: [.descending("published")], limit: 10)
/// ```
public struct FetchRequest: Sendable {
    /// The entity to fetch.
    public var entityName: String
    /// Which objects; nil fetches all.
    public var predicate: FetchPredicate?
    /// The order, first key first; objects equal on every key come in primary-key order.
    public var sortKeys: [SortKey]
    /// At most this many objects (nil: no limit).
    public var limit: Int?
    /// Skip this many objects first.
    public var offset: Int
    /// Relationship key paths (`"author"`, `"books"`, `"author.publisher"`)
    /// whose destinations are read with the objects: one query per
    /// relationship for the whole fetch, not one per object.
    public var prefetchKeyPaths: [String]
    /// Whether objects of entities that inherit from this one come too (the default).
    public var includesSubentities = true
    /// Whether the fetching context's unsaved changes count (the default),
    /// as Core Data's fetches do: new objects that match are included,
    /// changed ones are judged and sorted by their current values, deleted
    /// ones are left out, and then the limit and offset apply. False asks
    /// the store alone: objects as saved, less those deleted in the context.
    /// A live query follows the same rule: with false, its results follow
    /// what is saved, and an object deleted in the context stays until the
    /// deletion is saved.
    public var includesPendingChanges = true

    /// A request for `entityName` objects.
    public init(_ entityName: String, predicate: FetchPredicate? = nil, sortedBy sortKeys: [SortKey] = [],
                limit: Int? = nil, offset: Int = 0, prefetching prefetchKeyPaths: [String] = [])
    {
        self.entityName = entityName
        self.predicate = predicate
        self.sortKeys = sortKeys
        self.limit = limit
        self.offset = offset
        self.prefetchKeyPaths = prefetchKeyPaths
    }

    /// A request for `entityName` objects matching predicate text with `%@` / `%K` arguments.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidPredicate(position:message:)`` with the position of the problem.
    public init(_ entityName: String, where format: String, _ arguments: Value..., sortedBy sortKeys: [SortKey] = [],
                limit: Int? = nil, offset: Int = 0, prefetching prefetchKeyPaths: [String] = []) throws(AmberError)
    {
        self.init(entityName, predicate: try FetchPredicate(format, arguments: arguments), sortedBy: sortKeys,
                  limit: limit, offset: offset, prefetching: prefetchKeyPaths)
    }
}

extension FetchRequest {
    /// Refuses a negative limit or offset, as every fetch does.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidValue(place:expected:given:)`` naming `FetchRequest`.
    package func checkWindow() throws(AmberError) {
        guard offset >= 0, (limit ?? 0) >= 0 else {
            throw .invalidValue(place: "FetchRequest", expected: "a limit and offset of 0 or more",
                                given: "limit \(limit.map(String.init) ?? "none"), offset \(offset)")
        }
    }

    /// The positions of `count` results this request's offset and limit keep
    /// (checked by ``checkWindow()``; a limit past `Int.max` is none).
    package func window(over count: Int) -> Range<Int> {
        let start = min(max(offset, 0), count)
        guard let limit else { return start..<count }
        let (end, overflow) = start.addingReportingOverflow(max(limit, 0))
        return start..<(overflow ? count : min(end, count))
    }
}

/// One key of a fetch order.
public struct SortKey: Sendable, Hashable {
    /// The attribute to order by.
    public var key: String
    /// Smallest first when true.
    public var ascending: Bool
    /// Compare strings ignoring case (Unicode case folding).
    public var caseInsensitive: Bool

    /// Orders by `key`.
    public init(_ key: String, ascending: Bool = true, caseInsensitive: Bool = false) {
        self.key = key
        self.ascending = ascending
        self.caseInsensitive = caseInsensitive
    }

    /// Smallest first.
    public static func ascending(_ key: String) -> SortKey { SortKey(key) }
    /// Largest first.
    public static func descending(_ key: String) -> SortKey { SortKey(key, ascending: false) }
}
