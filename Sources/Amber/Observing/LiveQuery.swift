import AmberModel
import AmberStore
import AmberValues
import Foundation

/// A fetch request whose results follow what is saved: after each save,
/// merge and refresh of its context, the results are brought up to date and
/// ``onChange`` is told what moved, as index changes a list view can apply.
///
/// The results are the saved state as its context holds it: changes made
/// here, deletions included, show once they are saved (right after a save,
/// the results are what ``Context/fetch(_:)`` returns). Objects are ordered
/// by the request's sort keys and then by primary key.
///
/// A change costs what it touches, not what the results hold: the rows an
/// event inserted, updated or deleted are matched against the request in one
/// statement restricted to their keys, and placed by binary search. The
/// whole request is evaluated again only when that cannot be exact: after
/// another connection or process wrote (the rows are not known), and for a
/// request with a limit or an offset or whose predicate or sort follows
/// relationships (a change to any row may then move others).
///
/// Used on its context's thread. The context holds its live queries weakly:
/// keep a reference for as long as results should follow. A live query
/// whose context is gone keeps its last results and reports no more.
public final class LiveQuery {
    /// How dates are grouped into sections.
    public enum DateUnit: String, Sendable, CaseIterable {
        case year, month, day

        var component: Calendar.Component {
            switch self {
            case .year: .year
            case .month: .month
            case .day: .day
            }
        }
    }

    /// Where a result is: its section and its row in that section.
    public struct Position: Hashable, Sendable, CustomStringConvertible {
        public var section: Int
        public var row: Int

        public init(section: Int, row: Int) { (self.section, self.row) = (section, row) }

        public var description: String { "\(section).\(row)" }
    }

    /// A run of results with the same section value.
    public struct Section {
        /// The section key's value its objects share (for a date with a
        /// ``DateUnit``, the first instant of that year, month or day in UTC);
        /// null when the query has no section key.
        public let value: Value
        /// Its objects' indices in ``LiveQuery/objects``.
        public let range: Range<Int>
    }

    /// What one event changed, in the form list views apply: first remove
    /// the rows of ``deleted`` and the sources of ``moved`` (positions in the
    /// old results), then the sections of ``deletedSections``; then insert
    /// the sections of ``insertedSections``, then the rows of ``inserted``
    /// and the destinations of ``moved`` (positions in the new results).
    /// Every other row keeps its relative order.
    public struct Changes {
        /// Old section indices, ascending.
        public internal(set) var deletedSections: [Int] = []
        /// New section indices, ascending.
        public internal(set) var insertedSections: [Int] = []
        /// Old positions of objects that left the results, ascending.
        public internal(set) var deleted: [Position] = []
        /// New positions of objects that joined the results, ascending.
        public internal(set) var inserted: [Position] = []
        /// Objects whose sort values changed: from their old position to
        /// their new one (which may be the same); their values may have changed too.
        public internal(set) var moved: [(from: Position, to: Position)] = []
        /// New positions of objects that stayed in place with changed values, ascending.
        public internal(set) var updated: [Position] = []

        /// Whether the event changed nothing in these results.
        public var isEmpty: Bool {
            deletedSections.isEmpty && insertedSections.isEmpty && deleted.isEmpty && inserted.isEmpty
                && moved.isEmpty && updated.isEmpty
        }
    }

    /// The request whose results this follows.
    public let request: FetchRequest
    /// The attribute sections are made by (the request's first sort key), if any.
    public let sectionKey: String?
    /// How dates of ``sectionKey`` are grouped, if they are.
    public let sectionUnit: DateUnit?
    /// Called after each event that changed the results, on the context's
    /// thread. An error it throws is reported by the context call that made
    /// the event (see ``/AmberValues/AmberError/observerFailed(event:failures:)``); the
    /// results are up to date either way.
    public var onChange: ((Changes) throws -> Void)?

    /// The results, in order (made on each call: use ``count`` and
    /// ``object(at:)-(Int)`` to read a few of many).
    public var objects: [ManagedObject] { rows.flatMap(\.objects) }
    /// How many results there are.
    public private(set) var count = 0
    /// The results in order, in chunks of at most `chunkLimit`, so a change
    /// moves a chunk's worth of entries, not every result after it.
    private var rows: [Chunk] = [Chunk()]
    /// Each chunk's size, kept in step with `rows`.
    private var sizes = ChunkSizes([0])
    /// The sort values of every result, by primary key.
    private var members: [Int64: [SortValue]] = [:]
    /// Runs of equal section values, in order (one run with no section key).
    private var runs: [Run] = []

