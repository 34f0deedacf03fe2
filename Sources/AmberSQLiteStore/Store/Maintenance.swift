import AmberModel
import AmberStore
import AmberValues
import CSQLite
import Foundation

/// Looking after a store's file: checking it, copying it while it is in use,
/// compacting it and folding its write-ahead log back into it.
extension SQLiteStore {
    /// Checks the store: every page, index and constraint (SQLite's
    /// `integrity_check`), every link between objects (`foreign_key_check`),
    /// and Amber's metadata. It reads the whole file while holding the
    /// store, so other contexts on this store wait for it.
    ///
    /// - Returns: each problem found, one sentence each; empty when the store is sound.
    /// - Throws: ``/AmberValues/AmberError/busy(path:timeout:)`` if another connection
    ///   held the file locked past the busy timeout; an SQLite error that
    ///   stopped the check itself.
    package func checkIntegrity() throws(AmberError) -> [String] {
        try refusingCoreData("integrity checks")
        return try serialized { () throws(AmberError) in try Self.problems(in: connection, place: place) }
    }

    /// The problems in the store file at `path` (see ``Store/checkIntegrity(ofStoreAt:)``).
    package static func checkIntegrity(ofStoreAt path: String) throws(AmberError) -> [String] {
        guard FileManager.default.fileExists(atPath: path) else { throw .notAStore(path: path, reason: "no such file") }
        // Read-write where it may (nothing is written, and the last connection to close takes away the -wal and
        // -shm a read-only one would leave); read-only, or immutable, where it may not.
        let access = FileAccess.of(path)
        try access.requireReadable(path)
        let writable = access == .readWrite && !FileManager.default.fileExists(atPath: path + "-wal")
        return try problems(in: Connection(path: path, create: false, readOnly: !writable && access != .immutable, immutable: access == .immutable,
                                           busyTimeout: Store.Options().busyTimeout), place: path)
    }

    private static func problems(in connection: Connection, place: String) throws(AmberError) -> [String] {
        var problems: [String] = []
        do throws(AmberError) {
            let check = try connection.statement("PRAGMA integrity_check")
            defer { check.reset() }
            while try check.step() {
                let line = try check.string(0)
                if line != "ok" { problems.append(line) }
            }
            let links = try connection.statement("PRAGMA foreign_key_check")
            defer { links.reset() }
            while try links.step() {
                problems.append("table \(try links.string(0)), row \(links.int64(1)): a link to \(try links.string(2)) points at no row")
            }
            let metadata = try readMetadata(connection, path: place)
            if metadata.isEmpty {
                problems.append("no Amber metadata: this is an SQLite file, not an Amber store")
            } else if let json = metadata["model"] {
                do throws(AmberError) {
                    _ = try ModelDescription(json: Data(json.utf8))
                } catch {
                    problems.append("the stored model cannot be read: \(error)")
                }
            } else {
                problems.append("no model in the metadata table")
            }
        } catch .sqlite(let code, let message) where [SQLITE_CORRUPT, SQLITE_NOTADB].contains(code & 0xff) {
            // Damage severe enough to stop the check is its finding, not a failure to check.
            problems.append("SQLite error \(code): \(message)")
        } catch .notAStore(_, let reason) {
            problems.append(reason)
        }
        return problems
    }

