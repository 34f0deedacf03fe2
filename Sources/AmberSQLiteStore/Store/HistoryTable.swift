import AmberModel
import AmberStore
import AmberValues
import CSQLite
import Foundation

/// The store's history in SQLite: one row per transaction in
/// `_amber_history`, its changes as one ``HistoryRecord`` text, so a save
/// pays one insert for it however many objects it wrote. Sequence numbers
/// are rowids, never reused: a purge keeps the newest row (reads start after
/// the metadata key `history_purged_through`, the last number purged), which
/// spares every save the `sqlite_sequence` page AUTOINCREMENT would write.
struct HistoryTable {
    static let name = "_amber_history"
    static let createSQL = """
        CREATE TABLE IF NOT EXISTS \(name) (sequence INTEGER PRIMARY KEY, timestamp REAL NOT NULL, \
        origin TEXT NOT NULL, author TEXT, context TEXT, relinked INTEGER NOT NULL, changes TEXT NOT NULL)
        """
    private static let purgedKey = "history_purged_through"
    /// The changes of a transaction a store with ``Store/Options/recordsHistory`` off wrote.
    static let unrecorded = HistoryEntry.unrecorded

    /// This store's mark on the transactions it writes: a context skips its own store's (its inbox had them).
    let origin = UUID().uuidString

    /// Appends a transaction, inside the caller's write transaction.
    func record(_ changes: String, origin writer: WriteOrigin, relinked: Bool, on connection: Connection) throws(AmberError) {
        let insert = try connection.statement(
            "INSERT INTO \(Self.name) (timestamp, origin, author, context, relinked, changes) VALUES (?, ?, ?, ?, ?, ?)")
        insert.bind(0, Date().timeIntervalSinceReferenceDate)
        insert.bind(1, origin)
        if let author = writer.author { insert.bind(2, author) } else { insert.bindNull(2) }
        if let context = writer.contextName { insert.bind(3, context) } else { insert.bindNull(3) }
        insert.bind(4, relinked ? Int64(1) : 0)
        insert.bind(5, changes)
        try insert.run()
    }

    /// The last sequence number handed out (0 before the first transaction).
    func lastSequence(on connection: Connection) throws(AmberError) -> Int64 {
        let last = try connection.statement("SELECT coalesce(max(sequence), 0) FROM \(Self.name)")
        defer { last.reset() }
        return try last.step() ? last.int64(0) : 0
    }

    /// The last sequence number purged (0 for none).
    func purgedThrough(on connection: Connection, metadataTable: String) throws(AmberError) -> Int64 {
        let purged = try connection.statement("SELECT value FROM \(metadataTable) WHERE key = '\(Self.purgedKey)'")
        defer { purged.reset() }
        return try purged.step() ? Int64(try purged.string(0)) ?? 0 : 0
    }

    /// Refuses `sequence` if the transactions after it are not all kept.
    func check(_ sequence: Int64, on connection: Connection, metadataTable: String, place: String) throws(AmberError) {
        try HistoryReading.check(sequence, purged: purgedThrough(on: connection, metadataTable: metadataTable),
                                 last: lastSequence(on: connection), place: place)
    }

    /// The transactions after `sequence`, oldest first.
    func entries(after sequence: Int64, on connection: Connection) throws(AmberError) -> [HistoryEntry] {
        let rows = try connection.statement(
            "SELECT sequence, timestamp, origin, author, context, relinked, changes FROM \(Self.name) WHERE sequence > ? ORDER BY sequence")
        defer { rows.reset() }
        rows.bind(0, sequence)
        var entries: [HistoryEntry] = []
        while try rows.step() {
            entries.append(HistoryEntry(sequence: rows.int64(0), timestamp: rows.double(1), origin: try rows.string(2),
                                 author: rows.columnType(3) == SQLITE_NULL ? nil : try rows.string(3),
                                 context: rows.columnType(4) == SQLITE_NULL ? nil : try rows.string(4),
                                 relinked: rows.int64(5) != 0, changes: try rows.string(6)))
        }
        return entries
    }

    /// Deletes the transactions up to `sequence` and remembers where the purge ended.
    func purge(through sequence: Int64, on connection: Connection, metadataTable: String) throws(AmberError) {
        let purged = try purgedThrough(on: connection, metadataTable: metadataTable)
        guard sequence > purged else { return }
        // The newest row stays, so its number is never handed out again; reads skip it as purged.
        let delete = try connection.statement("DELETE FROM \(Self.name) WHERE sequence <= ? AND sequence < (SELECT max(sequence) FROM \(Self.name))")
        delete.bind(0, sequence)
        try delete.run()
        let mark = try connection.statement("INSERT OR REPLACE INTO \(metadataTable) (key, value) VALUES ('\(Self.purgedKey)', ?)")
        mark.bind(0, String(sequence))
        try mark.run()
    }
}