    private weak var context: Context?
    private let entity: Entity
    private let ascending: [Bool]
    private let sectionSlot: Int?
    /// Whether the predicate or a sort key reads other entities' rows or links.
    private let followsRelationships: Bool
    /// The most results a chunk holds before it is split.
    private let chunkLimit: Int
    /// The request compiled once: it runs again after every change.
    private let query: any SortedKeysQuery

    /// Consecutive results: their objects, and each one's primary key and
    /// sort values as the store computed them.
    private struct Chunk {
        var objects: [ManagedObject] = []
        var keys: [SortedKey] = []
    }

    private struct Run {
        /// What the section's rows share: the first sort value (bucketed for a date unit).
        let identity: SortValue
        var value: Value
        var count: Int
    }

    /// Follows `request` in `context`, with sections by `sectionKey` (the
    /// request's first sort key, a stored attribute without a transformer;
    /// `unit` groups a date attribute's values by year, month or day).
    ///
    /// - Throws: what ``Context/fetch(_:)`` throws; ``/AmberValues/AmberError/invalidValue(place:expected:given:)``
    ///   for a section key that is not the first sort key, or a unit for a key that is not a date.
    public convenience init(_ request: FetchRequest, in context: Context, sectionKey: String? = nil, by unit: DateUnit? = nil)
        throws(AmberError)
    {
        try self.init(request, in: context, sectionKey: sectionKey, by: unit, chunkLimit: 1024)
    }

    /// With chunks of at most `chunkLimit` results (small in tests, to split and drop chunks often).
    init(_ request: FetchRequest, in context: Context, sectionKey: String?, by unit: DateUnit?, chunkLimit: Int) throws(AmberError) {
        self.chunkLimit = max(chunkLimit, 2)
        let entity = try context.model.entity(named: request.entityName)
        var slot: Int?
        if let sectionKey {
            guard request.sortKeys.first?.key == sectionKey else {
                throw .invalidValue(place: "\(entity.name).\(sectionKey)", expected: "the request's first sort key, to make sections by",
                                    given: request.sortKeys.first.map { "sorting first by \($0.key)" } ?? "a request without sort keys")
            }
            let attribute = try entity.attribute(named: sectionKey)
            guard attribute.codec == nil, !attribute.isTransient else {
                throw .invalidValue(place: attribute.description, expected: "a stored attribute without a transformer to make sections by",
                                    given: attribute.isTransient ? "a transient attribute" : "a transformed attribute")
            }
            if unit != nil, attribute.type != .date {
                throw .invalidValue(place: attribute.description, expected: "a date attribute to group by \(unit?.rawValue ?? "")",
                                    given: "a \(attribute.type) attribute")
            }
            slot = attribute.slot
        } else if let unit {
            throw .invalidValue(place: "LiveQuery", expected: "a section key to group by \(unit.rawValue)", given: "none")
        }
        self.request = request
        self.sectionKey = sectionKey
        self.sectionUnit = unit
        self.sectionSlot = slot
        self.context = context
        self.entity = entity
        self.ascending = request.sortKeys.map(\.ascending)
        self.followsRelationships = Self.followsRelationships(request, entity)
        if context.automaticallyMergesChanges { try context.mergeSavedChanges() }
        query = try context.engine.sortedKeysQuery(of: entity, matching: request)
        let found = try context.engine.sortedKeys(query)
        let objects = try self.objects(for: found.map(\.key), in: context)
        runs = slot == nil ? [Run(identity: .null, value: .null, count: 0)] : []
        for sorted in found {
            guard let object = objects[sorted.key] else { continue }
            if rows[rows.count - 1].keys.count == chunkLimit / 2 { rows.append(Chunk()) }
            rows[rows.count - 1].objects.append(object)
            rows[rows.count - 1].keys.append(sorted)
            members[sorted.key] = sorted.values
            count += 1
            let identity = sectionless ? SortValue.null : sectionIdentity(sorted.values)
            if let last = runs.last, last.identity == identity {
                runs[runs.count - 1].count += 1
            } else {
                runs.append(Run(identity: identity, value: sectionValue(of: object, identity), count: 1))
            }
        }
        indexChunks()
        context.observers.add(self)
    }

