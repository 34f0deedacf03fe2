import AmberModel
import AmberSQL
import AmberStore
import AmberValues
import CSQLite
import Foundation

/// What a batch update's `amber_batch_row` collects as SQLite writes each
/// row: its key, entity and new version, and the problems of its computed
/// values. One per batch; SQLite calls the function on the batch's thread.
final class BatchRows {
    private(set) var keys: [Int64] = [], entities: [Int] = [], versions: [Int64] = []
    private(set) var problems: [SaveProblem] = []
    private let checks: [ValueCheck]
    private let mapping: TableMapping
    /// By `_entity` code less one, the entity index it names (``TableMapping/entityIndex(code:)``), looked up once.
    private let entityOfCode: [Int]
    private let root: Int
    /// Entity names and the store's identity, for the object a problem names.
    private let entityNames: [String]
    private let storeIdentifier: UUID

    /// At most this many problems are listed from one batch.
    static let problemLimit = 100

    init(checks: [ValueCheck], mapping: TableMapping, store: SQLiteStore) {
        (self.checks, self.mapping) = (checks, mapping)
        entityOfCode = mapping.columnOfSlot.indices.map { mapping.entityIndex(code: Int64($0) + 1) }
        root = mapping.entity.rootIndex
        entityNames = store.model.entities.map(\.name)
        storeIdentifier = store.identifier
    }

    /// One row: `arguments` are its key, entity code and version, then per
    /// check the new value and whether every attribute it reads was set.
    /// Returns the new version, or nil to stop the statement: a value that
    /// could not be read, or as many problems as a batch lists.
    fileprivate func add(_ arguments: UnsafeMutablePointer<OpaquePointer?>) -> Int64? {
        guard let key = arguments[0], let code = arguments[1], let version = arguments[2] else { return nil }
        // Per row: no reference counting on the store, no generic read for a plain number (the common case).
        let index = Int(truncatingIfNeeded: sqlite3_value_int64(code) &- 1)
        let row = (key: sqlite3_value_int64(key), entity: entityOfCode.indices.contains(index) ? entityOfCode[index] : root)
        for index in checks.indices {
            guard let value = arguments[3 + 2 * index], let operands = arguments[4 + 2 * index] else { return nil }
            if checks[index].plainlyFits(value) { continue }
            let check = checks[index]
            do {
                let problem = try check.problem(SQLiteValue(value: value, column: nil), operandsSet: sqlite3_value_int64(operands) != 0, mapping: mapping,
                                                object: ObjectID(entityName: entityNames[row.entity], store: storeIdentifier,
                                                                 key: .permanent(row.key)))
                if let problem {
                    problems.append(problem)
                    if problems.count == Self.problemLimit { return nil }
                }
            } catch {
                problems.append(SaveProblem(objectID: nil, place: check.attribute.description, rule: .store, message: "\(error)"))
                return nil
            }
        }
        let next = sqlite3_value_int64(version) &+ 1
        keys.append(row.key)
        entities.append(row.entity)
        versions.append(next)
        return next
    }
}

extension Connection {
    /// Runs `body` with `amber_batch_row` collecting into `rows`, and removes
    /// the function after (a statement that calls it outside a batch fails).
    func collecting(_ rows: BatchRows, _ body: () throws(AmberError) -> Void) throws(AmberError) {
        try register(Unmanaged.passRetained(rows).toOpaque())
        defer {
            // Should the removal fail (it cannot while no statement runs), SQLite keeps its reference, so nothing dangles.
            try? register(nil)
        }
        try body()
    }

    /// Registers `amber_batch_row` over the retained `BatchRows` at `box`, or removes it (nil).
    private func register(_ box: UnsafeMutableRawPointer?) throws(AmberError) {
        // Direct only: a trigger or view in the file cannot call it.
        let rc = sqlite3_create_function_v2(handle, "amber_batch_row", -1, SQLITE_UTF8 | SQLITE_DIRECTONLY, box,
                                            box == nil ? nil : batchRowFunction, nil, nil, box == nil ? nil : releaseBatchRows)
        // On failure SQLite has already called the destructor (releasing the box).
        guard rc == SQLITE_OK else { throw error(rc, message: "cannot register amber_batch_row: \(String(cString: sqlite3_errstr(rc)))") }
    }
}

/// Releases the batch rows SQLite held for amber_batch_row.
private let releaseBatchRows: @convention(c) (UnsafeMutableRawPointer?) -> Void = { box in
    if let box { Unmanaged<BatchRows>.fromOpaque(box).release() }
}

/// amber_batch_row(key, entity, version, value, operands set, …): see ``BatchRows``.
private let batchRowFunction: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
    context, count, arguments in
    guard let arguments, count >= 3, let box = sqlite3_user_data(context) else {
        return sqlite3_result_error(context, "amber_batch_row runs only inside a batch update", -1)
    }
    guard let version = Unmanaged<BatchRows>.fromOpaque(box).takeUnretainedValue().add(arguments) else {
        return sqlite3_result_error(context, "a batch update's value was refused", -1)
    }
    sqlite3_result_int64(context, version)
}
