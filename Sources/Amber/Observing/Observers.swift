import AmberModel
import AmberStore
import AmberValues

// MARK: - Telling observers and live queries what changed

extension Context {
    /// Adds `observer`, called on this context's thread with a
    /// ``ChangeReport`` after each save that wrote something, each merge
    /// (``mergeSavedChanges()``, also the automatic one) that changed or
    /// removed objects held here, and each ``refresh(_:mergeChanges:)`` that
    /// changed an object. Observers are called in the order they were added.
    ///
    /// An error the observer throws does not undo what was done: every other
    /// observer is still called, and then the call that made the event
    /// throws ``/AmberValues/AmberError/observerFailed(event:failures:)``. A save has
    /// then been written; a fetch, count or object lookup that merged first
    /// has not run yet (call it again).
    ///
    /// With no observer and no live query, a save costs what it did before:
    /// no report is made.
    @discardableResult
    public func addObserver(_ observer: @escaping (ChangeReport) throws -> Void) -> ObserverToken {
        observers.add(observer)
    }

    /// Removes the observer `token` names; false if it names none (already removed).
    @discardableResult
    public func removeObserver(_ token: ObserverToken) -> Bool {
        observers.remove(token)
    }

    /// The changes made here and not saved yet, worked out now: new
    /// objects, changed ones with the keys whose values differ from the
    /// saved ones, and those marked for deletion.
    public var pendingChanges: ChangeReport {
        var report = ChangeReport(.pending)
        for object in pendingObjects {
            if object.isInserted {
                report.inserted.append(object)
            } else if object.isDeleted {
                report.deleted.append(object)
            } else {
                // Attributes through changedValues: before a save, encoded forms are not current yet.
                // In the order a save's report lists them: attributes, to-ones, extended keys (sorted), to-manys.
                var changed = object.changedValues()
                var keys: [String] = []
                for attribute in object.entity.attributes where changed.removeValue(forKey: attribute.name) != nil { keys.append(attribute.name) }
                if let committed = object.committed { keys += object.changedToOneKeys(from: committed, to: object.values) }
                keys += changed.keys.sorted()  // what is left: extended attributes
                keys += relinkedKeys(of: object)
                if !keys.isEmpty { report.updated.append(ChangeReport.Update(object: object, keys: keys)) }
            }
        }
        for object in relinked where !object.isPending && !object.isDetached {
            report.updated.append(ChangeReport.Update(object: object, keys: relinkedKeys(of: object)))
        }
        return report
    }

    /// The names of `object`'s to-many relationships whose members changed since the last save.
    func relinkedKeys(of object: ManagedObject) -> [String] {
        guard object.isRelinked else { return [] }
        return object.entity.relationships.filter { object.relinkedRelationships.contains($0.index) }.map(\.name)
    }

    /// Brings the live queries that show pending changes up to date with
    /// the changes made here since they last looked (sets, inserts,
    /// deletions, undo, redo, rollback), calling each one's
    /// ``LiveQuery/onChange`` with what moved. A save, a merge and a refresh
    /// do this too; call it after a batch of edits a list should show before
    /// they are saved. Observers are not called: they hear of saves, merges
    /// and refreshes. Costs what the changes touch, not what the results hold
    /// (see ``LiveQuery``).
    ///
    /// - Throws: ``/AmberValues/AmberError/observerFailed(event:failures:)``
    ///   (event `pending`) if an `onChange` threw, after every live query was
    ///   brought up to date; an error reading a value or a row.
    public func processPendingChanges() throws(AmberError) {
        let failures = update(observers.liveQueries.filter(\.request.includesPendingChanges), for: ContextChange(.pending))
        guard failures.isEmpty else { throw .observerFailed(event: ChangeReport.Event.pending.rawValue, failures: failures) }
    }

    /// Whether anyone listens: only then are changes worked out.
    var isObserved: Bool { !observers.isEmpty }

    /// What a save of `changes` wrote, worked out before the context forgets
    /// the committed values (the caller calls it between writing and committing).
    func savedChange(_ changes: ChangeSet<ManagedObject>, _ written: WrittenKeys) -> ContextChange {
        var change = ContextChange(.saved)
        change.report.inserted = changes.inserts
        for (object, key) in zip(changes.inserts, written.keys) { change.touch(object.entity.rootIndex, key) }
        var listed = Set<ObjectIdentifier>()
        for object in changes.updates {
            listed.insert(ObjectIdentifier(object))
            if let key = object.objectID.primaryKey { change.touch(object.entity.rootIndex, key) }
            if case .deletedInStore? = written.resolved[ObjectIdentifier(object)] {
                change.report.deleted.append(object)
                continue
            }
            let keys = object.changedKeys(from: object.committed ?? object.values, to: object.values) + relinkedKeys(of: object)
            change.report.updated.append(ChangeReport.Update(object: object, keys: keys))
        }
        for object in changes.deletes {
            listed.insert(ObjectIdentifier(object))
            if let key = object.objectID.primaryKey { change.touch(object.entity.rootIndex, key) }
        }
        change.report.deleted += changes.deletes
        // Objects whose only change is to a to-many relationship's members.
        for object in relinked where !object.insertedFlag && !listed.contains(ObjectIdentifier(object)) {
            let keys = relinkedKeys(of: object)
            guard !keys.isEmpty, let key = object.objectID.primaryKey else { continue }
            change.touch(object.entity.rootIndex, key)
            change.report.updated.append(ChangeReport.Update(object: object, keys: keys))
        }
        change.relinked = !changes.links.isEmpty || !changes.positions.isEmpty
        return change
    }

    /// Tells live queries, then observers, about `change`; each is told even
    /// if another failed, and then every failure is thrown together.
    ///
    /// - Throws: ``/AmberValues/AmberError/observerFailed(event:failures:)``.
    func notify(_ change: ContextChange) throws(AmberError) {
        guard !change.isEmpty else { return }
        var failures = update(observers.liveQueries, for: change)
        if !change.report.isEmpty {
            // A copy: an observer may add or remove observers.
            for (token, observer) in observers.observers {
                do {
                    try observer(change.report)
                } catch {
                    failures.append("observer \(token.rawValue): \(error)")
                }
            }
        }
        guard failures.isEmpty else { throw .observerFailed(event: change.report.event.rawValue, failures: failures) }
    }

    /// Brings `queries` up to date with `change`, telling each what moved;
    /// every one is brought up to date even if another failed. The failures, described.
    private func update(_ queries: [LiveQuery], for change: ContextChange) -> [String] {
        var failures: [String] = []
        for query in queries {
            do {
                if let changes = try query.update(for: change), !changes.isEmpty { try query.onChange?(changes) }
            } catch {
                failures.append("live query of \(query.request.entityName): \(error)")
            }
        }
        return failures
    }
}