    deinit {
        context?.observers.remove(self)
    }

    /// The sections, in order: one holding every result when there is no section key.
    public var sections: [Section] {
        zip(runs, Self.starts(of: runs)).map { run, start in Section(value: run.value, range: start..<start + run.count) }
    }

    /// The object at `position`, or nil if there is none.
    public func object(at position: Position) -> ManagedObject? {
        guard runs.indices.contains(position.section), (0..<runs[position.section].count).contains(position.row) else { return nil }
        return object(at: runs[..<position.section].reduce(0) { $0 + $1.count } + position.row)
    }

    /// The result at `index` in order, or nil if there is none.
    public func object(at index: Int) -> ManagedObject? {
        guard (0..<count).contains(index) else { return nil }
        let (chunk, offset) = sizes.locate(index)
        return rows[chunk].objects[offset]
    }

    /// Evaluates the whole request again and reports what differs (for
    /// changes a live query cannot see, such as rows written with SQL behind
    /// the store's back).
    ///
    /// - Throws: a store error; ``/AmberValues/AmberError/objectUnavailable(_:reason:)`` if the context is gone.
    public func refetch() throws(AmberError) {
        var change = ContextChange(.refreshed)
        change.rows = nil
        guard let changes = try update(for: change), !changes.isEmpty else { return }
        do {
            try onChange?(changes)
        } catch {
            throw .observerFailed(event: ChangeReport.Event.refreshed.rawValue, failures: ["live query of \(request.entityName): \(error)"])
        }
    }

    // MARK: Following events

