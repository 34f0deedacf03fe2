import AmberModel
import AmberValues
import Foundation

/// The changes of one transaction as a store keeps them in its history: one
/// JSON array of entries, the same text in every store, so a store only
/// keeps a row per transaction (sequence, time, origin, author, context,
/// whether links moved, and this text) and saves pay one insert for it.
///
/// Each entry is a run of consecutive keys of one entity (by name: entity
/// numbers change in migrations) that changed the same way, to the same
/// version: `[kind, "Book", firstKey, count, version, key, …]`, kind `"i"`
/// inserted (version 1, or the version a row deleted elsewhere was written
/// again at), `"u"` updated (the keys it wrote follow), `"d"` deleted (at the
/// version it had). A save of new rows, or a batch over a
/// table, is a handful of runs however many rows it wrote.
package struct HistoryRecord {
    private var bytes: [UInt8] = [UInt8(ascii: "[")]
    /// The open run, which the next change extends if it fits.
    private var run: (kind: UInt8, entity: Int, first: Int64, count: Int64, version: Int64, keys: [String])?
    private let model: Model

    /// An empty record of changes to `model`'s objects; ``finished()`` gives its text.
    package init(model: Model) {
        self.model = model
        bytes.reserveCapacity(256)
    }

    /// Records what `changes` wrote (`written` says with which keys and versions).
    package init<Row: RowSource>(_ changes: ChangeSet<Row>, written: WrittenKeys, model: Model) {
        self.init(model: model)
        let inserts = changes.inserts
        for index in inserts.indices where index < written.keys.count { inserted(inserts[index].entity.index, written.keys[index]) }
        for object in changes.updates {
            var version = object.rowVersion &+ 1
            var keys: [String]
            switch written.resolved[ObjectIdentifier(object)] {
            case .merged(let stored, let kept, let extended)?:
                // What the writer wrote over the row it read again: the kept keys whose value differs from the stored one.
                version = stored.version(0) &+ 1
                let now = object.slotValues, extra = object.entity.extraSlot
                keys = object.entity.columns.filter { column in
                    kept[column.slot] && stored.value(0, slot: column.slot) != (column.slot == extra ? extended ?? now[column.slot] : now[column.slot])
                }.map(\.name)
            case .writtenAgain(let again)?:
                // The row was deleted elsewhere and written again: to a reader of the history, a new row.
                add(UInt8(ascii: "i"), object.entity.index, object.objectID.primaryKey ?? 0, version: again, keys: [])
                continue
            case .deletedInStore?: continue
            case nil: keys = Self.changedKeys(object)
            }
            updated(object.entity.index, object.objectID.primaryKey ?? 0, version: version, keys: keys)
        }
        for object in changes.deletes { deleted(object.entity.index, object.objectID.primaryKey ?? 0, version: object.rowVersion) }
        derived(written)
    }

    /// Records the rows whose derived attributes `written` says the store computed anew.
    package mutating func derived(_ written: WrittenKeys) {
        for index in written.derived.indices where index < written.derivedEntities.count {
            let entity = written.derivedEntities[index], row = written.derived[index]
            let names = model.entities[entity].attributes.filter { $0.derivation != nil }.map(\.name)
            updated(entity, row.key, version: row.version, keys: names)
        }
    }

    /// The record's text, complete.
    package mutating func finished() -> String {
        closeRun()
        bytes.append(UInt8(ascii: "]"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The columns of `object` whose value differs from the one it read
    /// (every column when it keeps none), by name.
    private static func changedKeys<Row: RowSource>(_ object: Row) -> [String] {
        let columns = object.entity.columns
        guard let saved = object.savedSlotValues else { return columns.map(\.name) }
        let now = object.slotValues
        return columns.filter { now[$0.slot] != saved[$0.slot] }.map(\.name)
    }

    /// Records an inserted row of entity `entity` (an index of the model).
    package mutating func inserted(_ entity: Int, _ key: Int64) {
        add(UInt8(ascii: "i"), entity, key, version: 1, keys: [])
    }

    /// Records an updated row and the keys that changed.
    package mutating func updated(_ entity: Int, _ key: Int64, version: Int64, keys: [String]) {
        add(UInt8(ascii: "u"), entity, key, version: version, keys: keys)
    }

    /// Records a deleted row, at the version it had.
    package mutating func deleted(_ entity: Int, _ key: Int64, version: Int64) {
        add(UInt8(ascii: "d"), entity, key, version: version, keys: [])
    }

    private mutating func add(_ kind: UInt8, _ entity: Int, _ key: Int64, version: Int64, keys: [String]) {
        if let open = run, open.kind == kind, open.entity == entity, open.version == version, open.first &+ open.count == key, open.keys == keys {
            run?.count += 1
            return
        }
        closeRun()
        run = (kind, entity, key, 1, version, keys)
    }

    private mutating func closeRun() {
        guard let open = run else { return }
        run = nil
        if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
        bytes += [UInt8(ascii: "["), UInt8(ascii: "\""), open.kind, UInt8(ascii: "\""), UInt8(ascii: ",")]
        // Entity and attribute names are identifiers (letters, digits, underscores): nothing to escape.
        name(model.entities[open.entity].name)
        for number in [open.first, open.count, open.version] {
            bytes.append(UInt8(ascii: ","))
            bytes += String(number).utf8
        }
        for key in open.keys {
            bytes.append(UInt8(ascii: ","))
            name(key)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    private mutating func name(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        bytes += text.utf8
        bytes.append(UInt8(ascii: "\""))
    }

    /// The most changes one transaction's record may list (16,777,216).
    package static let changeLimit: Int64 = 1 << 24

    /// A run of a record: `count` keys from `first` of `entity`, changed the same way.
    package struct Run {
        package let kind: HistoryChange.Kind
        package let entity: String
        package let first, count, version: Int64
        package let changedKeys: [String]
    }

    /// The runs `text` records (the transaction `sequence` of the store
    /// named `place` in errors), listing at most `limit` changes in all.
    ///
    /// - Throws: ``/AmberValues/AmberError/historyUnavailable(store:reason:)`` for text
    ///   that is not a history record, or one listing more than `limit` changes.
    package static func runs(in text: String, place: String, sequence: Int64, limit: Int64 = changeLimit) throws(AmberError) -> [Run] {
        func damaged(_ why: String) -> AmberError {
            .historyUnavailable(store: place, reason: "transaction \(sequence) is damaged: \(why)")
        }
        guard case .array(let entries) = try? JSONValue.parse(Data(text.utf8)) else { throw damaged("not a JSON array") }
        var runs: [Run] = [], total: Int64 = 0
        for entry in entries {
            guard case .array(let parts) = entry, parts.count >= 5, case .string(let kind) = parts[0], case .string(let entity) = parts[1],
                  case .int(let first) = parts[2], case .int(let count) = parts[3], case .int(let version) = parts[4],
                  count > 0, !first.addingReportingOverflow(count).overflow
            else { throw damaged("an entry is not [kind, entity, first key, count, version, …]") }
            // A bound on what one read may list, so a damaged record cannot exhaust memory.
            guard count <= limit - total else { throw damaged("it lists more than \(limit) changes") }
            total += count
            let change: HistoryChange.Kind
            switch kind {
            case "i": change = .inserted
            case "u": change = .updated
            case "d": change = .deleted
            default: throw damaged("unknown entry kind \"\(kind)\"")
            }
            var keys: [String] = []
            for part in parts.dropFirst(5) {
                guard case .string(let name) = part else { throw damaged("a changed key is not a name") }
                keys.append(name)
            }
            runs.append(Run(kind: change, entity: entity, first: first, count: count, version: version, changedKeys: keys))
        }
        return runs
    }

    /// The changes `runs` list, one per object, for the store `store`. An
    /// entity the model no longer has (dropped in a migration) keeps its name in the object ID.
    package static func changes(_ runs: [Run], store: UUID) -> [HistoryChange] {
        var changes: [HistoryChange] = []
        changes.reserveCapacity(Int(runs.reduce(0) { $0 + $1.count }))
        for run in runs {
            for offset in 0..<run.count {
                changes.append(HistoryChange(kind: run.kind, objectID: ObjectID(entityName: run.entity, store: store, key: .permanent(run.first + offset)),
                                             changedKeys: run.changedKeys, version: run.version))
            }
        }
        return changes
    }

    /// `runs` as a record a context merges (entities the model does not have are left out).
    package static func savedChanges(_ runs: [Run], relinked: Bool, model: Model) -> SavedChanges {
        var saved = SavedChanges()
        saved.relinked = relinked
        var tables: [String: Int] = [:]
        for entity in model.entities { tables[entity.name] = entity.rootIndex }
        let inserted = runs.lazy.filter { $0.kind == .inserted }.reduce(0) { $0 + $1.count }
        saved.insertedUnlisted = inserted > SavedChanges.insertedLimit
        for run in runs {
            guard let table = tables[run.entity] else { continue }
            for key in run.first..<(run.first + run.count) {
                let row = SavedChanges.Row(table: table, key: key, version: run.version)
                switch run.kind {
                case .inserted: if !saved.insertedUnlisted { saved.inserted.append(row) }
                case .updated: saved.updated.append(row)
                case .deleted: saved.deleted.append(row)
                }
            }
        }
        return saved
    }
}
