import AmberModel
import AmberValues
import Foundation

/// The changes of one transaction as a store keeps them in its history: one
/// JSON array of entries, the same text in every store, so a store only
/// keeps a row per transaction (sequence, time, origin, author, context,
/// whether links moved, and this text) and saves pay one insert for it.
///
/// Entries, by entity and model name (entity numbers change in migrations):
/// `["i", "Book", firstKey, count]` a run of inserted keys (version 1),
/// `["u", "Book", key, version, "title", …]` an update with its changed keys,
/// `["d", "Book", key, version]` a deletion.
package struct HistoryRecord {
    private var text = "["
    private var first = true
    /// The open run of inserted keys: entity index, first key, count.
    private var run: (entity: Int, first: Int64, count: Int64)?
    private let model: Model

    /// An empty record of changes to `model`'s objects; ``finished()`` gives its text.
    package init(model: Model) { self.model = model }

    /// Records what `changes` wrote (`written` says with which keys and versions).
    package init<Row: RowSource>(_ changes: ChangeSet<Row>, written: WrittenKeys, model: Model) {
        self.init(model: model)
        for (object, key) in zip(changes.inserts, written.keys) { inserted(object.entity.index, key) }
        for object in changes.updates {
            var version = object.rowVersion + 1
            switch written.resolved[ObjectIdentifier(object)] {
            case .merged(let stored, _, _)?: version = stored.version(0) + 1
            case .writtenAgain(let again)?:
                updated(object.entity.index, object.objectID.primaryKey ?? 0, version: again, keys: object.entity.columns.map(\.name))
                continue
            case .deletedInStore?: continue
            case nil: break
            }
            updated(object.entity.index, object.objectID.primaryKey ?? 0, version: version, keys: Self.changedKeys(object))
        }
        for object in changes.deletes { deleted(object.entity.index, object.objectID.primaryKey ?? 0, version: object.rowVersion) }
        derived(written)
    }

    /// Records the rows whose derived attributes `written` says the store computed anew.
    package mutating func derived(_ written: WrittenKeys) {
        for (row, entity) in zip(written.derived, written.derivedEntities) {
            let names = model.entities[entity].attributes.filter { $0.derivation != nil }.map(\.name)
            updated(entity, row.key, version: row.version, keys: names)
        }
    }

    /// The record's text, complete.
    package mutating func finished() -> String {
        closeRun()
        return text + "]"
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
        if let open = run, open.entity == entity, open.first + open.count == key {
            run = (entity, open.first, open.count + 1)
            return
        }
        closeRun()
        run = (entity, key, 1)
    }

    private mutating func closeRun() {
        guard let open = run else { return }
        run = nil
        separate()
        text += "[\"i\",\"\(model.entities[open.entity].name)\",\(open.first),\(open.count)]"
    }

    /// Records an updated row and the keys that changed.
    package mutating func updated(_ entity: Int, _ key: Int64, version: Int64, keys: [String]) {
        entry("u", entity, key, version: version, keys: keys)
    }

    /// Records a deleted row, at the version it had.
    package mutating func deleted(_ entity: Int, _ key: Int64, version: Int64) {
        entry("d", entity, key, version: version, keys: [])
    }

    private mutating func entry(_ kind: String, _ entity: Int, _ key: Int64, version: Int64, keys: [String]) {
        closeRun()
        separate()
        // Entity and attribute names are identifiers (letters, digits, underscores): nothing to escape.
        text += "[\"\(kind)\",\"\(model.entities[entity].name)\",\(key),\(version)"
        for name in keys { text += ",\"\(name)\"" }
        text += "]"
    }

    private mutating func separate() {
        if !first { text += "," }
        first = false
    }

    /// The changes `text` records, in `model`'s terms, for the store
    /// `store` (named `place` in errors). An entity the model no longer has
    /// (dropped in a migration) keeps its name in the object ID.
    ///
    /// - Throws: ``/AmberValues/AmberError/historyUnavailable(store:reason:)`` for text that is not a history record.
    package static func changes(in text: String, model: Model, store: UUID, place: String, sequence: Int64)
        throws(AmberError) -> [HistoryChange]
    {
        func damaged(_ why: String) -> AmberError {
            .historyUnavailable(store: place, reason: "transaction \(sequence) is damaged: \(why)")
        }
        guard case .array(let entries) = try? JSONValue.parse(Data(text.utf8)) else { throw damaged("not a JSON array") }
        var changes: [HistoryChange] = []
        for entry in entries {
            guard case .array(let parts) = entry, parts.count >= 4, case .string(let kind) = parts[0], case .string(let entity) = parts[1],
                  case .int(let key) = parts[2], case .int(let number) = parts[3]
            else { throw damaged("an entry is not [kind, entity, key, number, …]") }
            func id(_ key: Int64) -> ObjectID { ObjectID(entityName: entity, store: store, key: .permanent(key)) }
            switch kind {
            case "i":
                guard number > 0, number <= 1 << 32, key.addingReportingOverflow(number).overflow == false else { throw damaged("a bad run of keys") }
                for offset in 0..<number { changes.append(HistoryChange(kind: .inserted, objectID: id(key + offset), changedKeys: [], version: 1)) }
            case "u", "d":
                var keys: [String] = []
                for part in parts.dropFirst(4) {
                    guard case .string(let name) = part else { throw damaged("a changed key is not a name") }
                    keys.append(name)
                }
                changes.append(HistoryChange(kind: kind == "u" ? .updated : .deleted, objectID: id(key), changedKeys: keys, version: number))
            default:
                throw damaged("unknown entry kind \"\(kind)\"")
            }
        }
        return changes
    }

    /// `changes` as a record a context merges (entities the model does not have are left out).
    package static func savedChanges(_ changes: [HistoryChange], relinked: Bool, model: Model) -> SavedChanges {
        var saved = SavedChanges()
        saved.relinked = relinked
        var tables: [String: Int] = [:]
        for entity in model.entities { tables[entity.name] = entity.rootIndex }
        let inserted = changes.lazy.filter { $0.kind == .inserted }.count
        saved.insertedUnlisted = inserted > SavedChanges.insertedLimit
        for change in changes {
            guard let table = tables[change.objectID.entityName], let key = change.objectID.primaryKey else { continue }
            let row = SavedChanges.Row(table: table, key: key, version: change.version)
            switch change.kind {
            case .inserted: if !saved.insertedUnlisted { saved.inserted.append(row) }
            case .updated: saved.updated.append(row)
            case .deleted: saved.deleted.append(row)
            }
        }
        return saved
    }
}