    /// Brings the results up to date with `change`; nil if the results cannot have changed.
    func update(for change: ContextChange) throws(AmberError) -> Changes? {
        guard let context else {
            throw .invalidValue(place: "live query of \(entity.name)", expected: "a live query whose context is alive", given: "its context was released")
        }
        let table = entity.rootIndex
        let touched = Set(change.rows?[table] ?? [])
            .union(change.report.refreshed.lazy.compactMap { $0.object.entity.rootIndex == table ? $0.object.objectID.primaryKey : nil })
        let whole = change.rows == nil || request.limit != nil || request.offset != 0 || followsRelationships
        var candidates: [Int64]
        let found: [SortedKey]
        if whole {
            found = try context.engine.sortedKeys(query)
            candidates = rows.flatMap { $0.keys.map(\.key) }
            candidates += found.lazy.map(\.key).filter { self.members[$0] == nil }
        } else {
            guard !touched.isEmpty else { return nil }
            candidates = Array(touched)
            found = try context.engine.sortedKeys(query, among: candidates)
        }
        var now: [Int64: [SortValue]] = [:]
        for sorted in found { now[sorted.key] = sorted.values }

        var leaving: [SortedKey] = [], joining: [SortedKey] = [], moving: [SortedKey] = [], updating: [Int64] = []
        for key in candidates {
            switch (members[key], now[key]) {
            case (nil, let values?): joining.append(SortedKey(key: key, values: values))
            case (let old?, nil): leaving.append(SortedKey(key: key, values: old))
            case (let old?, let values?) where old != values:
                leaving.append(SortedKey(key: key, values: old))
                moving.append(SortedKey(key: key, values: values))
            case (_?, _?) where touched.contains(key): updating.append(key)
            default: break
            }
        }
        guard !leaving.isEmpty || !joining.isEmpty || !updating.isEmpty else { return nil }
        // New members' objects, in one read; a row deleted since the query ran stays out.
        let arriving = try objects(for: joining.map(\.key), in: context)
        joining.removeAll { arriving[$0.key] == nil }

        var changes = Changes()
        let oldRuns = runs
        let oldStarts = Self.starts(of: oldRuns)
        // Out, last first, so earlier indices stay put.
        var removed: [Int64: ManagedObject] = [:]
        let out = leaving.map { (index(of: $0), $0) }.sorted { $0.0 > $1.0 }
        for (index, sorted) in out {
            let (chunk, offset) = sizes.locate(index)
            removed[sorted.key] = rows[chunk].objects.remove(at: offset)
            rows[chunk].keys.remove(at: offset)
            sizes.add(-1, at: chunk)
            if rows[chunk].keys.isEmpty && rows.count > 1 {
                rows.remove(at: chunk)
                indexChunks()
            }
            count -= 1
            members[sorted.key] = nil
            leaveRun(at: index)
        }
        // In, in order, so each insertion point is final for those before it.
        let movers = Set(moving.map(\.key))
        for sorted in (joining + moving).sorted(by: { precedes($0, $1) }) {
            guard let object = arriving[sorted.key] ?? removed[sorted.key] else { continue }
            let (chunk, offset, index) = insertionPoint(of: sorted)
            rows[chunk].objects.insert(object, at: offset)
            rows[chunk].keys.insert(sorted, at: offset)
            sizes.add(1, at: chunk)
            if rows[chunk].keys.count > chunkLimit {
                // Split in halves: the second half becomes a chunk of its own.
                let half = rows[chunk].keys.count / 2
                rows.insert(Chunk(objects: Array(rows[chunk].objects[half...]), keys: Array(rows[chunk].keys[half...])), at: chunk + 1)
                rows[chunk].objects.removeSubrange(half...)
                rows[chunk].keys.removeSubrange(half...)
                indexChunks()
            }
            count += 1
            members[sorted.key] = sorted.values
            joinRun(at: index, object: object, values: sorted.values)
        }
        let newStarts = Self.starts(of: runs)
        for (index, sorted) in out.reversed() where !movers.contains(sorted.key) {
            changes.deleted.append(Self.position(of: index, in: oldStarts))
        }
        for sorted in joining { changes.inserted.append(position(of: sorted, newStarts)) }
        changes.inserted.sort { ($0.section, $0.row) < ($1.section, $1.row) }
        for (index, sorted) in out where movers.contains(sorted.key) {
            guard let values = members[sorted.key] else { continue }
            changes.moved.append((Self.position(of: index, in: oldStarts), position(of: SortedKey(key: sorted.key, values: values), newStarts)))
        }
        for key in updating {
            guard let values = members[key] else { continue }
            changes.updated.append(position(of: SortedKey(key: key, values: values), newStarts))
        }
        changes.updated.sort { ($0.section, $0.row) < ($1.section, $1.row) }
        if !sectionless {
            let before = Set(oldRuns.map(\.identity)), after = Set(runs.map(\.identity))
            changes.deletedSections = oldRuns.indices.filter { !after.contains(oldRuns[$0].identity) }
            changes.insertedSections = runs.indices.filter { !before.contains(runs[$0].identity) }
        }
        return changes
    }

    // MARK: Order

    private var sectionless: Bool { sectionSlot == nil }

    /// Whether `a` sorts before `b`: by the request's sort values, then by primary key.
    private func precedes(_ a: SortedKey, _ b: SortedKey) -> Bool {
        for (index, ascending) in ascending.enumerated() {
            let order = a.values[index].compare(b.values[index])
            if order != 0 { return ascending ? order < 0 : order > 0 }
        }
        return a.key < b.key
    }

    /// Where the first result that does not sort before `sorted` is: its
    /// chunk, its offset there, and its index in order (binary searches over
    /// the chunks' last results, then within the chunk).
    private func insertionPoint(of sorted: SortedKey) -> (chunk: Int, offset: Int, index: Int) {
        var low = 0, high = rows.count - 1
        while low < high {
            let middle = (low + high) / 2
            if let last = rows[middle].keys.last, precedes(last, sorted) { low = middle + 1 } else { high = middle }
        }
        let keys = rows[low].keys
        var first = 0, end = keys.count
        while first < end {
            let middle = (first + end) / 2
            if precedes(keys[middle], sorted) { first = middle + 1 } else { end = middle }
        }
        return (low, first, sizes.before(low) + first)
    }

    /// The index in order of the first result that does not sort before `sorted` (a member's own index).
    private func index(of sorted: SortedKey) -> Int { insertionPoint(of: sorted).index }