    /// Copies the store, as of its last committed save, into a new file at
    /// `destination` with SQLite's online backup API. Saves go on while it
    /// runs: a file store is read through a connection of its own, as one
    /// snapshot, so only saves of this process's in-memory store wait for it.
    /// The copy is written beside `destination` and renamed into place when
    /// complete, so `destination` is either absent or a whole store; it opens
    /// like the original (same identifier, same model).
    ///
    /// - Throws: ``/AmberValues/AmberError/fileExists(path:)`` if anything is at
    ///   `destination` (or its `-wal` or `-journal`), and nothing is written;
    ///   an SQLite error if the copy fails (the partial file is removed).
    package func backup(to destination: String) throws(AmberError) {
        try refusingCoreData("backups")
        for taken in [destination, destination + "-wal", destination + "-journal"] where FileManager.default.fileExists(atPath: taken) {
            throw .fileExists(path: taken)
        }
        let partial = destination + ".partial-\(UUID().uuidString)"
        defer { unlink(partial) }
        if let path {
            try Connection.backup(of: path, to: partial, busyTimeout: options.busyTimeout)
        } else {
            try serialized { () throws(AmberError) in try Connection.copy(connection.handle, to: partial) }
        }
        try Self.move(partial, toNew: destination)
    }

    /// Gives the whole copy at `partial` the name `destination`, never over a
    /// file that appeared there meanwhile: a hard link fails if the name is
    /// taken. On file systems without hard links, a rename after checking.
    private static func move(_ partial: String, toNew destination: String) throws(AmberError) {
        if link(partial, destination) == 0 { return }
        var failure = errno
        if failure == EPERM || failure == ENOTSUP || failure == EOPNOTSUPP || failure == ENOSYS || failure == EMLINK {
            if FileManager.default.fileExists(atPath: destination) { throw .fileExists(path: destination) }
            if rename(partial, destination) == 0 { return }
            failure = errno
        }
        if failure == EEXIST { throw .fileExists(path: destination) }
        throw .sqlite(code: SQLITE_CANTOPEN, message: "cannot create \(destination): \(String(cString: strerror(failure)))")
    }

    /// Rebuilds the store's file without the space deleted objects left,
    /// then empties the write-ahead log so the file shrinks at once (or, if
    /// another connection is still reading an older state, at a later
    /// checkpoint). Objects, their IDs and every context's view of them are
    /// unchanged.
    ///
    /// - Throws: ``/AmberValues/AmberError/busy(path:timeout:)`` if another connection
    ///   was writing past the busy timeout (nothing was done); an SQLite
    ///   error otherwise.
    package func vacuum() throws(AmberError) {
        try refusingCoreData("vacuum")
        try refusingReadOnly("vacuum")
        try serialized { () throws(AmberError) in
            try connection.execute("VACUUM")
            guard path != nil else { return }
            // The vacuum is saved: readers elsewhere only delay the shrinking.
            do throws(AmberError) { try connection.checkpoint() } catch .busy {}
        }
    }

    /// Copies every save in the write-ahead log into the store's file and
    /// empties the log (SQLite's `wal_checkpoint(TRUNCATE)`), so the file
    /// alone holds the store: what a file copy or an archive needs. Saves
    /// already do this by themselves as the log grows; closing the store
    /// does it and removes the log. Nothing to do for an in-memory store.
    ///
    /// - Throws: ``/AmberValues/AmberError/busy(path:timeout:)`` if another connection
    ///   (another store on the file, another process) was still reading an
    ///   older state or writing past the busy timeout: the log was copied as
    ///   far as it could be, and retrying may finish it.
    package func checkpoint() throws(AmberError) {
        try refusingCoreData("checkpoints")
        try refusingReadOnly("checkpoints")
        guard path != nil else { return }
        try serialized { () throws(AmberError) in try connection.checkpoint() }
    }

    /// Folds the write-ahead log into the file now, without waiting for
    /// readers, as the last close does, reporting what the disk refused.
    /// Nothing to do in memory or read-only.
    package func foldLog() throws(AmberError) {
        guard let path, access.refusal == nil else { return }
        try serialized { () throws(AmberError) in
            do throws(AmberError) {
                try connection.foldLog()
            } catch {
                throw error.storageFailure(of: path, "every save is safe in the write-ahead log beside the file (\(path)-wal): keep the "
                                           + "two together (a copy of the file alone misses those saves), and open and close the store "
                                           + "again once the disk has room") ?? error
            }
        }
    }
}
