import AmberModel
import AmberStore
import AmberValues
import Foundation

/// A fetch request whose results follow its context: after each save,
/// merge and refresh of the context, and each ``Context/processPendingChanges()``,
/// the results are brought up to date and ``onChange`` is told what moved,
/// as index changes a list view can apply.
///
/// The results are what ``Context/fetch(_:)`` returns for the request: with
/// the changes made here and not saved yet (unless the request's
/// ``/AmberModel/FetchRequest/includesPendingChanges`` is false), ordered by
/// the request's sort keys on current values, then by primary key, new
/// objects after saved ones. Unsaved changes (sets, inserts, deletions,
/// undo, redo, rollback) show at the next ``Context/processPendingChanges()``,
/// or with the next save, merge or refresh that reports something (a
/// rollback leaves nothing to save: process it). A request that
/// excludes pending changes follows what is saved: a change made here shows
/// once it is saved.
///
/// A change costs what it touches, not what the results hold: the objects
/// an event or pending change touched are judged again (in memory, or for
/// saved results by the store, in one statement restricted to their keys)
/// and placed by binary search. The whole request is evaluated again only
/// when that cannot be exact: after another connection or process wrote
/// (the rows are not known), and for a request with a limit or an offset or
/// whose predicate or sort follows relationships (a change to any object may
/// then move others).
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
    /// What every result was ordered by when last judged, by object.
    private var members: [ObjectIdentifier: Member] = [:]
    /// The results that have primary keys, by key: the rows an event names are found here.
    private var byKey: [Int64: ManagedObject] = [:]
    /// The objects of the request's entity that had unsaved changes when the
    /// results were last brought up to date (when they include pending changes):
    /// a rollback or an undo may have put them back as saved.
    private var judgedPending: [ManagedObject] = []
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
    /// Who judges whether an object is a result and what it sorts by.
    private let judge: Judge

    private enum Judge {
        /// The store, on saved rows: the request compiled once, as it runs again after every change.
        case store(any SortedKeysQuery)
        /// This process, on current values (pending changes included).
        case memory(ObjectPredicate?, ObjectOrder)
    }

    /// Consecutive results: their objects, and what each is ordered by.
    private struct Chunk {
        var objects: [ManagedObject] = []
        var values: [[ComparedValue]] = []
    }

    private struct Member {
        var values: [ComparedValue]
        /// The object's change count when it was judged (``ManagedObject/edits``).
        var edits: UInt32
    }

    /// An object an event may have moved: what the results hold for it, and what it is now.
    private struct Candidate {
        let object: ManagedObject
        /// What it sorts by now, or nil if it is no result now.
        let values: [ComparedValue]?
        /// Whether the store says its row changed.
        let touched: Bool
    }

    private struct Run {
        /// What the section's rows share: the first sort value (bucketed for a date unit).
        let identity: ComparedValue
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
        var found: [(object: ManagedObject, values: [ComparedValue])] = []
        if request.includesPendingChanges {
            let predicate = try request.predicate.map { (predicate) throws(AmberError) in
                try ObjectPredicate(predicate, entity: entity, model: context.model)
            }
            let order = try ObjectOrder(request.sortKeys, entity: entity, model: context.model)
            judge = .memory(predicate, order)
            for object in try context.currentObjects(request, of: entity) { found.append((object, try order.values(of: object))) }
        } else {
            let query = try context.engine.sortedKeysQuery(of: entity, matching: request)
            judge = .store(query)
            let sorted = try context.engine.sortedKeys(query)
            let objects = try Self.objects(for: sorted.map(\.key), of: entity, in: context)
            for row in sorted {
                if let object = objects[row.key] { found.append((object, row.values.map(ComparedValue.stored))) }
            }
        }
        judgedPending = pendingObjects(in: context)
        runs = slot == nil ? [Run(identity: .stored(.null), value: .null, count: 0)] : []
        for (object, values) in found {
            if rows[rows.count - 1].objects.count == chunkLimit / 2 { rows.append(Chunk()) }
            rows[rows.count - 1].objects.append(object)
            rows[rows.count - 1].values.append(values)
            remember(object, values)
            count += 1
            let identity = sectionless ? ComparedValue.stored(.null) : sectionIdentity(values)
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
        let candidates: [Candidate]
        switch judge {
        case .store(let query):
            candidates = try storeCandidates(query, touched: touched, whole: whole, in: context)
        case .memory(let predicate, let order):
            candidates = try memoryCandidates(predicate, order, touched: touched, whole: whole, in: context)
        }
        return apply(candidates, reportingTouched: change.report.event != .saved || !isInMemory)
    }

    /// The store's judgment of the rows `touched` names (of every row, when `whole`).
    private func storeCandidates(_ query: any SortedKeysQuery, touched: Set<Int64>, whole: Bool, in context: Context)
        throws(AmberError) -> [Candidate]
    {
        var keys: [Int64]
        let found: [SortedKey]
        if whole {
            found = try context.engine.sortedKeys(query)
            keys = rows.flatMap { $0.objects.compactMap(\.objectID.primaryKey) }
            keys += found.lazy.map(\.key).filter { self.byKey[$0] == nil }
        } else {
            guard !touched.isEmpty else { return [] }
            keys = Array(touched)
            found = try context.engine.sortedKeys(query, among: keys)
        }
        var now: [Int64: [SortValue]] = [:]
        for sorted in found { now[sorted.key] = sorted.values }
        // New members' objects, in one read; a row deleted since the query ran stays out.
        let arriving = try Self.objects(for: keys.filter { byKey[$0] == nil && now[$0] != nil }, of: entity, in: context)
        return keys.compactMap { key in
            (byKey[key] ?? arriving[key]).map { Candidate(object: $0, values: now[key]?.map(ComparedValue.stored), touched: touched.contains(key)) }
        }
    }

    /// The objects an event or a pending change may have moved, judged on
    /// their current values: those with unsaved changes now or at the last
    /// update, and the rows `touched` names (every result and every match, when `whole`).
    private func memoryCandidates(_ predicate: ObjectPredicate?, _ order: ObjectOrder, touched: Set<Int64>, whole: Bool,
                                  in context: Context) throws(AmberError) -> [Candidate]
    {
        let pendingNow = pendingObjects(in: context)
        defer { judgedPending = pendingNow }
        var candidates: [Candidate] = []
        var seen = Set<ObjectIdentifier>()
        if whole {
            for object in try context.currentObjects(request, of: entity) {
                seen.insert(ObjectIdentifier(object))
                let key = object.objectID.primaryKey
                candidates.append(Candidate(object: object, values: try order.values(of: object), touched: key.map(touched.contains) ?? false))
            }
            for chunk in rows {
                for object in chunk.objects where seen.insert(ObjectIdentifier(object)).inserted {
                    candidates.append(Candidate(object: object, values: nil, touched: false))
                }
            }
            return candidates
        }
        var objects = judgedPending + pendingNow, unheld: [Int64] = []
        for key in touched {
            if let member = byKey[key] { objects.append(member) } else { unheld.append(key) }
        }
        // Rows not among the results are read in one statement; a deleted row is not found and cannot join.
        objects += try Self.objects(for: unheld, of: entity, in: context).values
        for object in objects where seen.insert(ObjectIdentifier(object)).inserted {
            var values: [ComparedValue]?
            if !object.isDetached, !object.deletedFlag, isOfRequest(object), try predicate?.matches(object) ?? true {
                values = try order.values(of: object)
            }
            candidates.append(Candidate(object: object, values: values, touched: object.objectID.primaryKey.map(touched.contains) ?? false))
        }
        return candidates
    }

    /// Moves `candidates` into, out of and within the results; nil if nothing moved or changed.
    /// A result that stays in place is reported updated if it changed here since it was judged, or if
    /// `reportingTouched` and the store says its row changed.
    private func apply(_ candidates: [Candidate], reportingTouched: Bool) -> Changes? {
        var leaving: [(ManagedObject, [ComparedValue])] = [], joining: [(ManagedObject, [ComparedValue])] = []
        var moving: [(ManagedObject, [ComparedValue])] = [], updating: [ManagedObject] = []
        for candidate in candidates {
            let object = candidate.object
            switch (members[ObjectIdentifier(object)], candidate.values) {
            case (nil, let values?): joining.append((object, values))
            case (let old?, nil): leaving.append((object, old.values))
            case (let old?, let values?) where !Self.same(old.values, values):
                leaving.append((object, old.values))
                moving.append((object, values))
            case (let old?, _?) where old.edits != object.edits || (reportingTouched && candidate.touched):
                updating.append(object)
                members[ObjectIdentifier(object)]?.edits = object.edits
            default: break
            }
        }
        guard !leaving.isEmpty || !joining.isEmpty || !updating.isEmpty else { return nil }

        var changes = Changes()
        let oldRuns = runs
        let oldStarts = Self.starts(of: oldRuns)
        // Out, last first, so earlier indices stay put.
        let out = leaving.map { (index(of: $0.0, $0.1), $0.0) }.sorted { $0.0 > $1.0 }
        for (index, object) in out {
            let (chunk, offset) = sizes.locate(index)
            rows[chunk].objects.remove(at: offset)
            rows[chunk].values.remove(at: offset)
            sizes.add(-1, at: chunk)
            if rows[chunk].objects.isEmpty && rows.count > 1 {
                rows.remove(at: chunk)
                indexChunks()
            }
            count -= 1
            forget(object)
            leaveRun(at: index)
        }
        // In, in order, so each insertion point is final for those before it.
        let movers = Set(moving.map { ObjectIdentifier($0.0) })
        for (object, values) in (joining + moving).sorted(by: { precedes($0.0, $0.1, $1.0, $1.1) }) {
            let (chunk, offset, index) = insertionPoint(of: object, values)
            rows[chunk].objects.insert(object, at: offset)
            rows[chunk].values.insert(values, at: offset)
            sizes.add(1, at: chunk)
            if rows[chunk].objects.count > chunkLimit {
                // Split in halves: the second half becomes a chunk of its own.
                let half = rows[chunk].objects.count / 2
                rows.insert(Chunk(objects: Array(rows[chunk].objects[half...]), values: Array(rows[chunk].values[half...])), at: chunk + 1)
                rows[chunk].objects.removeSubrange(half...)
                rows[chunk].values.removeSubrange(half...)
                indexChunks()
            }
            count += 1
            remember(object, values)
            joinRun(at: index, object: object, values: values)
        }
        let newStarts = Self.starts(of: runs)
        for (index, object) in out.reversed() where !movers.contains(ObjectIdentifier(object)) {
            changes.deleted.append(Self.position(of: index, in: oldStarts))
        }
        for (object, values) in joining { changes.inserted.append(position(of: object, values, newStarts)) }
        changes.inserted.sort { ($0.section, $0.row) < ($1.section, $1.row) }
        for (index, object) in out where movers.contains(ObjectIdentifier(object)) {
            guard let values = members[ObjectIdentifier(object)]?.values else { continue }
            changes.moved.append((Self.position(of: index, in: oldStarts), position(of: object, values, newStarts)))
        }
        for object in updating {
            guard let values = members[ObjectIdentifier(object)]?.values else { continue }
            changes.updated.append(position(of: object, values, newStarts))
        }
        changes.updated.sort { ($0.section, $0.row) < ($1.section, $1.row) }
        if !sectionless {
            let before = Set(oldRuns.map(\.identity)), after = Set(runs.map(\.identity))
            changes.deletedSections = oldRuns.indices.filter { !after.contains(oldRuns[$0].identity) }
            changes.insertedSections = runs.indices.filter { !before.contains(runs[$0].identity) }
        }
        return changes
    }

    /// Notes `object` as a result ordered by `values`.
    private func remember(_ object: ManagedObject, _ values: [ComparedValue]) {
        members[ObjectIdentifier(object)] = Member(values: values, edits: object.edits)
        if let key = object.objectID.primaryKey { byKey[key] = object }
    }

    private func forget(_ object: ManagedObject) {
        members[ObjectIdentifier(object)] = nil
        if let key = object.objectID.primaryKey, byKey[key] === object { byKey[key] = nil }
    }

    private var isInMemory: Bool {
        if case .memory = judge { return true }
        return false
    }

    /// Whether `object` is of the request's entity (or, with subentities, inherits from it).
    private func isOfRequest(_ object: ManagedObject) -> Bool {
        request.includesSubentities ? object.entity.isKind(of: entity) : object.entity === entity
    }

    /// The objects of the request's entity with unsaved changes (none when the results exclude them).
    private func pendingObjects(in context: Context) -> [ManagedObject] {
        guard isInMemory else { return [] }
        return context.pendingObjects.filter(isOfRequest)
    }

    // MARK: Order

    private var sectionless: Bool { sectionSlot == nil }

    /// Whether two lists of sort values order alike.
    private static func same(_ a: [ComparedValue], _ b: [ComparedValue]) -> Bool {
        zip(a, b).allSatisfy { $0.sortOrder($1) == 0 }
    }

    /// Whether `a` sorts before `b`: by the request's sort values, then by
    /// primary key, new objects after saved ones in insertion order.
    private func precedes(_ a: ManagedObject, _ aValues: [ComparedValue], _ b: ManagedObject, _ bValues: [ComparedValue]) -> Bool {
        for (index, ascending) in ascending.enumerated() {
            let order = aValues[index].sortOrder(bValues[index])
            if order != 0 { return ascending ? order < 0 : order > 0 }
        }
        return ObjectOrder.keyPrecedes(a.objectID, b.objectID)
    }

    /// Where the first result that does not sort before `object` (with
    /// sort values `values`) is: its chunk, its offset there, and its index
    /// in order (binary searches over the chunks' last results, then within the chunk).
    private func insertionPoint(of object: ManagedObject, _ values: [ComparedValue]) -> (chunk: Int, offset: Int, index: Int) {
        var low = 0, high = rows.count - 1
        while low < high {
            let middle = (low + high) / 2
            if let last = rows[middle].objects.last, let lastValues = rows[middle].values.last, precedes(last, lastValues, object, values) {
                low = middle + 1
            } else {
                high = middle
            }
        }
        let chunk = rows[low]
        var first = 0, end = chunk.objects.count
        while first < end {
            let middle = (first + end) / 2
            if precedes(chunk.objects[middle], chunk.values[middle], object, values) { first = middle + 1 } else { end = middle }
        }
        return (low, first, sizes.before(low) + first)
    }

    /// The index of result `object`, ordered by `values`: found by binary
    /// search, or, should the order have shifted under it (a key one store
    /// rounds), by looking through the results.
    private func index(of object: ManagedObject, _ values: [ComparedValue]) -> Int {
        let found = insertionPoint(of: object, values)
        if found.offset < rows[found.chunk].objects.count, rows[found.chunk].objects[found.offset] === object { return found.index }
        var start = 0
        for chunk in rows {
            if let offset = chunk.objects.firstIndex(where: { $0 === object }) { return start + offset }
            start += chunk.objects.count
        }
        return found.index
    }

    /// Builds the chunk-size index again, after a chunk was added or dropped.
    private func indexChunks() { sizes = ChunkSizes(rows.map(\.objects.count)) }

    private func position(of object: ManagedObject, _ values: [ComparedValue], _ starts: [Int]) -> Position {
        Self.position(of: index(of: object, values), in: starts)
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
    private func joinRun(at index: Int, object: ManagedObject, values: [ComparedValue]) {
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
    private func sectionIdentity(_ values: [ComparedValue]) -> ComparedValue {
        guard let unit = sectionUnit, case .stored(.real(let seconds)) = values[0] else { return values[0] }
        return .stored(.real(Self.bucket(Date(timeIntervalSinceReferenceDate: seconds), unit).timeIntervalSinceReferenceDate))
    }

    /// The section key's value for `object`: current when the results include pending changes, saved otherwise.
    private func sectionValue(of object: ManagedObject, _ identity: ComparedValue) -> Value {
        if sectionUnit != nil, case .stored(.real(let seconds)) = identity { return .date(Date(timeIntervalSinceReferenceDate: seconds)) }
        guard let slot = sectionSlot else { return .null }
        return isInMemory && !object.isFault ? object.slotValue(slot) : object.savedSlotValue(slot)
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

    /// The objects of rows `keys` of `entity`, by key: those held in
    /// `context` as they are (also when deleted there and not saved), the
    /// rest read in one statement.
    private static func objects(for keys: [Int64], of entity: Entity, in context: Context) throws(AmberError) -> [Int64: ManagedObject] {
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