    /// Builds the chunk-size index again, after a chunk was added or dropped.
    private func indexChunks() { sizes = ChunkSizes(rows.map(\.keys.count)) }

    private func position(of sorted: SortedKey, _ starts: [Int]) -> Position {
        Self.position(of: index(of: sorted), in: starts)
    }

    /// The start index of each run.
    private static func starts(of runs: [Run]) -> [Int] {
        var start = 0
        return runs.map { run in
            defer { start += run.count }
            return start
        }
    }

    private static func position(of index: Int, in starts: [Int]) -> Position {
        // The last run starting at or before `index`.
        var low = 0, high = starts.count
        while low < high {
            let middle = (low + high) / 2
            if starts[middle] <= index { low = middle + 1 } else { high = middle }
        }
        let section = max(low - 1, 0)
        return Position(section: section, row: index - (starts.isEmpty ? 0 : starts[section]))
    }

    // MARK: Sections

    /// The run of the result that was at `index`, one shorter (gone when empty).
    private func leaveRun(at index: Int) {
        var start = 0
        for run in runs.indices {
            if index < start + runs[run].count {
                runs[run].count -= 1
                if runs[run].count == 0 && !sectionless { runs.remove(at: run) }
                return
            }
            start += runs[run].count
        }
    }

    /// The run the result now at `index` belongs to, one longer (made if new).
    private func joinRun(at index: Int, object: ManagedObject, values: [SortValue]) {
        if sectionless {
            runs[0].count += 1
            return
        }
        let identity = sectionIdentity(values)
        var start = 0
        for run in runs.indices {
            if runs[run].identity == identity {
                runs[run].count += 1
                return
            }
            // Sections follow the first sort key, so a new one starts where its first row goes.
            if index <= start {
                runs.insert(Run(identity: identity, value: sectionValue(of: object, identity), count: 1), at: run)
                return
            }
            start += runs[run].count
        }
        runs.append(Run(identity: identity, value: sectionValue(of: object, identity), count: 1))
    }

    /// What rows of one section share: the first sort value, bucketed for a date unit.
    private func sectionIdentity(_ values: [SortValue]) -> SortValue {
        guard let unit = sectionUnit, case .real(let seconds) = values[0] else { return values[0] }
        return .real(Self.bucket(Date(timeIntervalSinceReferenceDate: seconds), unit).timeIntervalSinceReferenceDate)
    }

    private func sectionValue(of object: ManagedObject, _ identity: SortValue) -> Value {
        if sectionUnit != nil, case .real(let seconds) = identity { return .date(Date(timeIntervalSinceReferenceDate: seconds)) }
        guard let slot = sectionSlot else { return .null }
        return object.savedSlotValue(slot)
    }

    private static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
        return calendar
    }()

    /// The first instant of the year, month or day `date` falls in, in UTC.
    static func bucket(_ date: Date, _ unit: DateUnit) -> Date {
        guard date.timeIntervalSinceReferenceDate.isFinite else { return date }
        return utc.dateInterval(of: unit.component, for: date)?.start ?? date
    }

    // MARK: Reading

    /// The objects of rows `keys`, by key: those held here as they are
    /// (also when deleted here and not saved: the results are the saved
    /// state), the rest read in one statement.
    private func objects(for keys: [Int64], in context: Context) throws(AmberError) -> [Int64: ManagedObject] {
        var found: [Int64: ManagedObject] = [:], missing: [Int64] = []
        for key in keys {
            if let held = context.registered(entity, key), !held.isDetached, !held.isFault { found[key] = held } else { missing.append(key) }
        }
        guard !missing.isEmpty else { return found }
        for object in context.objects(from: try context.engine.fetchRows(of: entity, where: .primaryKey, in: missing), of: entity) {
            if let key = object.objectID.primaryKey { found[key] = object }
        }
        return found
    }

    /// Whether `request` reads anything but its own entity's columns: a key
    /// path through a relationship, a relationship, or a collection operator.
    private static func followsRelationships(_ request: FetchRequest, _ entity: Entity) -> Bool {
        let paths = (request.predicate?.keyPaths ?? []) + request.sortKeys.map(\.key)
        return paths.contains { path in
            path.contains(".") || path.contains("@") || entity.relationships.contains { $0.name == path }
        }
    }
}
