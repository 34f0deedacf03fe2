import AmberModel
import AmberStore
import AmberValues

// MARK: - Changes by predicate, without loading objects

extension Context {
    /// Sets `assignments` on every object of the request's entity that its
    /// predicate matches, in the store, in one transaction, without fetching
    /// objects: `["price": .attribute("price") * .value(.decimal(…)), "isRead": true]`.
    ///
    /// Each new value is a constant (checked as a set checks it), another
    /// attribute of the same object, or `+`, `-` and `*` on them, for
    /// integers (an overflow is refused), Doubles and decimals (exact, or
    /// refused). Every row's new value is checked against the attribute's
    /// type and rules before anything is written; uniqueness holds (SQLite
    /// checks it row by row, so a shift of unique values is refused); row
    /// versions rise, so a context holding changes to one of these objects
    /// meets a conflict at its save, unless it merges first (this context
    /// does, and one that merges automatically): then its own values are
    /// kept and its save writes them over the batch's; derived attributes are computed anew;
    /// the history records the change. Objects this context holds are
    /// refreshed, keeping values set here; other contexts see the change when
    /// they merge, in this process or another. The request's limit, offset
    /// and order apply; its prefetching does not.
    ///
    /// - Returns: the IDs of the objects changed. When an observer fails the
    ///   batch is written, and ``/AmberValues/AmberError/observerFailed(event:failures:)`` is thrown.
    /// - Throws: ``/AmberValues/AmberError/invalidValue(place:expected:given:)`` naming
    ///   an attribute a batch cannot set or a value it refuses;
    ///   ``/AmberValues/AmberError/saveFailed(_:)`` listing the objects whose new value
    ///   breaks a rule or a uniqueness constraint (nothing written); a
    ///   predicate error with its position; ``/AmberValues/AmberError/unsupported(store:capability:)``.
    @discardableResult
    public func batchUpdate(_ request: FetchRequest, set assignments: KeyValuePairs<String, BatchValue>) throws(AmberError) -> BatchResult {
        var observerFailure: AmberError?
        let result = try batchUpdate(request, setting: assignments.map { ($0.key, $0.value) }, observerFailure: &observerFailure)
        if let observerFailure { throw observerFailure }
        return result
    }

    /// ``batchUpdate(_:set:)`` with the assignments as a list; an observer's
    /// failure (the batch is written) goes to `observerFailure`, so a caller
    /// that hands out the result, as the C API does, still has it.
    package func batchUpdate(_ request: FetchRequest, setting assignments: [(key: String, value: BatchValue)],
                             observerFailure: inout AmberError?) throws(AmberError) -> BatchResult
    {
        let entity = try model.entity(named: request.entityName)
        let resolved = try BatchAssignment.resolve(assignments, on: entity)
        let outcome = try engine.batchUpdate(entity, matching: request, setting: resolved, origin: writeOrigin, from: inbox)
        return try absorb(outcome, observerFailure: &observerFailure)
    }

    /// Deletes every object the request matches, in the store, in one
    /// transaction, without fetching objects. Delete rules hold: a nullify
    /// rule clears the links of the objects left (raising their versions; a
    /// required inverse refuses the batch); deny, cascade and no action refuse
    /// it while any deleted object still has a destination, naming the
    /// relationship; a to-one of another entity that points at a deleted
    /// object and has no inverse refuses it too. Derived counts are computed
    /// anew and the history records it. Objects this context holds leave it
    /// (unless they have changes here: their save then reports the conflict).
    ///
    /// - Returns: the IDs of the objects deleted, and of those whose links were cleared.
    /// - Throws: ``/AmberValues/AmberError/saveFailed(_:)`` naming each rule that refused
    ///   (nothing deleted); a predicate error; ``/AmberValues/AmberError/unsupported(store:capability:)``.
    @discardableResult
    public func batchDelete(_ request: FetchRequest) throws(AmberError) -> BatchResult {
        var observerFailure: AmberError?
        let result = try batchDelete(request, observerFailure: &observerFailure)
        if let observerFailure { throw observerFailure }
        return result
    }

    /// ``batchDelete(_:)``, with an observer's failure in `observerFailure`.
    package func batchDelete(_ request: FetchRequest, observerFailure: inout AmberError?) throws(AmberError) -> BatchResult {
        let entity = try model.entity(named: request.entityName)
        return try absorb(try engine.batchDelete(entity, matching: request, origin: writeOrigin, from: inbox), observerFailure: &observerFailure)
    }

    /// Who saves through this context, as the history records it.
    var writeOrigin: WriteOrigin { WriteOrigin(author: transactionAuthor, contextName: name) }

    /// Brings the objects held here in line with what a batch wrote, and names what it changed.
    private func absorb(_ outcome: BatchOutcome, observerFailure: inout AmberError?) throws(AmberError) -> BatchResult {
        func ids(_ rows: [(entity: Int, key: Int64)]) -> [ObjectID] {
            rows.map { ObjectID(entityName: model.entities[$0.entity].name, store: store.identifier, key: .permanent($0.key)) }
        }
        let result = BatchResult(objectIDs: ids(outcome.rows), nullified: ids(outcome.nullified))
        do throws(AmberError) {
            if !outcome.record.isEmpty { try merge([outcome.record], compareAll: false) }
        } catch .observerFailed(let event, let failures) {
            observerFailure = .observerFailed(event: event, failures: failures)
        }
        return result
    }
}
