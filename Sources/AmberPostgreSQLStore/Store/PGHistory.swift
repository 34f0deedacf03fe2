import AmberStore
import AmberValues
import Foundation

/// The store's history on the server: one row per transaction in
/// `_amber_history`, its changes as one ``HistoryRecord`` text, as the
/// SQLite store keeps it. Sequence numbers come from the table's identity
/// column, handed out under the store's write lock, so they are in commit
/// order; a purge remembers where it ended in the metadata.
struct PGHistory {
    static let name = "_amber_history"
    static let createSQL = """
        CREATE TABLE IF NOT EXISTS \(name) (sequence bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, \
        timestamp double precision NOT NULL, origin text NOT NULL, author text, context text, relinked boolean NOT NULL, \
        changes text NOT NULL)
        """
    static let purgedKey = "history_purged_through"
    /// The changes of a transaction written with ``Store/Options/recordsHistory`` off.
    static let unrecorded = HistoryEntry.unrecorded

    /// This store's mark on the transactions it writes: a context skips its own store's (its inbox had them).
    let origin = UUID().uuidString

    /// Appends a transaction, inside the caller's write transaction, and
    /// tells the store's listeners (``PostgreSQLStore/waitForChanges(from:inbox:timeout:)``):
    /// PostgreSQL delivers the notice only once the transaction commits, and
    /// only its sequence number and this store's mark, small as a notice should be.
    func record(_ changes: String, origin writer: WriteOrigin, relinked: Bool, channel: String, on connection: PGConnection) throws(AmberError) {
        let sequence = try connection.query(
            "INSERT INTO \(Self.name) (timestamp, origin, author, context, relinked, changes) VALUES (?, ?, ?, ?, ?, ?) RETURNING sequence",
            [.double(Date().timeIntervalSinceReferenceDate), .string(origin), writer.author.map(Value.string) ?? .null,
             writer.contextName.map(Value.string) ?? .null, .bool(relinked), .string(changes)]).int64(0, 0)
        _ = try connection.query("SELECT pg_notify(?, ?)", [.string(channel), .string("\(sequence) \(origin)")])
    }

    /// The last sequence number handed out (0 before the first transaction).
    func lastSequence(on connection: PGConnection) throws(AmberError) -> Int64 {
        try connection.query("SELECT coalesce(max(sequence), 0) FROM \(Self.name)").int64(0, 0)
    }

    /// The last sequence number purged (0 for none).
    func purgedThrough(on connection: PGConnection) throws(AmberError) -> Int64 {
        let rows = try connection.query("SELECT value FROM \(PostgreSQLStore.metadataTable) WHERE key = ?", [.string(Self.purgedKey)])
        return rows.count == 1 ? rows.int64(0, 0) : 0
    }

    /// Refuses `sequence` if the transactions after it are not all kept.
    func check(_ sequence: Int64, on connection: PGConnection, place: String) throws(AmberError) {
        try HistoryReading.check(sequence, purged: purgedThrough(on: connection), last: lastSequence(on: connection), place: place)
    }

    /// The transactions after `sequence`, oldest first.
    func entries(after sequence: Int64, on connection: PGConnection) throws(AmberError) -> [HistoryEntry] {
        let rows = try connection.query(
            "SELECT sequence, timestamp, origin, author, context, relinked, changes FROM \(Self.name) WHERE sequence > ? ORDER BY sequence",
            [.int(sequence)])
        return (0..<rows.count).map { row in
            HistoryEntry(sequence: rows.int64(row, 0), timestamp: Double(rows.text(row, 1)) ?? 0, origin: rows.text(row, 2),
                  author: rows.isNull(row, 3) ? nil : rows.text(row, 3), context: rows.isNull(row, 4) ? nil : rows.text(row, 4),
                  relinked: rows.text(row, 5) == "t", changes: rows.text(row, 6))
        }
    }

    /// Deletes the transactions up to `sequence` and remembers where the purge ended.
    func purge(through sequence: Int64, on connection: PGConnection) throws(AmberError) {
        guard sequence > (try purgedThrough(on: connection)) else { return }
        // The newest row stays, so the last sequence number stays known; reads skip it as purged.
        _ = try connection.query("DELETE FROM \(Self.name) WHERE sequence <= ? AND sequence < (SELECT max(sequence) FROM \(Self.name))",
                                 [.int(sequence)])
        _ = try connection.query("INSERT INTO \(PostgreSQLStore.metadataTable) (key, value) VALUES (?, ?) "
            + "ON CONFLICT (key) DO UPDATE SET value = excluded.value", [.string(Self.purgedKey), .string(String(sequence))])
    }
}
