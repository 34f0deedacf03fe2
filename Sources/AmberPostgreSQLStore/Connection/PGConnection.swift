import AmberValues
import CLibPQ
import Foundation

/// One libpq connection to a PostgreSQL server. Synchronous, as the rest of
/// Amber; used from one thread at a time (the store serializes its calls).
/// Every result is checked: a statement the server refuses, or a connection
/// that is gone, is an ``/AmberValues/AmberError/server(store:state:message:)``
/// with PostgreSQL's SQLSTATE.
package final class PGConnection {
    private let handle: OpaquePointer
    /// Where the connection goes, for errors: `host:port/database`, never a password.
    package let place: String

    /// Connects with libpq's `conninfo` (keywords or a `postgresql://` URI).
    ///
    /// - Throws: ``/AmberValues/AmberError/server(store:state:message:)`` with
    ///   SQLSTATE 08001 and libpq's reason (no server there, a refused
    ///   password, an unknown database).
    package init(conninfo: String, place: String) throws(AmberError) {
        self.place = place
        guard let handle = PQconnectdb(conninfo) else {
            throw .server(store: place, state: "08001", message: "libpq could not allocate a connection")
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let reason = Self.text(PQerrorMessage(handle))
            PQfinish(handle)
            throw .server(store: place, state: "08001", message: "cannot connect: \(reason)")
        }
        self.handle = handle
        // The server's notices ("relation already exists, skipping") are not errors; libpq would print them.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit { PQfinish(handle) }

    /// Runs `sql`, one or more statements without parameters and rows.
    package func execute(_ sql: String) throws(AmberError) {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        try check(result, sql: sql)
    }

    /// Runs one statement with `bindings` for its `?` parameters (numbered
    /// for the server here) and returns its rows, in text form. The
    /// statement is prepared on first use and kept, by its text, for the
    /// connection's life: a save runs the same few statements many times.
    package func query(_ sql: String, _ bindings: [Value] = [], binaryResults: Bool = false) throws(AmberError) -> PGRows {
        var parameters = [PGParameter]()
        parameters.reserveCapacity(bindings.count)
        for value in bindings { parameters.append(try PGParameter(value, place: place)) }
        return try query(sql, parameters: parameters, binaryResults: binaryResults)
    }

    /// ``query(_:_:binaryResults:)`` with parameters already in libpq's form.
    /// With `binaryResults`, every column comes in its type's binary form
    /// (``PGRows/int64(_:_:)`` reads both forms).
    package func query(_ sql: String, parameters: [PGParameter], binaryResults: Bool = false) throws(AmberError) -> PGRows {
        let name = try prepared(sql, parameterCount: parameters.count)
        statementCount += 1
        let formats = parameters.map { $0.isBinary ? Int32(1) : 0 }, lengths = parameters.map { Int32($0.bytes?.count ?? 0) }
        let result = withPointers(to: parameters) { pointers in
            PQexecPrepared(handle, name, Int32(parameters.count), pointers, lengths, formats, binaryResults ? 1 : 0)
        }
        do throws(AmberError) {
            try check(result, sql: sql)
        } catch {
            PQclear(result)
            throw error
        }
        guard let result else { throw .server(store: place, state: "08006", message: "no result") }
        return PGRows(result)
    }

    /// A statement and its parameters, for ``pipeline(_:)``.
    package typealias Pipelined = (sql: String, parameters: [PGParameter])

    /// Statements a pipeline sends before it reads their results. Their
    /// results (a few dozen bytes each for the writes it carries) then fit
    /// the socket's buffers, so the server never waits for this side to read
    /// while this side waits for it to take more.
    static let pipelineChunk = 256

    /// Runs `statements` in libpq's pipeline mode, in order: a chunk at a
    /// time is sent and then its results read, so a save of many rows pays
    /// a round trip per chunk rather than per row.
    ///
    /// - Returns: each statement's rows, in order.
    /// - Throws: the first statement's failure, with its SQLSTATE; the ones
    ///   after it in its chunk were not run (and the transaction around them
    ///   is aborted, as after any failed statement).
    package func pipeline(_ statements: [Pipelined]) throws(AmberError) -> [PGRows] {
        if statements.count == 1 { return [try query(statements[0].sql, parameters: statements[0].parameters)] }
        var names: [String] = []
        names.reserveCapacity(statements.count)
        for statement in statements { names.append(try prepared(statement.sql, parameterCount: statement.parameters.count)) }
        guard PQenterPipelineMode(handle) == 1 else { throw lost("cannot enter pipeline mode") }
        defer { PQexitPipelineMode(handle) }
        var results: [PGRows] = []
        results.reserveCapacity(statements.count)
        var start = 0
        while start < statements.count {
            let end = min(start + Self.pipelineChunk, statements.count)
            for index in start..<end {
                let parameters = statements[index].parameters
                let formats = parameters.map { $0.isBinary ? Int32(1) : 0 }, lengths = parameters.map { Int32($0.bytes?.count ?? 0) }
                let sent = withPointers(to: parameters) { pointers in
                    PQsendQueryPrepared(handle, names[index], Int32(parameters.count), pointers, lengths, formats, 0)
                }
                guard sent == 1 else { throw lost("a statement could not be sent") }
            }
            guard PQpipelineSync(handle) == 1 else { throw lost("the pipeline could not be sent") }
            statementCount += end - start
            var failure: AmberError?
            for index in start..<end {
                guard let result = PQgetResult(handle) else { throw lost("a result went missing") }
                // Each statement's results end with NULL.
                defer { while let extra = PQgetResult(handle) { PQclear(extra) } }
                if PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
                    PQclear(result)
                    continue
                }
                do throws(AmberError) {
                    try check(result, sql: statements[index].sql)
                    results.append(PGRows(result))
                } catch {
                    PQclear(result)
                    failure = failure ?? error
                }
            }
            // The sync's own result closes the chunk.
            if let sync = PQgetResult(handle) { PQclear(sync) }
            if let failure { throw failure }
            start = end
        }
        return results
    }

    /// Runs `sql`, a `COPY … FROM STDIN` in text format, whose `count` rows
    /// `row` writes (row `i`'s fields with ``PGText/appendCopyField(_:to:place:)``,
    /// separated by tabs; the newline is added here): one round trip for
    /// the data, however many rows, and no statement for the server to plan.
    ///
    /// - Throws: what `row` throws, or ``/AmberValues/AmberError/server(store:state:message:)``
    ///   as the server reports a refused row; either way the COPY writes nothing.
    package func copy(_ sql: String, count: Int, row: (Int, inout [UInt8]) throws(AmberError) -> Void) throws(AmberError) {
        statementCount += 1
        let started = PQexec(handle, sql)
        guard PQresultStatus(started) == PGRES_COPY_IN else {
            defer { PQclear(started) }
            try check(started, sql: sql)
            throw .server(store: place, state: "XX000", message: "\(sql) did not start a COPY")
        }
        PQclear(started)
        var buffer: [UInt8] = []
        buffer.reserveCapacity(Self.copyChunk + 4096)
        var failure: AmberError?
        do throws(AmberError) {
            for index in 0..<count {
                try row(index, &buffer)
                buffer.append(UInt8(ascii: "\n"))
                if buffer.count >= Self.copyChunk {
                    guard send(buffer) else { throw lost("cannot send COPY data") }
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            if !buffer.isEmpty, !send(buffer) { throw lost("cannot send COPY data") }
        } catch {
            failure = error
        }
        // Ending with an error message makes the server discard the COPY.
        guard PQputCopyEnd(handle, failure == nil ? nil : "Amber stopped sending") == 1 else { throw failure ?? lost("cannot end a COPY") }
        let result = PQgetResult(handle)
        defer {
            PQclear(result)
            while let extra = PQgetResult(handle) { PQclear(extra) }
        }
        if let failure { throw failure }
        try check(result, sql: sql)
    }

    /// COPY data is sent in pieces about this large.
    static let copyChunk = 1 << 20

    /// Sends a piece of COPY data; false when the connection is gone.
    private func send(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { PQputCopyData(handle, $0.baseAddress, Int32($0.count)) == 1 }
        }
    }

    /// The connection broke in the middle of a pipeline: the server went away, or libpq could not go on.
    private func lost(_ what: String) -> AmberError {
        .server(store: place, state: "08006", message: "\(what): \(Self.text(PQerrorMessage(handle)))")
    }

    /// Statements run so far (for tests that count round trips).
    package private(set) var statementCount = 0
    /// Prepared statements by their text (as callers write it, with `?`).
    private var statements: [String: String] = [:]
    /// Statements prepared so far, for their names (never reused within a session).
    private var preparedCount = 0

    /// Prepared statements a connection keeps before it lets them all go:
    /// texts that differ per call (an `IN` list of each length) would
    /// otherwise grow both sides without bound.
    static let preparedLimit = 512

    /// The name of `sql`'s prepared statement, preparing it on first use.
    private func prepared(_ sql: String, parameterCount: Int) throws(AmberError) -> String {
        if let name = statements[sql] { return name }
        if statements.count >= Self.preparedLimit {
            try execute("DEALLOCATE ALL")
            statements.removeAll()
        }
        preparedCount += 1
        let name = "amber\(preparedCount)"
        let result = PQprepare(handle, name, Self.numberingParameters(sql), Int32(parameterCount), nil)
        defer { PQclear(result) }
        try check(result, sql: sql)
        statements[sql] = name
        return name
    }

    /// The payloads of the notifications (NOTIFY) that arrived since the
    /// last call, read from the socket without waiting.
    ///
    /// - Throws: ``/AmberValues/AmberError/server(store:state:message:)`` (08006) if the connection is gone.
    package func notifications() throws(AmberError) -> [String] {
        guard PQconsumeInput(handle) == 1 else {
            throw .server(store: place, state: "08006", message: "the server went away: \(Self.text(PQerrorMessage(handle)))")
        }
        var payloads: [String] = []
        while let notice = PQnotifies(handle) {
            payloads.append(notice.pointee.extra.map { String(cString: $0) } ?? "")
            PQfreemem(notice)
        }
        return payloads
    }

    /// Waits until something arrives on the connection's socket or `timeout` passes.
    package func waitForInput(timeout: Duration) {
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        guard descriptor.fd >= 0 else { return }
        _ = poll(&descriptor, 1, Int32(max(0, timeout / .milliseconds(1))))
    }

    /// Whether a transaction is open (or failed and waits for ROLLBACK).
    package var isInTransaction: Bool {
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE
    }

    /// Connects again if the connection was lost (a server restarted, a
    /// network cut): prepared statements are gone with the old session and
    /// are prepared again on use; `setup` (search path, time zone) runs again.
    ///
    /// - Throws: ``/AmberValues/AmberError/server(store:state:message:)``
    ///   with SQLSTATE 08006 when the server still cannot be reached.
    package func reconnectIfLost(setup: String) throws(AmberError) {
        guard PQstatus(handle) != CONNECTION_OK else { return }
        PQreset(handle)
        guard PQstatus(handle) == CONNECTION_OK else {
            throw .server(store: place, state: "08006", message: "the server went away and cannot be reached again: \(Self.text(PQerrorMessage(handle)))")
        }
        statements.removeAll()
        try execute(setup)
    }

    /// Fails unless `result` is a success; its SQLSTATE and message otherwise.
    private func check(_ result: OpaquePointer?, sql: String) throws(AmberError) {
        guard let result else {
            throw .server(store: place, state: "08006", message: "the server went away: \(Self.text(PQerrorMessage(handle)))")
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY: return
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let message = Self.text(PQresultErrorMessage(result))
            let lost = PQstatus(handle) != CONNECTION_OK
            throw .server(store: place, state: state ?? (lost ? "08006" : "XX000"),
                          message: lost ? "the server went away: \(message)" : message)
        }
    }

    /// libpq's message, without its trailing newline.
    private static func text(_ message: UnsafePointer<CChar>?) -> String {
        message.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
    }

    /// `sql` with its `?` parameters written `$1`, `$2`, … as PostgreSQL
    /// numbers them. Shared SQL holds `?` only as parameters; quoted text
    /// and identifiers are skipped all the same.
    package static func numberingParameters(_ sql: String) -> String {
        var result = "", number = 0, quote: Character?
        result.reserveCapacity(sql.utf8.count + 16)
        for character in sql {
            if let open = quote {
                if character == open { quote = nil }
                result.append(character)
            } else if character == "'" || character == "\"" {
                quote = character
                result.append(character)
            } else if character == "?" {
                number += 1
                result += "$\(number)"
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// Calls `body` with C pointers to each parameter's bytes (NULL for SQL NULL), valid during the call.
    private func withPointers<R>(to parameters: [PGParameter], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        let storage = parameters.map { parameter -> UnsafeMutablePointer<CChar>? in
            guard let bytes = parameter.bytes else { return nil }
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: max(bytes.count, 1))
            bytes.withUnsafeBufferPointer { source in
                source.withMemoryRebound(to: CChar.self) { copy.update(from: $0.baseAddress ?? UnsafePointer(copy), count: bytes.count) }
            }
            return copy
        }
        defer { storage.forEach { $0?.deallocate() } }
        return body(storage.map { pointer in pointer.map { UnsafePointer($0) } })
    }
}

/// A parameter as libpq sends it: text (the type's input form, NUL-ended)
/// or, for binary values, raw bytes; nil bytes for SQL NULL.
package struct PGParameter {
    package let bytes: [UInt8]?
    package let isBinary: Bool

    /// - Throws: ``/AmberValues/AmberError/invalidValue(place:expected:given:)``
    ///   naming `place` for text holding NUL, which PostgreSQL's text cannot
    ///   store, or binary data of 1 GiB or more.
    package init(_ value: Value, place: @autoclosure () -> String) throws(AmberError) {
        isBinary = value.isBinaryParameter
        if isBinary {
            bytes = try PGText.bytes(of: value, place: place)
        } else if value.isNullParameter {
            bytes = nil
        } else {
            var text: [UInt8] = []
            try PGText.append(value, to: &text, place: place)
            text.append(0)
            bytes = text
        }
    }
}

/// Values in the forms PostgreSQL reads them: the text each type's input
/// function takes, and COPY's text format. Dates are seconds since
/// 2001-01-01 UTC, as the columns hold them; a Double is its shortest text
/// that reads back as the same Double.
package enum PGText {
    /// Appends `value` (neither null nor binary) in its type's text form.
    static func append(_ value: Value, to buffer: inout [UInt8], place: () -> String) throws(AmberError) {
        switch value {
        case .null, .objectID, .array, .dictionary, .binary, .custom: return
        case .bool(let b): buffer += b ? Array("true".utf8) : Array("false".utf8)
        case .int(let i): buffer += String(i).utf8
        case .double(let d): buffer += real(d).utf8
        case .float(let f): buffer += (f.isFinite ? f.description : real(Double(f))).utf8
        case .string(let s):
            guard !s.utf8.contains(0) else {
                throw .invalidValue(place: place(), expected: "text without NUL characters (PostgreSQL's text cannot hold them)",
                                    given: "text with a NUL character")
            }
            buffer += s.utf8
        case .decimal(let d): buffer += d.description.utf8
        case .uuid(let u): buffer += u.uuidString.utf8
        case .uri(let u): buffer += u.absoluteString.utf8
        case .date(let d): buffer += real(d.timeIntervalSinceReferenceDate).utf8
        }
    }

    /// The bytes of a binary value (bytea), checked against what libpq and the server take.
    static func bytes(of value: Value, place: () -> String) throws(AmberError) -> [UInt8] {
        let bytes: [UInt8]
        switch value {
        case .binary(let data): bytes = Array(data)
        case .custom(let custom): bytes = custom.withUnsafeBytes { Array($0) }
        default: return []
        }
        // libpq's lengths are 32-bit (and the server's values 1 GiB at most).
        guard bytes.count < Int(Int32.max) else {
            throw .invalidValue(place: place(), expected: "binary data under 1 GiB (what PostgreSQL's bytea holds)", given: "\(bytes.count) bytes")
        }
        return bytes
    }

    /// Appends `value` as a field of COPY's text format: `\N` for NULL,
    /// text with backslash, tab, newline and carriage return escaped, bytes
    /// as `bytea`'s hex form (its backslash escaped).
    static func appendCopyField(_ value: Value, to buffer: inout [UInt8], place: () -> String) throws(AmberError) {
        if value.isNullParameter {
            buffer += [UInt8(ascii: "\\"), UInt8(ascii: "N")]
        } else if value.isBinaryParameter {
            let digits = Array("0123456789abcdef".utf8)
            buffer += [UInt8(ascii: "\\"), UInt8(ascii: "\\"), UInt8(ascii: "x")]
            for byte in try bytes(of: value, place: place) {
                buffer.append(digits[Int(byte >> 4)])
                buffer.append(digits[Int(byte & 0x0f)])
            }
        } else {
            let start = buffer.count
            try append(value, to: &buffer, place: place)
            // Most fields hold nothing to escape: they are left as written.
            guard buffer[start...].contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") })
            else { return }
            let written = Array(buffer[start...])
            buffer.removeSubrange(start...)
            for byte in written {
                switch byte {
                case UInt8(ascii: "\\"): buffer += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
                case UInt8(ascii: "\t"): buffer += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
                case UInt8(ascii: "\n"): buffer += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
                case UInt8(ascii: "\r"): buffer += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
                default: buffer.append(byte)
                }
            }
        }
    }

    /// A Double as the server reads it back exactly: its shortest text, or PostgreSQL's words for what is not finite.
    static func real(_ d: Double) -> String { d.isFinite ? d.description : d.isNaN ? "NaN" : d > 0 ? "Infinity" : "-Infinity" }
}

private extension Value {
    /// Values sent as raw bytes (bytea), not as text.
    var isBinaryParameter: Bool {
        switch self {
        case .binary, .custom: true
        default: false
        }
    }

    /// Values sent as SQL NULL.
    var isNullParameter: Bool {
        switch self {
        case .null, .objectID, .array, .dictionary: true
        default: false
        }
    }
}

/// Rows of one result, read in text form; the result is freed with this object.
package final class PGRows {
    private let result: OpaquePointer
    package let count: Int

    init(_ result: OpaquePointer) {
        self.result = result
        count = Int(PQntuples(result))
    }

    deinit { PQclear(result) }

    /// The value's text (empty for NULL).
    package func text(_ row: Int, _ column: Int) -> String {
        guard let value = PQgetvalue(result, Int32(row), Int32(column)) else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: value, count: Int(PQgetlength(result, Int32(row), Int32(column)))), as: UTF8.self)
    }

    /// Calls `body` with the bytes of the value's text form (empty for NULL), valid during the call.
    package func withBytes<R>(_ row: Int, _ column: Int, _ body: (UnsafeBufferPointer<UInt8>) throws(AmberError) -> R) throws(AmberError) -> R {
        guard let value = PQgetvalue(result, Int32(row), Int32(column)) else { return try body(UnsafeBufferPointer(start: nil, count: 0)) }
        let length = Int(PQgetlength(result, Int32(row), Int32(column)))
        return try value.withMemoryRebound(to: UInt8.self, capacity: length) { (pointer) throws(AmberError) -> R in
            try body(UnsafeBufferPointer(start: pointer, count: length))
        }
    }

    /// The value as a 64-bit integer (0 for NULL or a value that is not one):
    /// from its text, or from a binary `smallint`, `integer` or `bigint`.
    package func int64(_ row: Int, _ column: Int) -> Int64 {
        guard isBinary(column) else { return Int64(text(row, column)) ?? 0 }
        return (try? withBytes(row, column) { (bytes) throws(AmberError) in PGBinary.integer(bytes) ?? 0 }) ?? 0
    }

    /// Whether column `column` came in its binary form.
    package func isBinary(_ column: Int) -> Bool { PQfformat(result, Int32(column)) == 1 }

    /// Whether the value is SQL NULL.
    package func isNull(_ row: Int, _ column: Int) -> Bool { PQgetisnull(result, Int32(row), Int32(column)) != 0 }

    /// The type (its OID) of column `column`.
    package func type(_ column: Int) -> UInt32 { PQftype(result, Int32(column)) }

    /// How many rows an INSERT, UPDATE or DELETE changed.
    package var affectedRows: Int { Int(String(cString: PQcmdTuples(result))) ?? 0 }
}

/// PostgreSQL's binary forms of the types Amber's columns use, read
/// without going through text: big-endian integers and IEEE floats, raw
/// text and bytes, 16-byte UUIDs, and `numeric` as base-10000 digits.
package enum PGBinary {
    /// A big-endian `smallint`, `integer` or `bigint` (2, 4 or 8 bytes).
    static func integer(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard [2, 4, 8].contains(bytes.count) else { return nil }
        var value: UInt64 = 0
        for byte in bytes { value = value << 8 | UInt64(byte) }
        let shift = UInt64(64 - 8 * bytes.count)
        return Int64(bitPattern: value << shift) >> Int64(shift)  // sign-extended
    }

    /// A big-endian `double precision` (8 bytes) or `real` (4 bytes).
    static func real(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        switch bytes.count {
        case 8:
            var bits: UInt64 = 0
            for byte in bytes { bits = bits << 8 | UInt64(byte) }
            return Double(bitPattern: bits)
        case 4:
            var bits: UInt32 = 0
            for byte in bytes { bits = bits << 8 | UInt32(byte) }
            return Double(Float(bitPattern: bits))
        default:
            return nil
        }
    }

    /// A `numeric` as the text the server would write for it (its scale
    /// kept), or nil for NaN, an infinity or bytes that are not one.
    static func numericText(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        func int16(_ at: Int) -> Int { Int(Int16(bitPattern: UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]))) }
        guard bytes.count >= 8 else { return nil }
        let count = int16(0), weight = int16(2), sign = UInt16(bytes[4]) << 8 | UInt16(bytes[5]), scale = int16(6)
        guard count >= 0, scale >= 0, bytes.count == 8 + 2 * count, sign == 0 || sign == 0x4000 else { return nil }
        let digits = (0..<count).map { int16(8 + 2 * $0) }
        guard digits.allSatisfy({ (0..<10_000).contains($0) }) else { return nil }
        func digit(_ index: Int) -> Int { index >= 0 && index < count ? digits[index] : 0 }
        func four(_ value: Int) -> String { String(repeating: "0", count: 4 - String(value).count) + String(value) }
        var text = weight < 0 ? "0" : String(digit(0))
        if weight > 0 { for index in 1...weight { text += four(digit(index)) } }
        if scale > 0 {
            var fraction = ""
            for group in 0..<(scale + 3) / 4 { fraction += four(digit(weight + 1 + group)) }
            text += "." + fraction.prefix(scale)
        }
        return sign == 0x4000 ? "-" + text : text
    }
}
