import AmberValues

/// What a save does with an object whose row another context or process
/// changed or deleted since this context read it (a conflict).
///
/// "Per key" means attribute by attribute, to-one by to-one and extended
/// attribute by extended attribute: keys only
/// one side changed keep that side's value whatever the policy. To-many
/// relationships are saved as added and removed members, which never
/// conflict: both sides' additions and removals are kept.
public enum MergePolicy: Sendable, Equatable, CaseIterable {
    /// The save fails, listing every conflicting object with its stored and
    /// local values; nothing is written and every change is kept.
    case error
    /// Per key, what the store holds wins over what this context set; a
    /// deletion, on either side, wins.
    case storeWins
    /// Per key, what this context set wins over what the store holds; the
    /// store's other keys are kept. This context's deletions are carried
    /// out, and an object deleted in the store is written again.
    case objectWins
    /// Every key of the object is written as this context has it, whatever
    /// the store holds; deletions as with ``objectWins``.
    case overwrite
}

/// How the writer settled one conflicting row, for the context to bring its
/// object in line after COMMIT.
package enum Resolution {
    /// The row was read again (`stored`, one row at its version then) and
    /// the slots `kept` (by slot, true: this context's value) written over
    /// it; its version is now one more. `extended`, if not nil, is the
    /// stored form of the extended attributes written: this context's keys
    /// merged into the stored ones, key by key.
    case merged(stored: FetchedRows, kept: [Bool], extended: Value?)
    /// The row had been deleted and the object's deletion stands: it leaves the context.
    case deletedInStore
    /// The row had been deleted and was written again from the object, at
    /// `version` (one more than the object's, so no context mistakes it for
    /// the row it read).
    case writtenAgain(version: Int64)
}
