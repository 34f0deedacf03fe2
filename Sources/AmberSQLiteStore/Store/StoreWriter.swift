import AmberModel
import AmberTransformers
import AmberValues
import CSQLite
import Foundation

/// Writes a change set's rows inside the store's transaction. Each failing
/// row becomes a problem and writing goes on, so one failed save reports
/// every violated constraint; the store then rolls back.
struct StoreWriter<Row: RowSource> {
    /// SQLITE_CONSTRAINT_UNIQUE, a macro expression Swift does not import.
    private let sqliteConstraintUnique = SQLITE_CONSTRAINT | (8 << 8)

    let store: Store

    /// Inserts `objects`; returns their new primary keys in order (a failed row gets 0).
    func insert(_ objects: [Row], problems: inout [SaveProblem]) throws(AmberError) -> [Int64] {
        var keys: [Int64] = []
        keys.reserveCapacity(objects.count)
        // One statement per entity for the whole save, found by entity index (no hashing per row).
        var statements = [Statement?](repeating: nil, count: store.mappings.count)
        for object in objects {
            let entityIndex = object.entity.index
            let mapping = store.mappings[entityIndex]
            let statement: Statement
            if let cached = statements[entityIndex] {
                statement = cached
            } else {
                statement = try store.connection.statement(mapping.insertSQL)
                statements[entityIndex] = statement
            }
            statement.bind(0, Int64(entityIndex + 1))
            let values = object.slotValues
            var parameter: Int32 = 1
            for slot in mapping.slots {
                TableMapping.bind(values[slot], at: parameter, in: statement)
                parameter += 1
            }
            if try run(statement, for: object, problems: &problems) {
                keys.append(store.connection.lastInsertRowID)
            } else {
                keys.append(0)
            }
        }
        return keys
    }

    /// Updates the changed columns of `objects` whose row still has the
    /// version they were read at (every object's version is raised, even if
    /// only its unstored attributes changed, so its version stays the row's).
    func update(_ objects: [Row], problems: inout [SaveProblem]) throws(AmberError) {
        for object in objects {
            let mapping = store.mapping(for: object.entity)
            let values = object.slotValues
            let saved = object.savedSlotValues
            let columns = mapping.slots.indices.filter { column in
                let slot = mapping.slots[column]
                return saved.map { $0[slot] != values[slot] } ?? true
            }
            let statement = try store.connection.statement(mapping.updateSQL(columns: columns))
            for (parameter, column) in columns.enumerated() {
                TableMapping.bind(values[mapping.slots[column]], at: Int32(parameter), in: statement)
            }
            statement.bind(Int32(columns.count), object.objectID.primaryKey ?? 0)
            statement.bind(Int32(columns.count + 1), object.rowVersion)
            if try run(statement, for: object, problems: &problems), store.connection.changes == 0 {
                problems.append(conflict(object, "was changed or deleted in the store since it was read"))
            }
        }
    }

    /// Deletes `objects` whose row still has the version they were read at.
    func delete(_ objects: [Row], problems: inout [SaveProblem]) throws(AmberError) {
        for object in objects {
            let statement = try store.connection.statement(store.mapping(for: object.entity).deleteSQL)
            statement.bind(0, object.objectID.primaryKey ?? 0)
            statement.bind(1, object.rowVersion)
            if try run(statement, for: object, problems: &problems), store.connection.changes == 0 {
                problems.append(conflict(object, "was changed or deleted in the store since it was read"))
            }
        }
    }

    private func conflict(_ object: Row, _ message: String) -> SaveProblem {
        SaveProblem(objectID: object.objectID, place: object.entity.name, rule: .conflict, message: message)
    }

    /// Runs one row's statement. A constraint violation becomes a problem
    /// (false); any other error ends the save (throws).
    private func run(_ statement: Statement, for object: Row, problems: inout [SaveProblem]) throws(AmberError) -> Bool {
        defer { sqlite3_reset(statement.handle) }
        let rc = sqlite3_step(statement.handle)
        if rc == SQLITE_DONE { return true }
        if rc == sqliteConstraintUnique, case .sqlite(_, let message) = store.connection.error(rc) {
            problems.append(uniquenessProblem(object, sqliteMessage: message))
            return false
        }
        throw store.connection.error(rc)
    }

    /// Names the constraint from SQLite's "UNIQUE constraint failed: Book.title, Book.author"
    /// and shows the values that collided.
    private func uniquenessProblem(_ object: Row, sqliteMessage: String) -> SaveProblem {
        let columns = Set(sqliteMessage.split(separator: ":").last?.split(separator: ",").map {
            String($0.split(separator: ".").last ?? "").trimmingCharacters(in: .whitespaces)
        } ?? [])
        let entity = object.entity
        let constraint = entity.uniquenessConstraints.first { Set($0.map(\.name)) == columns }
            ?? entity.persistentAttributes.filter { columns.contains($0.name) }
        let values = constraint.map { "\($0.name) = \(object.slotValues[$0.codec?.encodedSlot ?? $0.slot])" }.joined(separator: ", ")
        return SaveProblem(objectID: object.objectID, place: TableMapping.constraintName(entity: entity, constraint),
                           rule: .uniqueness,
                           message: "uniqueness constraint violated: another \(entity.name) already has \(values)")
    }
}
