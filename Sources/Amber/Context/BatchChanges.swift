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
    /// type and rules before anything is written; uniqueness holds; row
    /// versions rise (a context that changed one of these objects meanwhile
    /// meets a conflict at its save); derived attributes are computed anew;
    /// the history records the change. Objects this context holds are
    /// refreshed, keeping values set here; other contexts see the change when
    /// they merge, in this process or another. The request's limit, offset
    /// and order apply; its prefetching does not.
    ///
    /// - Returns: the IDs of the objects changed.
    /// - Throws: ``/AmberValues/AmberError/invalidValue(place:expected:given:)`` naming
    ///   an attribute a batch cannot set or a value it refuses;
    ///   ``/AmberValues/AmberError/saveFailed(_:)`` listing the objects whose new value
    ///   breaks a rule or a uniqueness constraint (nothing written); a
    ///   predicate error with its position; ``/AmberValues/AmberError/unsupported(store:capability:)``.
    @discardableResult
    public func batchUpdate(_ request: FetchRequest, set assignments: KeyValuePairs<String, BatchValue>) throws(AmberError) -> BatchResult {
        try batchUpdate(request, setting: assignments.map { ($0.key, $0.value) })
    }

    /// ``batchUpdate(_:set:)`` with the assignments as a list (the C API's).
    package func batchUpdate(_ request: FetchRequest, setting assignments: [(key: String, value: BatchValue)]) throws(AmberError) -> BatchResult {
        let entity = try model.entity(named: request.entityName)
        let resolved = try BatchAssignment.resolve(assignments, on: entity)
        return try absorb(try engine.batchUpdate(entity, matching: request, setting: resolved, origin: writeOrigin, from: inbox))
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
        let entity = try model.entity(named: request.entityName)
        return try absorb(try engine.batchDelete(entity, matching: request, origin: writeOrigin, from: inbox))
    }

    /// Who saves through this context, as the history records it.
    var writeOrigin: WriteOrigin { WriteOrigin(author: transactionAuthor, contextName: name) }

    /// Brings the objects held here in line with what a batch wrote, and names what it changed.
    private func absorb(_ outcome: BatchOutcome) throws(AmberError) -> BatchResult {
        if !outcome.record.isEmpty { try merge([outcome.record], compareAll: false) }
        func ids(_ rows: [(entity: Int, key: Int64)]) -> [ObjectID] {
            rows.map { ObjectID(entityName: model.entities[$0.entity].name, store: store.identifier, key: .permanent($0.key)) }
        }
        return BatchResult(objectIDs: ids(outcome.rows), nullified: ids(outcome.nullified))
    }
}
