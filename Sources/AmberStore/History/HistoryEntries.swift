import AmberModel
import AmberValues
import Foundation

/// One transaction as a store's history table keeps it (a row of
/// `_amber_history` in every SQL store): what each store reads from its
/// table, and what ``HistoryReading`` turns into transactions and merges.
package struct HistoryEntry {
    package let sequence: Int64
    /// Seconds since 2001-01-01 UTC.
    package let timestamp: Double
    /// The writing store's mark: a context skips its own store's (its inbox had them).
    package let origin: String
    package let author: String?
    package let context: String?
    package let relinked: Bool
    /// The ``HistoryRecord`` text, or ``unrecorded``.
    package let changes: String

    /// The changes of a transaction written with ``Store/Options/recordsHistory`` off.
    package static let unrecorded = ""

    package init(sequence: Int64, timestamp: Double, origin: String, author: String?, context: String?, relinked: Bool, changes: String) {
        (self.sequence, self.timestamp, self.origin, self.author, self.context) = (sequence, timestamp, origin, author, context)
        (self.relinked, self.changes) = (relinked, changes)
    }
}

/// Reading a history back, the same for every store: which tokens may be
/// read after, the transactions as users see them, and the records a
/// context merges. The stores read the rows; this decides what they mean.
package enum HistoryReading {
    /// Refuses reading after `sequence` unless every transaction after it
    /// is kept: none purged past it (`purged`), and the history reaching it (`last`).
    package static func check(_ sequence: Int64, purged: Int64, last: Int64, place: String) throws(AmberError) {
        if sequence < purged {
            throw .historyUnavailable(store: place, reason: "the transactions up to \(purged) were purged; read from a token at \(purged) or later")
        }
        if sequence > last {
            throw .historyUnavailable(store: place, reason: "the token is at transaction \(sequence), but the store's history ends at \(last) "
                + "(a token from a later copy of this store, or from another store?)")
        }
    }

    /// `entries` as the transactions of store `identifier`, with one bound
    /// on the changes of the whole read, so a damaged history cannot exhaust memory.
    ///
    /// - Throws: ``/AmberValues/AmberError/historyUnavailable(store:reason:)`` for a damaged entry.
    package static func transactions(_ entries: [HistoryEntry], store identifier: UUID, place: String) throws(AmberError) -> [HistoryTransaction] {
        var transactions: [HistoryTransaction] = [], total: Int64 = 0
        for entry in entries {
            let recorded = entry.changes != HistoryEntry.unrecorded
            let changes = recorded ? HistoryRecord.changes(try HistoryRecord.runs(in: entry.changes, place: place, sequence: entry.sequence,
                                                                                  limit: HistoryRecord.changeLimit - total),
                                                           store: identifier) : []
            total += Int64(changes.count)
            transactions.append(HistoryTransaction(token: HistoryToken(storeIdentifier: identifier, sequence: entry.sequence),
                                                   timestamp: Date(timeIntervalSinceReferenceDate: entry.timestamp), author: entry.author,
                                                   contextName: entry.context, changes: changes, relinked: entry.relinked,
                                                   changesRecorded: recorded))
        }
        return transactions
    }

    /// What writers other than `origin` (the reading store's own mark) saved
    /// in `entries` (those after `sequence`), as records a context merges,
    /// and the sequence read up to; nil when there is nothing recorded to
    /// read (the data version moved, but a writer kept no history, an entry
    /// is damaged, or more changed than a merge reads): the context then
    /// compares every object it holds instead.
    package static func savedChanges(_ entries: [HistoryEntry], after sequence: Int64, skipping origin: String, model: Model,
                                     place: String) -> (records: [SavedChanges], through: Int64)? {
        guard !entries.isEmpty else { return nil }
        var records: [SavedChanges] = [], through = sequence, total: Int64 = 0
        for entry in entries {
            through = entry.sequence
            guard entry.origin != origin else { continue }
            guard entry.changes != HistoryEntry.unrecorded,
                  let runs = try? HistoryRecord.runs(in: entry.changes, place: place, sequence: entry.sequence,
                                                     limit: HistoryRecord.changeLimit - total)
            else { return nil }
            total += runs.reduce(0) { $0 + $1.count }
            records.append(HistoryRecord.savedChanges(runs, relinked: entry.relinked, model: model))
        }
        return (records, through)
    }
}
