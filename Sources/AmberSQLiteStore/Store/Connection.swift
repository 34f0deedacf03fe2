import AmberModel
import AmberSQL
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
    /// Prepared statements by SQL text, with the tick of their last use.
    /// Predicates with constants inlined in lists make every text new, so the
    /// cache is bounded: past `cacheCapacity` the least recently used half goes.
    private var cache: [String: (statement: Statement, used: Int)] = [:]
    private var tick = 0
    static let cacheCapacity = 256
    /// The file, for errors.
    private let path: String
    /// How long a statement waits for another connection's lock before SQLite gives up with SQLITE_BUSY.
    let busyTimeout: Duration

    /// Opens (creating if `create`) the database at `path`; ":memory:" for an
    /// in-memory database. A `readOnly` connection never writes the file; an
    /// `immutable` one (read-only too) also makes nothing beside it and takes no locks.
    init(path: String, create: Bool, readOnly: Bool = false, immutable: Bool = false, busyTimeout: Duration) throws(AmberError) {
        var handle: OpaquePointer?
        var flags = (readOnly || immutable ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0)) | SQLITE_OPEN_NOMUTEX
        var name = path
        if immutable, let uri = Self.immutableURI(path) {
            (name, flags) = (uri, flags | SQLITE_OPEN_URI)
        }
        let rc = sqlite3_open_v2(name, &handle, flags, nil)
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
        let registered = SQLFunctions.register(on: db)
        guard registered == SQLITE_OK else {
            sqlite3_close_v2(db)
            throw .sqlite(code: registered, message: "cannot register Amber's SQL functions on \(path)")
        }
    }

    /// `file:` URI of `path` with `immutable=1` (nil for a path no URI can name).
    private static func immutableURI(_ path: String) -> String? {
        let absolute = ((path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path) as NSString).standardizingPath
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#%")
        // "file://" and an absolute path: an empty authority, so no part of the path is read as a host.
        return absolute.addingPercentEncoding(withAllowedCharacters: allowed).map { "file://\($0)?immutable=1" }
    }

    /// Whether a statement that meets another connection's lock waits up to
    /// `busyTimeout` (true) or fails with SQLITE_BUSY at once.
    func waitsForLocks(_ waits: Bool) {
        lockWait = waits ? Int32(clamping: busyTimeout.milliseconds) : 0
        sqlite3_busy_timeout(db, lockWait)
    }
    /// The busy timeout in force, in milliseconds.
    private var lockWait: Int32 = 0

    deinit {
        // The hook points at this object: a close deferred by a statement still held must not reach it.
        sqlite3_wal_hook(db, nil, nil)
        // Statements finalize as they go; one a caller still holds is finalized by close_v2's deferral.
        cache.removeAll()
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
        tick &+= 1
        if let index = cache.index(forKey: sql) {
            // One hash of the text per lookup: the hot path of every save and fetch.
            cache.values[index].used = tick
            let cached = cache.values[index].statement
            cached.reset()
            return cached
        }
        var handle: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil)
        guard rc == SQLITE_OK, let handle else { throw error(rc) }
        let statement = Statement(handle, connection: self)
        if cache.count >= Self.cacheCapacity { evictLeastRecentlyUsed() }
        cache[sql] = (statement, tick)
        return statement
    }

    /// Drops the least recently used half of the cache (amortized: one sort per
    /// `cacheCapacity / 2` new statements). A dropped statement a caller still
    /// holds lives on until the caller lets it go.
    private func evictLeastRecentlyUsed() {
        let cutoff = cache.values.map(\.used).sorted()[cache.count / 2]
        cache = cache.filter { $0.value.used >= cutoff }
    }

    /// Statements in the cache now: tests check it stays bounded.
    var cachedStatementCount: Int { cache.count }

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
    /// as one snapshot while other connections (the caller's, migrating or
    /// saving) go on writing.
    static func backup(of source: String, to target: String, busyTimeout: Duration) throws(AmberError) {
        var from: OpaquePointer?
        defer { sqlite3_close_v2(from) }
        // A store on a read-only disk is read as it was opened: immutable.
        let uri = FileAccess.of(source) == .immutable ? immutableURI(source) : nil
        let opened = sqlite3_open_v2(uri ?? source, &from, SQLITE_OPEN_READONLY | (uri == nil ? 0 : SQLITE_OPEN_URI), nil)
        guard opened == SQLITE_OK, let from else {
            throw .sqlite(code: opened, message: from.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(source)")
        }
        // Another connection may hold a lock for a moment (recovering or truncating the log).
        sqlite3_busy_timeout(from, Int32(clamping: busyTimeout.milliseconds))
        do throws(AmberError) {
            try copy(from, to: target)
        } catch .sqlite(let code, _) where code & 0xff == SQLITE_BUSY {
            throw .busy(path: source, timeout: busyTimeout)
        }
    }

    /// Copies the main database of connection `source` to a new file at
    /// `target` (replacing what is there) in one backup step. The caller
    /// keeps `source` to itself meanwhile.
    static func copy(_ source: OpaquePointer, to target: String) throws(AmberError) {
        var to: OpaquePointer?
        defer { sqlite3_close_v2(to) }
        let created = sqlite3_open_v2(target, &to, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil)
        guard created == SQLITE_OK, let to else {
            throw .sqlite(code: created, message: to.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(target)")
        }
        guard let backup = sqlite3_backup_init(to, "main", source, "main") else {
            throw .sqlite(code: sqlite3_errcode(to), message: String(cString: sqlite3_errmsg(to)))
        }
        let stepped = sqlite3_backup_step(backup, -1)
        let finished = sqlite3_backup_finish(backup)
        guard stepped == SQLITE_DONE, finished == SQLITE_OK else {
            throw .sqlite(code: stepped == SQLITE_DONE ? finished : stepped, message: String(cString: sqlite3_errmsg(to)))
        }
    }

    /// Copies the write-ahead log into the database file and truncates it,
    /// waiting up to the busy timeout for other connections' readers.
    func checkpoint() throws(AmberError) {
        let rc = sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_TRUNCATE, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc) }
    }

    /// Copies what the write-ahead log holds into the database file now,
    /// as far as other connections' readers allow, without waiting for
    /// them (a passive checkpoint). Busy readers are no failure: the last
    /// connection to close folds the rest.
    func foldLog() throws(AmberError) {
        let rc = sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_PASSIVE, nil, nil)
        guard rc != SQLITE_OK, rc & 0xff != SQLITE_BUSY, rc & 0xff != SQLITE_LOCKED else { return }
        throw error(rc)
    }

    /// Checkpoints after commits, in place of SQLite's automatic checkpoint
    /// (which this replaces, with the same 1,000-page trigger): a log past
    /// `truncatingFrames` is also truncated when no other connection is
    /// reading it, so one large save does not leave a log of its size on
    /// disk until the next save (or for good, if the process then exits
    /// without closing). Never waits: with readers about, the checkpoint
    /// copies what it can and the log is trimmed at a later one.
    func checkpointsAsItGrows() {
        sqlite3_wal_hook(db, { context, db, _, frames in
            guard frames >= Connection.checkpointFrames, let context, let db else { return SQLITE_OK }
            let connection = Unmanaged<Connection>.fromOpaque(context).takeUnretainedValue()
            let mode = frames >= Connection.truncatingFrames ? SQLITE_CHECKPOINT_TRUNCATE : SQLITE_CHECKPOINT_PASSIVE
            sqlite3_busy_timeout(db, 0)
            // BUSY (readers) is expected and harmless; any other failure shows again at the next save.
            _ = sqlite3_wal_checkpoint_v2(db, "main", mode, nil, nil)
            sqlite3_busy_timeout(db, connection.lockWait)
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }
    static let checkpointFrames: Int32 = 1000
    /// 4,096 pages: 16 MiB at the default page size.
    static let truncatingFrames: Int32 = 4096

    /// The error for result code `rc`, with SQLite's message: ``/AmberValues/AmberError/busy(path:timeout:)``
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

    /// The first binding SQLite refused since the last reset (a value over its
    /// length limit): the next step throws it rather than run with NULL there.
    private var bindFailure: Int32 = SQLITE_OK
    /// Large values bound without a copy (``bind(_:keeping:)``), held until
    /// the step that reads them is over.
    private var kept: [Value] = []

    init(_ handle: OpaquePointer, connection: Connection) {
        self.handle = handle
        self.connection = connection
    }

    deinit { sqlite3_finalize(handle) }

    func reset() {
        // reset repeats the last step's error, which that step already threw.
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        bindFailure = SQLITE_OK
        kept.removeAll()
    }

    /// Resets for a run that binds every parameter again: cheaper than
    /// ``reset()``, which also clears the bindings (the write loop's case).
    func rewind() {
        sqlite3_reset(handle)
        bindFailure = SQLITE_OK
        releaseKept()
    }

    /// Steps once and returns SQLite's result code; a refused binding's code
    /// instead, without stepping (``error(_:)`` words either).
    func stepCode() -> Int32 {
        guard bindFailure == SQLITE_OK else { return bindFailure }
        let rc = sqlite3_step(handle)
        if rc != SQLITE_ROW { releaseKept() }
        return rc
    }

    /// Lets go of values bound without a copy, once no step will read them:
    /// their bindings are cleared first, so none points at freed bytes.
    private func releaseKept() {
        guard !kept.isEmpty else { return }
        sqlite3_clear_bindings(handle)
        kept.removeAll()
    }

    /// The error for a result code ``stepCode()`` returned: a refused binding
    /// is not the connection's last error, so it is worded from its code.
    func error(_ rc: Int32) -> AmberError {
        if bindFailure != SQLITE_OK {
            return connection.error(rc, message: "a value could not be bound: \(String(cString: sqlite3_errstr(rc)))")
        }
        return connection.error(rc)
    }

    /// Steps once: true for a row, false when done.
    func step() throws(AmberError) -> Bool {
        guard bindFailure == SQLITE_OK else { throw error(bindFailure) }
        switch stepCode() {
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

    private func check(_ rc: Int32) {
        if rc != SQLITE_OK, bindFailure == SQLITE_OK { bindFailure = rc }
    }
    func bindNull(_ index: Int32) { check(sqlite3_bind_null(handle, index + 1)) }
    func bind(_ index: Int32, _ value: Int64) { check(sqlite3_bind_int64(handle, index + 1, value)) }
    func bind(_ index: Int32, _ value: Double) { check(sqlite3_bind_double(handle, index + 1, value)) }
    func bind(_ index: Int32, _ value: String) {
        var copy = value
        copy.withUTF8 { utf8 in
            utf8.withMemoryRebound(to: CChar.self) { text in
                guard let base = text.baseAddress else { return check(sqlite3_bind_text(handle, index + 1, "", 0, nil)) }
                // The 64-bit length: SQLite checks it against its limit instead of Int32 trapping.
                check(sqlite3_bind_text64(handle, index + 1, base, sqlite3_uint64(text.count), sqliteTransient, UInt8(SQLITE_UTF8)))
            }
        }
    }
    /// Binds a large string or binary value without copying it (SQLite's
    /// SQLITE_STATIC): the statement holds `value`, whose heap storage the
    /// pointer is into, until the step that reads it is over. Values under
    /// ``TableMapping/largeValueBytes`` (whose bytes may be inline) are copied as usual.
    func bind(_ index: Int32, keeping value: Value) {
        // A small value's bytes may be inline (in the Value itself), so only large ones are pointed at.
        switch value {
        case .binary(let data) where data.count >= TableMapping.largeValueBytes: break
        case .string(let text) where text.utf8.count >= TableMapping.largeValueBytes: break
        default: return TableMapping.bind(value, at: index, in: self)
        }
        kept.append(value)
        switch value {
        case .binary(let data):
            data.withUnsafeBytes { bytes in
                check(sqlite3_bind_blob64(handle, index + 1, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), sqlite3_uint64(bytes.count), nil))
            }
        case .string(let text):
            // Only a string already in contiguous UTF-8 is pointed at; any other is copied as usual.
            let bound: Void? = text.utf8.withContiguousStorageIfAvailable { utf8 in
                check(sqlite3_bind_text64(handle, index + 1, UnsafeRawPointer(utf8.baseAddress)?.assumingMemoryBound(to: CChar.self),
                                          sqlite3_uint64(utf8.count), nil, UInt8(SQLITE_UTF8)))
            }
            if bound == nil {
                kept.removeLast()
                bind(index, text)
            }
        default:
            break
        }
    }
    func bind(_ index: Int32, bytes: UnsafeRawBufferPointer) {
        // A zero-length blob still needs a non-NULL pointer, or SQLite stores NULL.
        check(sqlite3_bind_blob64(handle, index + 1, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), sqlite3_uint64(bytes.count),
                                  sqliteTransient))
    }

    // MARK: Reading (index is 0-based)

    func columnType(_ index: Int32) -> Int32 { sqlite3_column_type(handle, index) }
    /// Binds column `column` of `source`'s current row at parameter `index`, as SQLite holds it (type and bytes).
    func bind(_ index: Int32, columnOf source: Statement, _ column: Int32) {
        check(sqlite3_bind_value(handle, index + 1, sqlite3_column_value(source.handle, column)))
    }
    func int64(_ index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }
    func double(_ index: Int32) -> Double { sqlite3_column_double(handle, index) }
    /// Column `index` as text ("" for NULL).
    ///
    /// - Throws: SQLite's out-of-memory error if it could not make the text
    ///   (a NULL pointer with the connection's error set, not a NULL value).
    func string(_ index: Int32) throws(AmberError) -> String {
        try withBytes(index) { String(decoding: $0, as: UTF8.self) }
    }
    /// Borrows the bytes of column `index` (empty for NULL) until the next step or reset.
    ///
    /// - Throws: SQLite's out-of-memory error if it could not produce them:
    ///   a NULL pointer is otherwise an empty or NULL value, never a lost one.
    func withBytes<R>(_ index: Int32, _ body: (UnsafeRawBufferPointer) throws(AmberError) -> R) throws(AmberError) -> R {
        try body(try value(index).bytes())
    }
    /// Column `index` of the current row as SQLite holds it, valid until the next step or reset.
    ///
    /// - Throws: SQLite's out-of-memory error if it could not produce it.
    func value(_ index: Int32) throws(AmberError) -> SQLiteValue {
        guard let value = sqlite3_column_value(handle, index) else {
            throw .sqlite(code: SQLITE_NOMEM, message: "out of memory reading column \(index + 1) of a row")
        }
        return SQLiteValue(value: value, column: index)
    }
}
