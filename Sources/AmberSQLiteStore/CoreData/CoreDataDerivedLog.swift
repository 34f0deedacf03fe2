import AmberValues
import CSQLite
import Foundation

/// The rows whose derived values Core Data's own triggers moved in a save.
/// A store Core Data made keeps derived attributes with triggers in the file
/// (`Z_DA_…`) that call `NSCoreDataDATriggerUpdatedAffectedObjectValue` and
/// `NSCoreDataDATriggerInsertUpdatedAffectedObjectValue`(table, entity,
/// key, property, value), functions Core Data registers to learn which
/// objects to refresh. Amber registers them too, for the same reason: the
/// save reports those rows to its contexts.
final class CoreDataDerivedLog {
    /// The stored table's name (`ZBOOK`) and key of each row, in call order.
    private var rows: [(table: String, key: Int64)] = []

    /// The rows logged since the last call, which empties the log.
    func take() -> [(table: String, key: Int64)] {
        defer { rows.removeAll() }
        return rows
    }

    fileprivate func add(table: String, key: Int64) { rows.append((table, key)) }

    /// The names Core Data's triggers call.
    static let functionNames = ["NSCoreDataDATriggerUpdatedAffectedObjectValue", "NSCoreDataDATriggerInsertUpdatedAffectedObjectValue"]
}

extension Connection {
    /// Registers Core Data's trigger functions, logging into `log`.
    func registerCoreDataTriggerFunctions(_ log: CoreDataDerivedLog) throws(AmberError) {
        for name in CoreDataDerivedLog.functionNames {
            let box = Unmanaged.passRetained(log).toOpaque()
            // Not direct-only: the file's own triggers call them. They only note a table name and a key.
            let rc = sqlite3_create_function_v2(handle, name, -1, SQLITE_UTF8, box, derivedLogFunction, nil, nil, releaseDerivedLog)
            // On failure SQLite has already called the destructor (releasing the box).
            guard rc == SQLITE_OK else { throw error(rc, message: "cannot register \(name): \(String(cString: sqlite3_errstr(rc)))") }
        }
    }
}

/// Releases the log SQLite held for one function.
private let releaseDerivedLog: @convention(c) (UnsafeMutableRawPointer?) -> Void = { box in
    if let box { Unmanaged<CoreDataDerivedLog>.fromOpaque(box).release() }
}

/// (table, entity, key, property, value): notes the table and key; returns NULL, as the trigger discards it.
private let derivedLogFunction: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
    context, count, arguments in
    defer { sqlite3_result_null(context) }
    guard let arguments, count >= 3, let box = sqlite3_user_data(context), let tableArgument = arguments[0], let keyArgument = arguments[2],
          let text = sqlite3_value_text(tableArgument)
    else { return }
    let table = String(decoding: UnsafeBufferPointer(start: text, count: Int(sqlite3_value_bytes(tableArgument))), as: UTF8.self)
    Unmanaged<CoreDataDerivedLog>.fromOpaque(box).takeUnretainedValue().add(table: table, key: sqlite3_value_int64(keyArgument))
}
