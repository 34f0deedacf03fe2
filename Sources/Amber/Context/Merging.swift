import AmberModel
import AmberStore
import AmberValues

// MARK: - Refreshing objects and merging other contexts' saves

extension Context {
    /// Reads `object` again from the store.
    ///
    /// With `mergeChanges` false, pending value and to-one changes are
    /// dropped and the object reads as saved now. With `mergeChanges` true,
    /// every value set in this context since its last save or rollback stays
    /// (even where another context has since saved the same value, or
    /// several in turn) and every other value is read as saved now; what is
    /// saved now becomes what a save compares with, so values saved meanwhile
    /// no longer make the save conflict. Transient values stay either way,
    /// and so does a deletion mark. An object whose row was deleted leaves
    /// the context, unless it has changes to keep (then its save reports the
    /// conflict). A new object is left alone. Either way its fetched
    /// properties are fetched again when next read.
    ///
    /// - Throws: ``/AmberValues/AmberError/objectUnavailable(_:reason:)`` for an object
    ///   of another context; a store error.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) throws(AmberError) {
        guard object.context === self else { throw .objectUnavailable(object.objectID, reason: "the object belongs to another context") }
        var change = isObserved ? ContextChange(.refreshed) : nil
        if let key = object.objectID.primaryKey { change?.touch(object.entity.rootIndex, key) }
        forgetFetchedProperties(of: object.objectID)
        // Values are dropped only from a saved object that has them (a new object and a fault are left alone).
        let drops = !mergeChanges && !object.isInserted && !object.isFault
        try refresh([object], keepingChanges: mergeChanges, reporting: &change)
        if drops { tell([object]) { $0.didTurnIntoFault($1) } }
        if let change { try notify(change) }
    }

    /// Merges what other contexts saved since the last merge: objects held
    /// here that they updated are refreshed keeping every value set here
    /// (``refresh(_:mergeChanges:)`` with `mergeChanges` true); objects they
    /// deleted leave the context unless they have changes here; new rows are
    /// found by the next fetch, and to-many relationships read their members
    /// again. Observers hear all three: the objects others inserted are
    /// listed too (read by key, only when an observer listens; not for a
    /// save of more than 4,096 new objects). Saves of other contexts on this store are known exactly, and so
    /// are saves through another connection (another store on the file,
    /// another process): the store notices them (SQLite's `data_version`)
    /// and the context merges the transactions its history recorded since the
    /// last merge. Only when that history is not there (purged, damaged,
    /// written with ``/AmberStore/Store/Options/recordsHistory`` off, or not
    /// written at all by another tool or an older library) is every object
    /// held here compared with its row's version.
    ///
    /// The cost follows what the others saved, not what this context holds
    /// (except when the history is not there, or after more than 1,024
    /// unmerged saves of other contexts on this store).
    public func mergeSavedChanges() throws(AmberError) {
        let version = try engine.dataVersion()
        var elsewhere: [SavedChanges] = [], compareAll = false, merged = mergedHistory
        if version != seenDataVersion {
            // Another connection or process wrote: the store's history says what, unless it keeps none or purged it.
            if let since = mergedHistory, let read = try engine.savedChanges(after: since) {
                (elsewhere, merged) = (read.records, read.through)
            } else {
                compareAll = true
                // Read before comparing: whatever is written meanwhile is merged next time.
                merged = try engine.lastHistorySequence()
            }
        }
        // Taken only once the store has answered: a failure above leaves the inbox and the marks for the next merge.
        let (records, overflowed) = inbox.take()
        (seenDataVersion, mergedHistory) = (version, merged)
        try merge(records + elsewhere, compareAll: compareAll || overflowed)
    }

    /// Waits until others saved something this context has not merged yet
    /// (another context on this store, another connection, another process
    /// or host), or until `timeout` passes; returns at once if they already
    /// had. A program that shows or processes what others save loops on it:
    ///
    /// ```swift
    /// while running {
    ///     if try context.waitForSavedChanges(timeout: .seconds(1)) { try context.mergeSavedChanges() }
    /// }
    /// ```
    ///
    /// A PostgreSQL store is told of other saves by the server (LISTEN and
    /// NOTIFY) and waits on its socket; an SQLite store looks at its data
    /// version every few milliseconds. Call it on the context's thread; it
    /// blocks that thread.
    ///
    /// - Returns: whether there is something to merge (``mergeSavedChanges()`` takes it).
    public func waitForSavedChanges(timeout: Duration) throws(AmberError) -> Bool {
        // Without a version from the last merge, a merge compares everything held: there is something to do.
        guard let seen = seenDataVersion else { return true }
        return try engine.waitForChanges(from: seen, inbox: inbox, timeout: timeout)
    }

    /// Merges `records` (what other writers saved), or compares every object
    /// held here with the store when `compareAll`, and tells observers.
    func merge(_ records: [SavedChanges], compareAll: Bool) throws(AmberError) {
        guard !records.isEmpty || compareAll else { return }
        var change = isObserved ? ContextChange(.merged) : nil
        if change != nil {
            if compareAll || records.contains(where: \.insertedUnlisted) { change?.rows = nil }
            for record in records {
                for row in record.inserted + record.updated + record.deleted { change?.touch(row.table, row.key) }
            }
            change?.relinked = compareAll || records.contains(where: \.relinked)
        }
        var stale: [ManagedObject] = [], gone: [ManagedObject] = [], seen = Set<ObjectIdentifier>()
        func note(_ object: ManagedObject, into list: inout [ManagedObject]) {
            if seen.insert(ObjectIdentifier(object)).inserted { list.append(object) }
        }
        if compareAll {
            // Whatever was written, compare every object held here with its row's version.
            for table in model.entities.indices where model.entities[table].rootIndex == table {
                let held = registeredObjects(inTable: table).filter { !$0.isFault }
                guard !held.isEmpty else { continue }
                let versions = try engine.versions(in: table, of: held.compactMap(\.objectID.primaryKey))
                for object in held {
                    guard let key = object.objectID.primaryKey else { continue }
                    if let saved = versions[key] {
                        if saved != object.version { note(object, into: &stale) }
                    } else {
                        note(object, into: &gone)
                    }
                }
            }
        } else {
            for record in records {
                for row in record.updated {
                    if let object = registered(model.entities[row.table], row.key), !object.isFault, object.version < row.version {
                        note(object, into: &stale)
                    }
                }
                for row in record.deleted {
                    if let object = registered(model.entities[row.table], row.key) { note(object, into: &gone) }
                }
            }
        }
        if change != nil, !compareAll { change?.report.inserted = try insertedObjects(in: records) }
        try refresh(stale, keepingChanges: true, reporting: &change)
        for object in gone where !object.isDetached {
            if forgetDeleted(object, keepingChanges: true) { change?.report.deleted.append(object) }
        }
        // Members and inverses may have moved with any of it: to-many relationships read again.
        generation += 1
        if let change { try notify(change) }
    }

    /// The objects other writers inserted, as `records` list them, for an
    /// observer's report: read by key (one query per table), so a row
    /// deleted again since is left out. A save of more than 4,096 new
    /// objects lists none (live queries fetch again instead).
    private func insertedObjects(in records: [SavedChanges]) throws(AmberError) -> [ManagedObject] {
        var keys: [Int: [Int64]] = [:], objects: [ManagedObject] = []
        for record in records {
            for row in record.inserted {
                // One held here already (fetched before this merge) is listed as it is; the refresh below brings it up to date.
                if let held = registered(model.entities[row.table], row.key) { objects.append(held) } else { keys[row.table, default: []].append(row.key) }
            }
        }
        for (table, keys) in keys.sorted(by: { $0.key < $1.key }) {
            let root = model.entities[table]
            objects += self.objects(from: try engine.fetchRows(of: root, where: .primaryKey, in: keys), of: root)
        }
        return objects
    }

    /// Re-reads the rows of `objects` (one query per entity) and refreshes
    /// each; objects whose rows are gone are handled as deleted elsewhere.
    /// With `change`, objects whose values changed and objects that left are added to its report.
    func refresh(_ objects: [ManagedObject], keepingChanges: Bool, reporting change: inout ContextChange?) throws(AmberError) {
        var byEntity: [ObjectIdentifier: (Entity, [ManagedObject])] = [:]
        for object in objects where !object.isInserted && !object.isDetached && !object.isFault {
            byEntity[ObjectIdentifier(object.entity), default: (object.entity, [])].1.append(object)
        }
        for (entity, group) in byEntity.values {
            let rows = try engine.fetchRows(of: entity, where: .primaryKey, in: group.compactMap(\.objectID.primaryKey))
            let batch = FetchedBatch(rows: rows, entity: entity, template: template(for: entity))
            var found = Set<Int64>()
            for index in 0..<rows.count {
                let key = rows.primaryKey(index)
                found.insert(key)
                guard let object = registered(entity, key) else { continue }
                let before = change == nil ? nil : object.slotSnapshot()
                object.refresh(from: batch, index: index, keepingChanges: keepingChanges)
                if let before {
                    let keys = object.changedKeys(from: before, to: object.slotSnapshot())
                    if !keys.isEmpty { change?.report.refreshed.append(ChangeReport.Update(object: object, keys: keys)) }
                }
            }
            for object in group where !found.contains(object.objectID.primaryKey ?? 0) {
                if forgetDeleted(object, keepingChanges: keepingChanges) { change?.report.deleted.append(object) }
            }
        }
        if !byEntity.isEmpty { generation += 1 }
    }

    /// `object`'s row is gone from the store: it leaves the context, unless
    /// it has changes to keep (its save then reports the conflict). Returns whether it left.
    @discardableResult
    private func forgetDeleted(_ object: ManagedObject, keepingChanges: Bool) -> Bool {
        if keepingChanges, object.committed != nil, !object.deletedFlag { return false }
        dropDeletedElsewhere(object)
        return true
    }
}

