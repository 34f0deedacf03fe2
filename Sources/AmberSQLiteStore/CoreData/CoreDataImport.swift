import AmberModel
import AmberSQL
import AmberStore
import AmberValues
import CSQLite
import Foundation

extension SQLiteStore {
    /// Copies every object and link of the store Core Data wrote at
    /// `source` into a new Amber store at `destination`, made with `model`
    /// (the model the source was made with): each hierarchy's rows and each
    /// join table's links, keys kept, in one transaction. Values are copied
    /// as SQLite holds them (Core Data's and Amber's encodings agree; decimals
    /// become Amber's exact text through the source's views), derived values
    /// are computed again by the new store, and the count of every entity is
    /// checked against the source's at the end.
    ///
    /// - Returns: the number of objects of each entity (its own, not its sub-entities').
    /// - Throws: ``/AmberValues/AmberError/fileExists(path:)`` when something is at
    ///   `destination` (nothing is written); what opening the source throws
    ///   (``/AmberValues/AmberError/modelMismatch(store:differences:)`` naming each
    ///   difference); ``/AmberValues/AmberError/migrationFailed(store:problems:)`` when
    ///   `progress` cancelled or the counts differ. On any failure the new store is removed.
    package static func importCoreData(from source: String, model: Model, to destination: String, options: Store.Options,
                                       progress: (@Sendable (MigrationProgress) throws -> Void)?) throws(AmberError) -> [String: Int]
    {
        for taken in [destination, destination + "-wal", destination + "-journal"] where FileManager.default.fileExists(atPath: taken) {
            throw .fileExists(path: taken)
        }
        let reader = try SQLiteStore(coreDataPath: source, model: model, options: options, readOnly: true)
        do throws(AmberError) {
            let writer = try SQLiteStore(path: destination, model: model, options: options)
            let counts = try writer.serialized { () throws(AmberError) -> [String: Int] in
                try reader.serialized { () throws(AmberError) -> [String: Int] in
                    try writer.copyRows(from: reader, progress: progress)
                }
            }
            return counts
        } catch {
            for file in [destination, destination + "-wal", destination + "-shm"] { try? FileManager.default.removeItem(atPath: file) }
            throw error
        }
    }

    /// Copies `reader`'s rows (a Core Data store, through its views) into this
    /// new store's tables in one transaction; both stores are held by the caller.
    private func copyRows(from reader: SQLiteStore, progress: (@Sendable (MigrationProgress) throws -> Void)?) throws(AmberError) -> [String: Int] {
        // Each hierarchy's rows are checked as a fetch checks them (the reader's mapping) before they are written.
        var copies: [(step: String, select: String, insert: String, width: Int32, checked: TableMapping?)] = []
        for mapping in mappings where mapping.entity.parentIndex == nil {
            let columns = mapping.selectColumns + mapping.orderColumns.map { ", \(quote($0))" }.joined()
            let width = Int32(TableMapping.bookkeepingCount) + Int32(mapping.fetchNames.count + mapping.orderColumns.count)
            copies.append(("copy \(mapping.entity.name)", "SELECT \(columns) FROM temp.\(mapping.table)",
                           "INSERT INTO main.\(mapping.table) (\(columns)) VALUES (\(Array(repeating: "?", count: Int(width)).joined(separator: ", ")))",
                           width, reader.mappings[mapping.entity.index]))
        }
        var tables: Set<String> = []
        for relationship in model.entities.flatMap(\.relationships) {
            guard case .joinTable(let table, let mine, let theirs, nil) = relationship.storage, tables.insert(table).inserted else { continue }
            let columns = "\(quote(mine)), \(quote(theirs))"
            copies.append(("copy \(relationship.description) links", "SELECT \(columns) FROM temp.\(quote(table))",
                           "INSERT INTO main.\(quote(table)) (\(columns)) VALUES (?, ?)", 2, nil))
        }
        try connection.execute("BEGIN IMMEDIATE")
        // One read transaction: every table, link and count from the same snapshot, whoever writes the source meanwhile.
        try reader.connection.execute("BEGIN")
        defer { try? reader.connection.execute("COMMIT") }
        do throws(AmberError) {
            var cell = FetchedRows.Cell(), boxes: [Value] = []
            let arena = ByteArena()
            for copy in copies {
                let total = try reader.count("SELECT count(*) FROM (\(copy.select))")
                let select = try reader.connection.uncachedStatement(copy.select)
                let insert = try connection.uncachedStatement(copy.insert)
                var copied = 0
                while try select.step() {
                    if let mapping = copy.checked {
                        _ = try mapping.fetchedEntity(code: select.int64(2), key: select.int64(0))
                        for column in mapping.fetchNames.indices {
                            try mapping.copy(column: column, at: Int32(TableMapping.bookkeepingCount) + Int32(column), from: select,
                                             into: &cell, arena: arena, boxes: &boxes)
                        }
                        arena.removeAll()
                        boxes.removeAll(keepingCapacity: true)
                    }
                    for column in 0..<copy.width { insert.bind(column, columnOf: select, column) }
                    try insert.run()
                    copied += 1
                    if copied % 10_000 == 0 { try MigrationProgress.report(MigrationProgress(step: copy.step, completed: copied, total: total), to: progress) }
                }
                try MigrationProgress.report(MigrationProgress(step: copy.step, completed: copied, total: total), to: progress)
            }
            if hasDerivedAttributes { _ = try takeDerivedLog() }
            // Links to rows the source does not have (a damaged store) are refused, not copied.
            let dangling = try connection.uncachedStatement("PRAGMA main.foreign_key_check")
            var problems: [String] = []
            while try dangling.step() {
                problems.append("table \(try dangling.string(0)), row \(dangling.int64(1)): a link to \(try dangling.string(2)) points at no row")
            }
            guard problems.isEmpty else { throw AmberError.migrationFailed(store: path ?? "", problems: problems) }
            let counts = try entityCounts(on: connection, schema: "main")
            let expected = try reader.entityCounts(on: reader.connection, schema: "temp")
            guard counts == expected else {
                throw AmberError.migrationFailed(store: path ?? "", problems: expected.keys.sorted().compactMap { name in
                    counts[name] == expected[name] ? nil : "\(name): \(expected[name] ?? 0) objects in the Core Data store, \(counts[name] ?? 0) copied"
                })
            }
            try connection.execute("COMMIT")
            return counts
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// The objects of each entity (its own rows) in the Amber-layout tables or views of `schema`.
    private func entityCounts(on connection: Connection, schema: String) throws(AmberError) -> [String: Int] {
        var counts: [String: Int] = [:]
        for mapping in mappings where mapping.entity.parentIndex == nil {
            let statement = try connection.uncachedStatement("SELECT _entity, count(*) FROM \(schema).\(mapping.table) GROUP BY _entity")
            while try statement.step() {
                let code = statement.int64(0)
                guard code >= 1, code <= Int64(model.entities.count) else { throw .invalidValue(place: "\(mapping.table) rows", expected: "an entity of the model", given: "entity number \(code)") }
                counts[model.entities[Int(code) - 1].name] = Int(statement.int64(1))
            }
        }
        for entity in model.entities where counts[entity.name] == nil { counts[entity.name] = 0 }
        return counts
    }

    /// The single integer `sql` returns.
    private func count(_ sql: String) throws(AmberError) -> Int {
        let statement = try connection.uncachedStatement(sql)
        return try statement.step() ? Int(statement.int64(0)) : 0
    }
}
