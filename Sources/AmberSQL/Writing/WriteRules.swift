import AmberModel
import AmberStore
import AmberValues
import Foundation

/// What every SQL store's writer decides the same way, whatever its driver:
/// whether a row that moved since it was read is a conflict, how a merge
/// policy settles it key by key, and how each problem is worded. The
/// writers (the SQLite store's `StoreWriter`, the PostgreSQL store's
/// `PGWriter`) run the statements; these rules never touch the database.
package enum WriteRules<Row: RowSource> {
    /// Whether `stored` (the row as it is now) differs from what `object`
    /// read only in derived values the store recomputed (a book added to an
    /// author elsewhere): then the move is no conflict.
    package static func onlyDerivedValuesMoved(_ object: Row, _ stored: FetchedRows, mapping: TableMapping, deleting: Bool = false) -> Bool {
        // An object deleted without a change first holds the values it read.
        guard stored.count == 1, mapping.derived.contains(true), let read = object.savedSlotValues ?? (deleting ? object.slotValues : nil) else {
            return false
        }
        return zip(mapping.slots, mapping.derived).allSatisfy { slot, derived in derived || stored.value(0, slot: slot) == read[slot] }
    }

    /// Whether an update of `object` whose row moved (`stored`: one row, or
    /// none if deleted) is reported as a conflict rather than settled.
    package static func reportsUpdateConflict(_ object: Row, _ stored: FetchedRows, policy: MergePolicy, mapping: TableMapping,
                                              settlesAsAMerge: Bool) -> Bool {
        policy == .error && !onlyDerivedValuesMoved(object, stored, mapping: mapping) && !(settlesAsAMerge && stored.count == 1)
    }

    /// Whether a deletion of `object` whose row moved is reported as a
    /// conflict; under every other policy the deletion stands.
    package static func reportsDeleteConflict(_ object: Row, _ stored: FetchedRows, policy: MergePolicy, mapping: TableMapping,
                                              settlesAsAMerge: Bool) -> Bool {
        policy == .error && !onlyDerivedValuesMoved(object, stored, mapping: mapping, deleting: true) && !(settlesAsAMerge && stored.count == 1)
    }

    /// How `policy` settles `object` against its row as stored now
    /// (`stored`, one row): the values to write, which slots keep this
    /// object's value (the others take the stored one), and the extended
    /// attributes' merged form, if they are kept. Derived values are the
    /// store's under every policy.
    package static func settlement(of object: Row, against stored: FetchedRows, policy: MergePolicy, mapping: TableMapping)
        -> (values: [Value], kept: [Bool], extended: Value?)
    {
        var values = object.slotValues
        let read = object.savedSlotValues
        var kept = [Bool](repeating: false, count: values.count)
        for (slot, derived) in zip(mapping.slots, mapping.derived) where !derived {
            let storeChanged = read.map { stored.value(0, slot: slot) != $0[slot] } ?? true
            // Extended attributes are one column but many keys, settled one by one below.
            if slot == object.entity.extraSlot {
                kept[slot] = object.isSetHere(slot: slot) || policy == .overwrite
                continue
            }
            switch policy {
            case .error, .objectWins: kept[slot] = object.isSetHere(slot: slot)
            case .storeWins: kept[slot] = object.isSetHere(slot: slot) && !storeChanged
            case .overwrite: kept[slot] = true
            }
        }
        var extended: Value?
        if let slot = object.entity.extraSlot, kept[slot], let now = stored.value(0, slot: slot) {
            if policy != .overwrite {
                values[slot] = ExtendedValues.merge(stored: now, read: read?[slot] ?? values[slot], current: values[slot],
                                                    storeWins: policy == .storeWins)
            }
            extended = values[slot]
        }
        return (values, kept, extended)
    }

    /// Settles `object`, whose update found its row moved (`stored`: the row
    /// as it is now, one or none), as every SQL writer does: reported as a
    /// conflict (appended to `problems`), or under another policy written
    /// again after a deletion (`writeAgain`) or written over the stored row
    /// key by key (`update`, given the values and which slots to write; it
    /// returns whether the row was found at the stored version, nil if a
    /// constraint refused it). The store runs the statements; this decides.
    ///
    /// - Returns: how it was settled, or nil when it was not (a conflict, or a refused write).
    package static func settleUpdate(_ object: Row, stored: FetchedRows, policy: MergePolicy, mapping: TableMapping, settlesAsAMerge: Bool,
                                     problems: inout [SaveProblem], writeAgain: (inout [SaveProblem]) throws(AmberError) -> Bool,
                                     update: (_ values: [Value], _ writes: (Int) -> Bool, inout [SaveProblem]) throws(AmberError) -> Bool?)
        throws(AmberError) -> Resolution?
    {
        guard !reportsUpdateConflict(object, stored, policy: policy, mapping: mapping, settlesAsAMerge: settlesAsAMerge) else {
            problems.append(conflict(object, stored, mapping: mapping))
            return nil
        }
        guard stored.count == 1 else {
            if policy == .storeWins { return .deletedInStore }
            return try writeAgain(&problems) ? .writtenAgain(version: object.rowVersion + 1) : nil
        }
        let (values, kept, extended) = settlement(of: object, against: stored, policy: policy, mapping: mapping)
        let written = try update(values, { slot in kept[slot] && stored.value(0, slot: slot) != values[slot] }, &problems)
        return written == true ? .merged(stored: stored, kept: kept, extended: extended) : nil
    }

    /// The conflict of `object` with its row as stored now (`stored`, empty
    /// if deleted): the versions, and each key changed on either side, with
    /// the value read, the value stored now and (unless `deletedHere`) the
    /// value here.
    package static func conflict(_ object: Row, _ stored: FetchedRows, mapping: TableMapping, deletedHere: Bool = false) -> SaveProblem {
        let read = "since it was read at version \(object.rowVersion)"
        guard stored.count == 1 else {
            return SaveProblem(objectID: object.objectID, place: object.entity.name, rule: .conflict,
                               message: "was deleted in the store \(read)")
        }
        let values = object.slotValues
        // An object deleted without a change first holds the values it read.
        let before = object.savedSlotValues ?? (deletedHere ? values : nil)
        var keys: [String] = []
        for (column, slot) in mapping.slots.enumerated() {
            guard let now = stored.value(0, slot: slot) else { continue }
            let storeChanged = before.map { $0[slot] != now } ?? true
            guard storeChanged || (!deletedHere && object.isSetHere(slot: slot)) else { continue }
            let wasRead = before.map { "read \($0[slot]), " } ?? ""
            keys.append("\(mapping.columns[column].stored.property): \(wasRead)stored \(now)" + (deletedHere ? "" : ", here \(values[slot])"))
        }
        let detail = keys.isEmpty ? "" : ": " + keys.joined(separator: "; ")
        return SaveProblem(objectID: object.objectID, place: object.entity.name, rule: .conflict,
                           message: "was changed in the store \(read) (now version \(stored.version(0)))"
                               + (deletedHere ? " and is deleted here" : "") + detail)
    }

    /// `object` broke `constraint` (its attributes): names the constraint
    /// and shows the values that collided.
    package static func uniquenessProblem(_ object: Row, constraint: [Attribute]) -> SaveProblem {
        let entity = object.entity
        let values = constraint.map { "\($0.name) = \(object.slotValues[$0.codec?.encodedSlot ?? $0.slot])" }.joined(separator: ", ")
        return SaveProblem(objectID: object.objectID, place: TableMapping.constraintName(entity: entity, constraint),
                           rule: .uniqueness,
                           message: "uniqueness constraint violated: another \(entity.name) already has \(values)")
    }

    /// Column `column` of `object`'s row points at `key` of `destination`,
    /// which another save deleted since it was read.
    package static func danglingLink(_ object: Row, column: Int, mapping: TableMapping, destination: TableMapping, key: Int64) -> SaveProblem {
        SaveProblem(objectID: object.objectID, place: "\(object.entity.name).\(mapping.columns[column].stored.property)", rule: .relationship,
                    message: "points at \(destination.entity.name) \(key), which is no longer in the store "
                        + "(another save deleted it since it was read)")
    }

    /// A stored row (`key` of entity `entityName`) that another save linked,
    /// through `referrer`, to `target` of `deleted`, which this save deletes.
    package static func linkToDeleted(entityName: String, key: Int64, store: UUID, referrer: TableMapping.Referrer,
                                      deleted: TableMapping, target: Int64) -> SaveProblem {
        SaveProblem(objectID: ObjectID(entityName: entityName, store: store, key: .permanent(key)),
                    place: referrer.place, rule: .relationship,
                    message: "points at \(deleted.entity.name) \(target), which this save deletes "
                        + "(a link another save made since it was read)")
    }

    /// A link to a new object (`object`'s column, or a join-table row when
    /// nil) that is not part of the save: the context checks links before
    /// writing, so this is its backstop.
    package static func unsavedTarget(_ object: Row?, column: Int?, mapping: TableMapping?) -> AmberError {
        guard let object, let column, let mapping else {
            return .saveFailed([SaveProblem(objectID: nil, place: "link", rule: .relationship, message: "links a new object that is not being saved")])
        }
        return .saveFailed([SaveProblem(objectID: object.objectID, place: "\(object.entity.name).\(mapping.columns[column].stored.property)",
                                        rule: .relationship, message: "points at a new object that is not being saved")])
    }

    /// Puts the problems from `start` on in the order of their objects in
    /// `objects` (writers batch rows per entity, which reorders them).
    package static func inObjectOrder(_ problems: inout [SaveProblem], from start: Int, _ objects: [Row]) {
        var position: [ObjectID: Int] = [:]
        for index in objects.indices { position[objects[index].objectID] = index }
        let sorted = problems[start...].enumerated().sorted { a, b in
            let (x, y) = (a.element.objectID.flatMap { position[$0] } ?? .max, b.element.objectID.flatMap { position[$0] } ?? .max)
            return x != y ? x < y : a.offset < b.offset
        }
        problems.replaceSubrange(start..., with: sorted.map(\.element))
    }
}

extension SaveProblem {
    /// A batch update broke `constraint` of `entity`. Stores check a
    /// constraint row by row as the UPDATE goes, so a shift of unique values
    /// (rank = rank + 1) is refused even where the final values would all differ.
    package static func batchUniqueness(_ entity: Entity, constraint: [Attribute]) -> SaveProblem {
        Self(objectID: nil, place: TableMapping.constraintName(entity: entity, constraint), rule: .uniqueness,
                    message: "uniqueness constraint violated: as the batch update changed the objects one by one, two held "
                        + "the same values (nothing was written; values that only collide midway, such as a shift of unique "
                        + "values, need a save through a context)")
    }

    /// A batch update's new value for `attribute` of `object` breaks `rule`, as `message` says.
    package static func batchValue(_ attribute: Attribute, of object: ObjectID, _ rule: SaveProblem.Rule, _ message: String) -> SaveProblem {
        Self(objectID: object, place: attribute.description, rule: rule, message: "the batch update's value: \(message)")
    }
}
