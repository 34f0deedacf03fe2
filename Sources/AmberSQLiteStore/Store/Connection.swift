import AmberModel
import AmberTransformers
import AmberValues
import CSQLite
import Foundation

/// SQLite's "copy this buffer now" destructor.
let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// One SQLite connection and its prepared-statement cache. Used by one
/// thread at a time: the store serializes its callers.
final class Connection {
    private let db: OpaquePointer
    /// The database handle, for registering functions.
    var handle: OpaquePointer { db }
    private var cache: [String: Statement] = [:]
    /// The file, for errors.
    private let path: String
    /// How long a statement waits for another connection's lock before SQLite gives up with SQLITE_BUSY.
    let busyTimeout: Duration

    /// Opens (creating if `create`) the database at `path`; ":memory:" for an in-memory database.
    init(path: String, create: Bool, busyTimeout: Duration) throws(AmberError) {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(handle)
            throw .notAStore(path: path, reason: "cannot open: \(message)")
        }
        db = handle
        self.path = path
        self.busyTimeout = busyTimeout
        sqlite3_extended_result_codes(db, 1)
        // Set before anything else: switching a new file to WAL already takes a lock another process may hold.
        waitsForLocks(true)
        SQLFunctions.register(on: db)
    }

    /// Whether a statement that meets another connection's lock waits up to
    /// `busyTimeout` (true) or fails with SQLITE_BUSY at once.
    func waitsForLocks(_ waits: Bool) {
        sqlite3_busy_timeout(db, waits ? Int32(clamping: busyTimeout.milliseconds) : 0)
    }

    deinit {
        for statement in cache.values { statement.finalize() }
        sqlite3_close_v2(db)
    }

    /// Runs one or more statements that return no rows.
    func execute(_ sql: String) throws(AmberError) {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &message)
        if rc != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_free(message)
            throw error(rc, message: text)
        }
    }

    /// A cached prepared statement for `sql`, reset and with no bindings.
    func statement(_ sql: String) throws(AmberError) -> Statement {
        statementCount &+= 1
        if let cached = cache[sql] {
            cached.reset()
            return cached
        }
        var handle: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil)
        guard rc == SQLITE_OK, let handle else { throw error(rc) }
        let statement = Statement(handle, connection: self)
        cache[sql] = statement
        return statement
    }

    /// A prepared statement for `sql` that is not cached, for statements run
    /// once (a migration's): the caller finalizes it.
    func uncachedStatement(_ sql: String) throws(AmberError) -> Statement {
        statementCount &+= 1
        var handle: OpaquePointer?
        let rc = sqlite3_prepare_v2(db, sql, -1, &handle, nil)
        guard rc == SQLITE_OK, let handle else { throw error(rc) }
        return Statement(handle, connection: self)
    }

    /// Copies the database file at `source` to a new file at `target`
    /// (replacing what is there) with SQLite's online backup API, through a
    /// connection of its own: in WAL mode it reads the last committed state
    /// while another connection (the caller's, migrating) holds the write lock.
    static func backup(of source: String, to target: String) throws(AmberError) {
        var from: OpaquePointer?, to: OpaquePointer?
        defer {
            sqlite3_close_v2(to)
            sqlite3_close_v2(from)
        }
        let opened = sqlite3_open_v2(source, &from, SQLITE_OPEN_READONLY, nil)
        guard opened == SQLITE_OK, let from else {
            throw .sqlite(code: opened, message: from.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(source)")
        }
        let created = sqlite3_open_v2(target, &to, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil)
        guard created == SQLITE_OK, let to else {
            throw .sqlite(code: created, message: to.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(target)")
        }
        guard let backup = sqlite3_backup_init(to, "main", from, "main") else {
            throw .sqlite(code: sqlite3_errcode(to), message: String(cString: sqlite3_errmsg(to)))
        }
        let stepped = sqlite3_backup_step(backup, -1)
        let finished = sqlite3_backup_finish(backup)
        guard stepped == SQLITE_DONE, finished == SQLITE_OK else {
            throw .sqlite(code: stepped == SQLITE_DONE ? finished : stepped, message: String(cString: sqlite3_errmsg(to)))
        }
    }

    /// The error for result code `rc`, with SQLite's message: ``AmberError/busy(path:timeout:)``
    /// when another connection's lock outlasted the busy timeout.
    func error(_ rc: Int32, message: String? = nil) -> AmberError {
        if rc & 0xff == SQLITE_BUSY { return .busy(path: path, timeout: busyTimeout) }
        return .sqlite(code: rc, message: message ?? String(cString: sqlite3_errmsg(db)))
    }

    /// Statements handed out so far: tests count queries with it (prefetching, faults).
    private(set) var statementCount = 0

    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(db) }
    var changes: Int { Int(sqlite3_changes(db)) }
    var isInTransaction: Bool { sqlite3_get_autocommit(db) == 0 }
}

/// A prepared statement. Columns and parameters are 0-based here (SQLite's
/// parameters are 1-based; the conversion happens in one place).
final class Statement {
    let handle: OpaquePointer
    private unowned let connection: Connection

    init(_ handle: OpaquePointer, connection: Connection) {
        self.handle = handle
        self.connection = connection
    }

    func finalize() { sqlite3_finalize(handle) }

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Steps once: true for a row, false when done.
    func step() throws(AmberError) -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let rc: throw connection.error(rc)
        }
    }

    /// Runs to completion, ignoring rows, then resets (releasing locks and bindings).
    func run() throws(AmberError) {
        defer { reset() }
        while try step() {}
    }

    // MARK: Binding (index is 0-based)

    func bindNull(_ index: Int32) { sqlite3_bind_null(handle, index + 1) }
    func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(handle, index + 1, value) }
    func bind(_ index: Int32, _ value: Double) { sqlite3_bind_double(handle, index + 1, value) }
    func bind(_ index: Int32, _ value: String) {
        var copy = value
        _ = copy.withUTF8 { utf8 in
            utf8.withMemoryRebound(to: CChar.self) { text in
                if let base = text.baseAddress {
                    sqlite3_bind_text(handle, index + 1, base, Int32(text.count), sqliteTransient)
                } else {
                    sqlite3_bind_text(handle, index + 1, "", 0, nil)
                }
            }
        }
    }
    func bind(_ index: Int32, bytes: UnsafeRawBufferPointer) {
        // A zero-length blob still needs a non-NULL pointer, or SQLite stores NULL.
        sqlite3_bind_blob(handle, index + 1, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(bytes.count), sqliteTransient)
    }

    // MARK: Reading (index is 0-based)

    func columnType(_ index: Int32) -> Int32 { sqlite3_column_type(handle, index) }
    func int64(_ index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }
    func double(_ index: Int32) -> Double { sqlite3_column_double(handle, index) }
    func string(_ index: Int32) -> String {
        guard let text = sqlite3_column_text(handle, index) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, index))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }
    func data(_ index: Int32) -> Data {
        guard let blob = sqlite3_column_blob(handle, index) else { return Data() }
        return Data(bytes: blob, count: Int(sqlite3_column_bytes(handle, index)))
    }
    /// Borrows the bytes of a blob column until the next step or reset.
    func withBytes<R, E: Error>(_ index: Int32, _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let blob = sqlite3_column_blob(handle, index)
        return try body(UnsafeRawBufferPointer(start: blob, count: Int(sqlite3_column_bytes(handle, index))))
    }
}
