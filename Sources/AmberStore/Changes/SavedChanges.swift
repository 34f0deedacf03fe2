import AmberModel
import AmberValues
import Foundation

/// What one save wrote, by row, for the other contexts on the store to merge.
package struct SavedChanges: Sendable {
    /// A written row: its table (a root entity's index), key and new version.
    package struct Row: Sendable {
        package let table: Int
        package let key: Int64
        package let version: Int64

        package init(table: Int, key: Int64, version: Int64) {
            (self.table, self.key, self.version) = (table, key, version)
        }
    }

    /// New rows need no merging (the next fetch finds them), but live queries
    /// look at them: their keys, unless there were more than `insertedLimit`.
    package var inserted: [Row] = []
    /// Set when a save inserted more rows than are listed: a live query then evaluates its request again.
    package var insertedUnlisted = false
    package static let insertedLimit = 4096
    package var updated: [Row] = []
    package var deleted: [Row] = []
    /// Whether join-table rows (many-to-many links) or ordered positions changed.
    package var relinked = false

    /// An empty record.
    package init() {}

    package var isEmpty: Bool { inserted.isEmpty && !insertedUnlisted && updated.isEmpty && deleted.isEmpty && !relinked }

    package init<Source: RowSource>(_ changes: ChangeSet<Source>, _ written: WrittenKeys) {
        // A bulk insert is not kept row by row in every other context's inbox until it merges.
        if changes.inserts.count > Self.insertedLimit {
            insertedUnlisted = true
        } else {
            inserted.reserveCapacity(changes.inserts.count)
            for (object, key) in zip(changes.inserts, written.keys) {
                inserted.append(Row(table: object.entity.rootIndex, key: key, version: 1))
            }
        }
        for object in changes.updates {
            var version = object.rowVersion + 1
            switch written.resolved[ObjectIdentifier(object)] {
            case .merged(let stored, _, _)?: version = stored.version(0) + 1
            case .writtenAgain(let again)?: version = again
            case .deletedInStore?: continue
            case nil: break
            }
            updated.append(Row(table: object.entity.rootIndex, key: object.objectID.primaryKey ?? 0, version: version))
        }
        for object in changes.deletes {
            deleted.append(Row(table: object.entity.rootIndex, key: object.objectID.primaryKey ?? 0, version: object.rowVersion))
        }
        // Rows whose derived values moved, at their final versions (after the saved ones, so merges see the later version).
        updated += written.derived
        relinked = !changes.links.isEmpty || !changes.positions.isEmpty
    }
}

/// Where a context receives what other contexts on its store saved; any
/// thread may post while the owner takes.
package final class ChangeInbox: @unchecked Sendable {
    private let lock = NSLock()
    private var records: [SavedChanges] = []
    /// Set when more records came than an inbox keeps: the owner must compare
    /// every object it holds with the store instead.
    private var overflowed = false
    /// Records kept for a context that does not merge: past this, it compares instead.
    private static let limit = 1024

    fileprivate func post(_ saved: SavedChanges) {
        lock.lock()
        defer { lock.unlock() }
        if records.count >= Self.limit {
            records.removeAll()
            overflowed = true
        } else if !overflowed {
            records.append(saved)
        }
    }

    /// Whether something was posted since the last ``take()``.
    package var hasRecords: Bool {
        lock.lock()
        defer { lock.unlock() }
        return !records.isEmpty || overflowed
    }

    /// The records posted since the last call, and whether some were lost (then compare everything).
    package func take() -> (records: [SavedChanges], overflowed: Bool) {
        lock.lock()
        defer { lock.unlock() }
        defer { (records, overflowed) = ([], false) }
        return (records, overflowed)
    }
}


/// The inboxes of the contexts on one store, held weakly (a context's goes
/// with it). Not thread-safe: its store guards it with the lock its saves hold.
package struct InboxList {
    private var inboxes: [WeakInbox] = []

    package init() {}

    /// A new inbox that receives what every other context's save posts.
    package mutating func open() -> ChangeInbox {
        let inbox = ChangeInbox()
        inboxes.removeAll { $0.inbox == nil }
        inboxes.append(WeakInbox(inbox: inbox))
        return inbox
    }

    /// Hands `saved` to every inbox but the saver's. The record is made only
    /// if some inbox will read it: a store with one context pays nothing.
    package func post(_ saved: @autoclosure () -> SavedChanges, skipping sender: ChangeInbox?) {
        var record: SavedChanges?
        for entry in inboxes {
            guard let inbox = entry.inbox, inbox !== sender else { continue }
            if record == nil { record = saved() }
            if let record, !record.isEmpty { inbox.post(record) }
        }
    }
}

private struct WeakInbox {
    weak var inbox: ChangeInbox?
}