extension Context {
    /// After a save: objects held here whose derived attributes the store
    /// computed anew (those saved, and others, such as an author whose book
    /// count moved) read them and their new versions; the saved report lists
    /// the derived keys as updated.
    func readDerivedValues(_ rows: [SavedChanges.Row], into change: inout ContextChange?) throws(AmberError) {
        let held = rows.compactMap { row in registered(model.entities[row.table], row.key) }.filter { !$0.isFault }
        // Live queries look at every such row, held here or not.
        for row in rows { change?.touch(row.table, row.key) }
        var refreshed: ContextChange? = change == nil ? nil : ContextChange(.saved)
        try refresh(held, keepingChanges: false, reporting: &refreshed)
        guard let refreshed, let saved = change?.report else { return }
        // Looked up by identity: every saved row is in the derived log when a derivation reads the clock.
        let updatedAt = Dictionary(saved.updated.enumerated().map { (ObjectIdentifier($1.object), $0) }, uniquingKeysWith: { first, _ in first })
        let inserted = Set(saved.inserted.map(ObjectIdentifier.init))
        for update in refreshed.report.refreshed {
            let object = update.object
            if let index = updatedAt[ObjectIdentifier(object)], let saved = change?.report.updated[index] {
                change?.report.updated[index] = ChangeReport.Update(object: object, keys: object.entity.reportOrder(Set(saved.keys + update.keys)))
            } else if !inserted.contains(ObjectIdentifier(object)) {
                change?.report.updated.append(update)
            }
        }
    }
}
